/**
 * The ReplicaSet controller (`replicaset`): creates and deletes Pods so a
 * ReplicaSet has `spec.replicas` of them, adopting matching orphans and
 * releasing Pods that stop matching, and reports replicas, fullyLabeled,
 * ready and available Pods in its status.
 *
 * - controller.ts: the reconcile (claim, create/delete in slow-start batches, status);
 * - expectations.ts: creations and deletions a ReplicaSet waits to see in its cache;
 * - pods.ts: Pod readiness and availability, Pods from templates, deletion order;
 * - status.ts: the status from the active Pods.
 */
export {
  BURST_REPLICAS,
  DEFAULT_REPLICASET_WORKERS,
  REPLICASET_CONTROLLER,
  REPLICASET_EVENT_SOURCE,
  ReplicaSetController,
  type ReplicaSetControllerOptions,
  SLOW_START_INITIAL_BATCH,
  slowStartBatch,
} from "./controller.ts";
export { EXPECTATIONS_TTL_MS, Expectations } from "./expectations.ts";
export {
  isPodActive,
  isPodReady,
  podAvailability,
  podFromTemplate,
  sortPodsForDeletion,
} from "./pods.ts";
export { replicaSetStatus, statusChanged } from "./status.ts";
