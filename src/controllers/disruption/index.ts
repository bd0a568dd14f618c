/**
 * The disruption controller (`disruption`): the status of PodDisruptionBudgets,
 * which `pods/eviction` and `kubectl drain` consult, and the reset of stale
 * DisruptionTarget conditions.
 *
 * - controller.ts: the reconciles (Pods, their controllers' scale, status write;
 *   stale Pod conditions);
 * - status.ts: expected and desired counts, healthy Pods, disruptedPods in force,
 *   the DisruptionAllowed condition.
 */
export {
  DEFAULT_DISRUPTION_WORKERS,
  DEFAULT_STALE_POD_DISRUPTION_TIMEOUT_MS,
  DISRUPTION_CONTROLLER,
  DISRUPTION_EVENT_SOURCE,
  DisruptionController,
  type DisruptionControllerOptions,
  podsOf,
} from "./controller.ts";
export {
  allowedCondition,
  conditionsUpToDate,
  countHealthy,
  DISRUPTED_POD_TIMEOUT_MS,
  desired,
  disruptionsAllowed,
  goSelector,
  isPodReady,
  liveDisruptions,
  needsScale,
  scaled,
  setCondition,
} from "./status.ts";
