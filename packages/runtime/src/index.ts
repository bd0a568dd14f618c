/**
 * Setpoint's controller runtime: the public API.
 *
 * A client for any Kubernetes-compatible API server, shared informers, and the
 * control loop on top: a work queue with per-key backoff, controllers and their
 * builder, predicates, the manager (leader election, metrics, health probes),
 * Event recording and reconcile helpers. It speaks only HTTP to the server.
 *
 * The client covers the API as clients see it: typed verbs per object and per
 * collection (`deleteCollection`), subresources through the `subresource`
 * option of get, update and patch (`status`, `scale`, a Namespace's
 * `finalize`), every served resource from discovery (`serverResources`), and
 * `raw` requests for the paths no typed verb covers (`/version`, `/livez`,
 * `/readyz`, the discovery roots), all with the same credentials, timeouts,
 * rate limit and request counts (`client.stats`).
 *
 * ```ts
 * const mgr = new Manager({
 *   restConfig: loadKubeconfig(),
 *   leaderElection: { id: "webapp-controller", namespace: "default" },
 *   metricsAddr: ":8080",
 *   healthAddr: ":8081",
 * });
 * mgr
 *   .controller("webapp")
 *   .for(WebApp, { predicates: [generationChanged()] })
 *   .owns(ConfigMap)
 *   .withOptions({ finalizers: ["example.com/cleanup"] })
 *   .complete(async (req, ctx) => {
 *     const app = await ctx.reader.get<WebAppObject>(WebApp, req.name, req.namespace);
 *     await createOrUpdate(ctx.client, configMapFor(app), (cm) => {
 *       cm.data = { image: app.spec.image };
 *       setControllerReference(app, cm);
 *     }, { reader: ctx.reader });
 *   });
 * const stop = new AbortController();
 * process.once("SIGTERM", () => stop.abort());
 * await mgr.run(stop.signal); // drains, releases the lease, returns
 * ```
 *
 * Behaviour and limits (each a named constant in its module):
 * - Work queue: keys collapse; one worker per key at a time; a key added while
 *   in flight runs once more afterwards. Memory is one entry per distinct key
 *   (about 250 bytes plus the key), so the queue needs no depth bound.
 * - Fair ordering: keys from initial lists and resyncs wait in a low lane, live
 *   events, retries and requeues in a live lane; the two are served alternately.
 * - Failures back off per key from 5 ms doubling to 1000 s (with jitter), under
 *   an overall bucket of 10 retries/s with bursts of 100; events during a backoff
 *   neither bring the retry forward nor count as failures; success resets.
 *   `{ requeueAfter }` is not a failure (0: again at once, behind waiting keys).
 *   A `TerminalError` is not retried and becomes a Warning Event on the object
 *   with action `TerminalError`.
 * - Workers: 4 per controller by default (`maxConcurrentReconciles`); each
 *   yields to the event loop after at most 1 ms of keys back to back
 *   (`WORKER_YIELD_INTERVAL_MS`), so a key that requeues itself at once cannot
 *   starve timers and I/O. Waiting workers share one abort listener on their
 *   stop signal, however many there are.
 * - Each reconcile's signal aborts after 60 s, on a lost lease, or when the
 *   shutdown grace (30 s) runs out; its client then refuses writes. One timer
 *   per controller keeps the deadlines; the context's signal, logger, client
 *   and reconcile id are made on first use.
 * - Read-your-own-writes: a key's next reconcile waits (up to 5 s) until the
 *   cache has seen the objects its previous reconcile wrote.
 * - Scoped reads: in a reconcile, `ctx.reader` reads a kind the controller
 *   watches (`for`, `owns`, `watches`) from that watch's informer unless the
 *   read names another scope, so a scoped watch never leads to a second,
 *   unscoped list and watch of the kind.
 * - Leader election: Lease 15 s, renew deadline 10 s, retry 2 s; the standby
 *   keeps its caches and queues warm; release on shutdown. The finalizers the
 *   controllers declare are published on the Lease (`setpoint.dev/finalizers`),
 *   and so are per-key reconcile counts over the last minute, each
 *   controller's 10 busiest keys (`setpoint.dev/reconcile-stats`; counted in
 *   at most 768 counters per controller), for hot-loop detection.
 * - `/healthz` and `/readyz` fail when an informer has had no watch for 60 s;
 *   `/readyz` until the caches have synced. `/metrics` uses controller-runtime's
 *   metric names.
 * - Runnables (`mgr.add`): components that run leader or not (a discovery loop,
 *   side informers of the shared cache), started once the caches have synced,
 *   each a `/readyz` check, stopped on shutdown before the informers (each gets
 *   up to 5 s to return). `mgr.cache.removeInformer` stops one shared informer
 *   (e.g. when its kind stops being served); `transform` in an informer's scope
 *   reduces what it stores.
 */

