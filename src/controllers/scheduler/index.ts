/**
 * The scheduler (`scheduler`): binds pending Pods to nodes that fit, as
 * kube-scheduler's default profile does.
 *
 * - controller.ts: the queue of Pods to place, binding, FailedScheduling
 *   Events and the PodScheduled condition, backoff;
 * - filters.ts: whether a Pod fits a node, with Kubernetes' reasons;
 * - score.ts: ranking the nodes that fit;
 * - node-infos.ts: what is placed on each node (bound and assumed Pods);
 * - resources.ts: a Pod's effective requests and a Node's allocatable;
 * - fit-error.ts: the "0/N nodes are available: ..." message.
 */
export {
  DEFAULT_SCHEDULER_NAME,
  DEFAULT_SCHEDULER_WORKERS,
  INITIAL_BACKOFF_MS,
  MAX_BACKOFF_MS,
  needsScheduling,
  SCHEDULER_CONTROLLER,
  Scheduler,
  type SchedulerOptions,
  UNSCHEDULABLE_RETRY_MS,
} from "./controller.ts";
export { checkNode, effectiveTaints, matchesNodeAffinity } from "./filters.ts";
export { fitErrorMessage, NO_NODES_AVAILABLE } from "./fit-error.ts";
export { podRequests } from "./resources.ts";
