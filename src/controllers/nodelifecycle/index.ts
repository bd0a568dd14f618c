/**
 * Node lifecycle (`node-lifecycle`): marks Nodes that stopped renewing their
 * Lease Unknown, taints Nodes by their conditions, and evicts Pods from
 * Nodes with NoExecute taints they do not tolerate (long enough).
 *
 * - controller.ts: the Node and Pod reconciles;
 * - taints.ts: taints a Node's conditions call for, toleration matching and
 *   when a Pod must leave.
 */
export {
  DEFAULT_NODE_LIFECYCLE_WORKERS,
  DEFAULT_NODE_MONITOR_GRACE_PERIOD_MS,
  DEFAULT_TAINT_EVICTION_WORKERS,
  NODE_CONTROLLER_EVENT_SOURCE,
  NODE_LEASE_NAMESPACE,
  NODE_LIFECYCLE_CONTROLLER,
  NodeLifecycleController,
  type NodeLifecycleOptions,
  TAINT_EVICTION_EVENT_SOURCE,
  unknownConditions,
} from "./controller.ts";
export {
  desiredTaints,
  evictionTime,
  reconcileTaints,
  TAINT_NOT_READY,
  TAINT_UNREACHABLE,
  TAINT_UNSCHEDULABLE,
  tolerates,
} from "./taints.ts";