export {
  type CachedInformerHealth,
  type CacheListOptions,
  InformerCache,
  type InformerCacheOptions,
  type InformerScope,
} from "./cache/cache.ts";
export {
  compareResourceVersions,
  type EventHandler,
  Informer,
  type InformerHealth,
  type InformerOptions,
} from "./cache/informer.ts";
export { CONTROLLER_UID_INDEX, NAMESPACE_INDEX, OWNER_UID_INDEX } from "./cache/object-store.ts";
export type { RuntimeLogger } from "./cache/reflector.ts";
// Talking to the server.
export {
  type ApplyOptions,
  type CallOptions,
  Client,
  type ClientStats,
  type DeleteCollectionOptions,
  type DeleteOptions,
  type GetOptions,
  type ListOptions,
  type PatchOptions,
  type PatchType,
  type RawMethod,
  type RawOptions,
  type RawResponse,
  type Reader,
  typeOf,
  type UpdateOptions,
  type WatchOptions,
  type WriteOptions,
} from "./client/client.ts";
export {
  groupResource,
  parseGroupVersion,
  preferredResources,
  type ResourceInfo,
  type ServedResource,
  type ServerResources,
  type TypeRef,
} from "./client/discovery.ts";
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
} from "./client/errors.ts";
export {
  inClusterConfig,
  KubeconfigError,
  type LoadKubeconfigOptions,
  loadKubeconfig,
  type RestConfig,
} from "./client/kubeconfig.ts";
export {
  WatchDecodeError,
  type WatchEvent,
  WatchIdleError,
  type WatchStream,
} from "./client/watch-stream.ts";
export { type Clock, realClock, type TimerHandle } from "./clock.ts";
export {
  type BuilderOptions,
  type BuilderWatchOptions,
  type ControllerBuilder,
  type Kind,
  kind,
  type MapFn,
  type WatchSpec,
} from "./controller/builder.ts";
export {
  Controller,
  type ControllerOptions,
  DEFAULT_MAX_CONCURRENT_RECONCILES,
  DEFAULT_READ_YOUR_WRITES_TIMEOUT_MS,
  DEFAULT_RECONCILE_TIMEOUT_MS,
  ReconcileStoppedError,
  ReconcileTimeoutError,
  WORKER_YIELD_INTERVAL_MS,
} from "./controller/controller.ts";
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
} from "./controller/predicates.ts";
export {
  type ControllerRateLimiterOptions,
  defaultControllerRateLimiter,
  type ExponentialBackoffOptions,
  ExponentialBackoffRateLimiter,
  MaxOfRateLimiter,
  type RateLimiter,
  type TokenBucketOptions,
  TokenBucketRateLimiter,
} from "./controller/rate-limiter.ts";
export {
  type ControllerReconcileStats,
  type KeyReconciles,
  RECONCILE_STATS_TOP_KEYS,
  RECONCILE_STATS_WINDOW_MS,
  type ReconcileCounter,
  type ReconcileStats,
} from "./controller/reconcile-stats.ts";
export {
  type CacheReader,
  isTerminalError,
  type ReconcileContext,
  type Reconciler,
  type Request,
  type Result,
  requestFor,
  TERMINAL_ERROR_ACTION,
  TerminalError,
} from "./controller/reconciler.ts";
export {
  type AddOptions,
  type Lane,
  type QueueMetricsSink,
  WorkQueue,
  type WorkQueueOptions,
} from "./controller/work-queue.ts";
export type { ReconcileClient } from "./controller/writer.ts";
export { mapLimit } from "./helpers/concurrency.ts";
// Reconcile helpers.
export {
  type ConditionInput,
  findCondition,
  isConditionTrue,
  removeCondition,
  setCondition,
  setErrorCondition,
  setStatusCondition,
  type WithConditions,
} from "./helpers/conditions.ts";
export {
  type CreateOrUpdateOptions,
  createOrUpdate,
  type MutateFn,
  type OperationResult,
} from "./helpers/create-or-update.ts";
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
} from "./helpers/owner-references.ts";
export { updateStatusIfChanged, type WithStatus } from "./helpers/status.ts";
export { createLogger, type Logger, type LoggerOptions, silentLogger } from "./log.ts";
export {
  type EventOptions,
  type EventRecorder,
  type EventSource,
  type EventType,
  lastOccurrence,
  newEvent,
  Recorder,
  type RecorderOptions,
} from "./manager/events.ts";
export { type CheckResult, type HealthCheck, HealthChecks } from "./manager/health.ts";
export {
  LEASE_TYPE,
  LeaderElector,
  type LeaderElectorOptions,
  type Lease,
  type LeaseSpec,
} from "./manager/leader-election.ts";
export {
  DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT_MS,
  FINALIZERS_ANNOTATION,
  type LeaderElectionOptions,
  Manager,
  type ManagerOptions,
  RECONCILE_STATS_ANNOTATION,
  RUNNABLE_STOP_TIMEOUT_MS,
  type Runnable,
} from "./manager/manager.ts";
export { RuntimeMetrics, type RuntimeMetricsOptions } from "./metrics/metrics.ts";
