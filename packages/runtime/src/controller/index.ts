/**
 * The control loop: controllers and their builder, the work queue, rate
 * limiters, predicates, and the reconciler contract (a key in; done, "again
 * after T", or an error out). Behaviour and limits (each a named constant in
 * its module):
 *
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
 */

export type {
  BuilderOptions,
  BuilderWatchOptions,
  ControllerBuilder,
  ControllerDeclaration,
  MapFn,
  WatchSpec,
} from "./builder.ts";
export {
  Controller,
  type ControllerOptions,
  DEFAULT_MAX_CONCURRENT_RECONCILES,
  DEFAULT_READ_YOUR_WRITES_TIMEOUT_MS,
  DEFAULT_RECONCILE_TIMEOUT_MS,
  ReconcileStoppedError,
  ReconcileTimeoutError,
  WORKER_YIELD_INTERVAL_MS,
} from "./controller.ts";
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
  type ControllerRateLimiterOptions,
  defaultControllerRateLimiter,
  type ExponentialBackoffOptions,
  ExponentialBackoffRateLimiter,
  MaxOfRateLimiter,
  type RateLimiter,
  type TokenBucketOptions,
  TokenBucketRateLimiter,
} from "./rate-limiter.ts";
export {
  type ControllerReconcileStats,
  type KeyReconciles,
  RECONCILE_STATS_TOP_KEYS,
  RECONCILE_STATS_WINDOW_MS,
  type ReconcileCounter,
  type ReconcileStats,
} from "./reconcile-stats.ts";
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
} from "./reconciler.ts";
export {
  type AddOptions,
  type Lane,
  type QueueMetricsSink,
  WorkQueue,
  type WorkQueueOptions,
} from "./work-queue.ts";
export type { ReconcileClient } from "./writer.ts";
