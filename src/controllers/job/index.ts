/**
 * The Job controller (`job`): runs a batch/v1 Job's Pods to completion, as
 * Kubernetes 1.32's job controller does.
 *
 * - controller.ts: the sync (claim, failure and deadline checks, conditions,
 *   suspend) and the loop freeing Pods of finished or vanished Jobs;
 * - manage.ts: creating and deleting Pods towards parallelism and completions;
 * - tracking.ts: counting finished Pods exactly once (tracking finalizer and
 *   uncountedTerminatedPods) and the terminal conditions;
 * - pods.ts: the Pods a Job makes and how they count;
 * - indexes.ts: completion indexes (Indexed Jobs);
 * - backoff.ts: the Pod failure backoff;
 * - status.ts: conditions, reasons and the written status;
 * - sync-state.ts: what one sync works on.
 */
export {
  BackoffStore,
  DEFAULT_POD_FAILURE_BACKOFF_MS,
  MAX_POD_FAILURE_BACKOFF_MS,
  podFinishedAt,
  remainingBackoffMs,
} from "./backoff.ts";
export {
  DEFAULT_JOB_WORKERS,
  JOB_CONTROLLER,
  JOB_CONTROLLER_MANAGED_BY,
  JOB_EVENT_SOURCE,
  JobController,
  type JobControllerOptions,
  managedElsewhere,
} from "./controller.ts";
export {
  COMPLETION_INDEX_ANNOTATION,
  COMPLETION_INDEX_ENV,
  firstPendingIndexes,
  formatIndexes,
  parseIndexes,
  withIndexes,
} from "./indexes.ts";
export { MAX_POD_CREATE_DELETE_PER_SYNC } from "./manage.ts";
export { JOB_TRACKING_FINALIZER, jobPod, podGenerateName } from "./pods.ts";
export { isJobFinished, jobFinishedAt } from "./status.ts";
export { MAX_UNCOUNTED_PODS } from "./tracking.ts";
