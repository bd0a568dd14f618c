/**
 * Setpoint's controller runtime: the public API.
 *
 * A client for any Kubernetes-compatible API server, shared informers, and the
 * control loop on top: work queue with per-key backoff, controllers and their
 * builder, predicates, the manager (leader election, metrics, health), Event
 * recording and reconcile helpers.
 */

// The control loop.
export {
  type BuilderOptions,
  ControllerBuilder,
  type Kind,
  kind,
  type MapFn,
  type WatchOptions as WatchSpecOptions,
} from "./builder.ts";
// Local copies.
export {
  type CachedInformerHealth,
  CacheNotStartedError,
  InformerCache,
  type InformerCacheOptions,
  type InformerScope,
} from "./cache.ts";
// Talking to the server.
export {
  type ApplyOptions,
  type CallOptions,
  Client,
  type ClientStats,
  type DeleteOptions,
  type GetOptions,
  type ListOptions,
  type PatchOptions,
  type PatchType,
  type Reader,
  typeOf,
  type WatchOptions,
  type WriteOptions,
} from "./client.ts";
export { type Clock, realClock } from "./clock.ts";
export {
  Controller,
  type ControllerOptions,
  DEFAULT_MAX_CONCURRENT_RECONCILES,
  DEFAULT_READ_YOUR_WRITES_TIMEOUT_MS,
  DEFAULT_RECONCILE_TIMEOUT_MS,
  ReconcileStoppedError,
  ReconcileTimeoutError,
} from "./controller.ts";
export type { ResourceInfo, TypeRef } from "./discovery.ts";
export {
  ApiError,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isGone,
  isInvalid,
  isNoKindMatch,
  isNotFound,
  isServerError,
  isTooManyRequests,
  isTransient,
  NoKindMatchError,
  type RetryOptions,
  retryOnConflict,
} from "./errors.ts";
export { type EventRecorder, type EventType, Recorder, type RecorderOptions } from "./events.ts";
export { type CheckResult, type HealthCheck, HealthChecks } from "./health.ts";
// Reconcile helpers.
export {
  type ConditionInput,
  findCondition,
  isConditionTrue,
  removeCondition,
  setCondition,
  setErrorCondition,
  setStatusCondition,
} from "./helpers/conditions.ts";
export {
  type CreateOrUpdateOptions,
  createOrUpdate,
  type MutateFn,
  type OperationResult,
} from "./helpers/createorupdate.ts";
export {
  addFinalizer,
  hasFinalizer,
  isBeingDeleted,
  removeFinalizer,
} from "./helpers/finalizers.ts";
export {
  AlreadyOwnedError,
  getControllerOf,
  isControlledBy,
  removeOwnerReference,
  setControllerReference,
  setOwnerReference,
} from "./helpers/ownerrefs.ts";
export { updateStatusIfChanged } from "./helpers/status.ts";
export {
  type EventHandler,
  Informer,
  type InformerHealth,
  type InformerOptions,
} from "./informer.ts";
export {
  inClusterConfig,
  KubeconfigError,
  type LoadKubeconfigOptions,
  loadKubeconfig,
  type RestConfig,
} from "./kubeconfig.ts";
export {
  LeaderElector,
  type LeaderElectorOptions,
  type Lease,
  type LeaseSpec,
} from "./leaderelection.ts";
export { createLogger, type Logger, silentLogger } from "./log.ts";
export {
  DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT_MS,
  FINALIZERS_ANNOTATION,
  type LeaderElectionOptions,
  Manager,
  type ManagerOptions,
} from "./manager.ts";
export { RuntimeMetrics } from "./metrics.ts";
export { CONTROLLER_UID_INDEX, NAMESPACE_INDEX, OWNER_UID_INDEX } from "./objectstore.ts";
export {
  and,
  annotationChanged,
  generationChanged,
  labelChanged,
  matching,
  not,
  or,
  type Predicate,
  resourceVersionChanged,
} from "./predicates.ts";
export {
  defaultControllerRateLimiter,
  ExponentialBackoffRateLimiter,
  MaxOfRateLimiter,
  type RateLimiter,
  TokenBucketRateLimiter,
} from "./ratelimiter.ts";
export {
  type CacheReader,
  isTerminalError,
  type ReconcileContext,
  type Reconciler,
  type Request,
  type Result,
  requestFor,
  TerminalError,
} from "./reconciler.ts";
export { type AddOptions, type Lane, WorkQueue, type WorkQueueOptions } from "./workqueue.ts";
export { ReconcileClient } from "./writer.ts";
