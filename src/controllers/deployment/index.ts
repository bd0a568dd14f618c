/**
 * The Deployment controller (`deployment`): rolls Deployments out through
 * ReplicaSets (RollingUpdate within maxSurge and maxUnavailable, or
 * Recreate), keeps revisions and history, scales proportionally, and reports
 * the Available and Progressing conditions as Kubernetes does.
 *
 * - controller.ts: the reconcile (claim ReplicaSets, pause, scale or roll out);
 * - sync.ts: the new ReplicaSet and revisions, scaling, cleanup, status;
 * - rolling.ts, recreate.ts: the two strategies;
 * - util.ts: annotations, hashes, strategy arithmetic, conditions.
 */
export {
  DEFAULT_DEPLOYMENT_WORKERS,
  DEPLOYMENT_CONTROLLER,
  DEPLOYMENT_EVENT_SOURCE,
  DeploymentController,
  type DeploymentControllerOptions,
} from "./controller.ts";
export { newReplicaSetReplicas, Rollout, sameStatus } from "./sync.ts";
export {
  equalIgnoreHash,
  fenceposts,
  POD_TEMPLATE_HASH_LABEL,
  podTemplateHash,
  REVISION_ANNOTATION,
  REVISION_HISTORY_ANNOTATION,
} from "./util.ts";
