/**
 * A controller: a work queue of keys and a bounded pool of workers that run the
 * reconciler on them. Event handlers (set up by the builder) only enqueue keys.
 *
 * Per key, a worker:
 * 1. waits (at most `readYourWritesTimeoutMs`) until the cache has seen every
 *    object the previous reconcile of this key wrote (read-your-own-writes);
 * 2. runs the reconciler with a context (cache reader, tracking client, logger,
 *    event recorder, AbortSignal that fires on `reconcileTimeoutMs`, on stop);
 * 3. on success forgets the key's failures, and schedules `requeueAfter` if asked
 *    (0: at once, behind the keys already waiting); on a TerminalError forgets it
 *    and records a Warning Event on the object (action `TerminalError`); on any
 *    other error re-adds it with per-key backoff.
 *
 * Every reconcile is counted per key over a sliding minute (`reconcileCounts`),
 * which the manager publishes for hot-loop detection.
 *
 * Cost per reconcile: what a reconcile that only reads the cache does not use
 * is not made (see ReconcileRun: its signal, logger, id and client are made on
 * first use); one timer per controller keeps every run's deadline; workers
 * yield to the event loop once they have run keys back to back for
 * `WORKER_YIELD_INTERVAL_MS`, not after every key.
 *
 * `start()` runs the workers; `stop({ graceMs })` stops taking keys, lets the
 * reconciles in flight finish for up to `graceMs`, then aborts their signals.
 * The queue survives a stop (a standby keeps collecting keys), so a later
 * `start()` resumes; `shutDown()` ends it for good.
 */
import type { KubeObject } from "@setpoint/api";
import type { CacheListOptions, InformerCache, InformerScope } from "../cache/cache.ts";
import type { Client, TypeRef } from "../client/client.ts";
import type { Kind } from "../client/kind.ts";
import { type Clock, realClock, type TimerHandle } from "../clock.ts";
import { controllerLogger, type Logger, requestKey, silentLogger } from "../log.ts";
import { type EventRecorder, Recorder } from "../manager/events.ts";
import type { ControllerMetrics, RuntimeMetrics } from "../metrics/metrics.ts";
import type { RateLimiter } from "./rate-limiter.ts";
import { ReconcileRun, type RunDeps } from "./reconcile-run.ts";
import { ReconcileCounter } from "./reconcile-stats.ts";
import {
  type CacheReader,
  isTerminalError,
  parseKey,
  type Reconciler,
  type Request,
  TERMINAL_ERROR_ACTION,
} from "./reconciler.ts";
import { type Lane, WorkQueue } from "./work-queue.ts";
import type { WrittenObject } from "./writer.ts";

/**
 * Default workers per controller. Above 1 so one slow reconcile (a remote API,
 * a long write) does not hold up every other key; small so a cold start with
 * thousands of keys does not hammer the API server (the client's own rate limit
 * applies on top).
 */
export const DEFAULT_MAX_CONCURRENT_RECONCILES = 4;
/** Default per-reconcile deadline: the context's signal aborts after this long. */
export const DEFAULT_RECONCILE_TIMEOUT_MS = 60_000;
/** Longest a reconcile waits for the cache to catch up with its key's own earlier writes. */
export const DEFAULT_READ_YOUR_WRITES_TIMEOUT_MS = 5_000;
/**
 * After a stop aborts the reconciles still in flight, how long to wait for them to
 * return before giving up on them (a reconcile that ignores its signal keeps its
 * key marked in flight, so it still never runs twice at once).
 */
export const ABORTED_RECONCILE_WAIT_MS = 5_000;
/**
 * Longest a worker runs keys back to back before it yields to the event loop.
 * A reconcile that needs no I/O and requeues itself at once would otherwise
 * loop on promises alone and starve timers, sockets and every other part of
 * the process; yielding after every key instead cost about 2 µs per reconcile.
 * So a busy process's timers and I/O wait at most this long (plus one
 * reconcile) for a turn.
 */
export const WORKER_YIELD_INTERVAL_MS = 1;

/** Thrown (as the signal's reason) into reconciles that outlive their deadline. */
export class ReconcileTimeoutError extends Error {
  override name = "ReconcileTimeoutError";
}

/** Thrown (as the signal's reason) into reconciles cut short by a stop. */
export class ReconcileStoppedError extends Error {
  override name = "ReconcileStoppedError";
}

export interface ControllerOptions {
  name: string;
  reconciler: Reconciler;
  client: Client;
  cache: InformerCache;
  /** The kind the controller reconciles: re-enqueued on `enqueueAll`, target of terminal-error Events. */
  forType?: TypeRef | undefined;
  forScope?: InformerScope | undefined;
  /**
   * The other kinds the controller watches, with their scopes. A reconcile's
   * reads of a watched kind that name no scope read the watch's informer (the
   * `for` kind's scope first, then the first watch of that kind).
   */
  watched?: readonly { type: TypeRef; scope?: InformerScope | undefined }[] | undefined;
  maxConcurrentReconciles?: number | undefined;
  reconcileTimeoutMs?: number | undefined;
  readYourWritesTimeoutMs?: number | undefined;
  rateLimiter?: RateLimiter | undefined;
  clock?: Clock | undefined;
  logger?: Logger | undefined;
  metrics?: RuntimeMetrics | undefined;
  /** Records Events; by default a Recorder writing as the controller's name. */
  recorder?: EventRecorder | undefined;
  /** `reportingInstance` of the default recorder (the manager's identity). */
  instance?: string | undefined;
  /** Finalizers this controller handles (published by the manager on its lease). */
  finalizers?: string[] | undefined;
}

function typeKey(t: TypeRef): string {
  return `${t.apiVersion}/${t.kind}`;
}

export class Controller {
  readonly name: string;
  readonly queue: WorkQueue;
  readonly finalizers: readonly string[];
  readonly recorder: EventRecorder;
  readonly maxConcurrentReconciles: number;
  /** Reconciles per key over the last minute (bounded; see reconcilestats.ts). */
  readonly reconcileCounts: ReconcileCounter;
  private readonly opts: ControllerOptions;
  private readonly log: Logger;
  private readonly metrics?: ControllerMetrics | undefined;
  private readonly clock: Clock;
  /** Kinds with informers this controller uses: only these are waited on for read-your-own-writes. */
  private readonly cachedTypes = new Map<string, InformerScope | undefined>();
  /** The scope each watched kind is watched in: the default scope of the reconcile reader's reads. */
  private readonly watchScopes = new Map<string, InformerScope | undefined>();
  /** The reader every reconcile gets (it holds no per-reconcile state). */
  private readonly cacheReader: CacheReader;
  private readonly ownWrites = new Map<string, WrittenObject[]>();
  private readonly inFlight = new Set<ReconcileRun>();
  /** What every run of this controller shares. */
  private readonly runDeps: RunDeps;
  private readonly timeoutMs: number;
  /** The one timer that aborts runs past their deadline, and when it fires. */
  private deadlineTimer: TimerHandle | undefined;
  private deadlineAt = Number.POSITIVE_INFINITY;
  private workersAbort: AbortController | undefined;
  private workers: Promise<void>[] = [];
  private stopping: Promise<void> | undefined;

  constructor(opts: ControllerOptions) {
    this.opts = opts;
    this.name = opts.name;
    this.clock = opts.clock ?? realClock;
    this.log = controllerLogger(opts.logger ?? silentLogger(), opts.name);
    this.maxConcurrentReconciles = Math.max(
      1,
      opts.maxConcurrentReconciles ?? DEFAULT_MAX_CONCURRENT_RECONCILES,
    );
    this.finalizers = [...(opts.finalizers ?? [])];
    this.reconcileCounts = new ReconcileCounter(this.clock);
    this.queue = new WorkQueue({
      rateLimiter: opts.rateLimiter,
      clock: this.clock,
      metrics: opts.metrics?.queueSink(opts.name),
    });
    opts.metrics?.trackQueue(opts.name, this.queue);
    this.metrics = opts.metrics?.controller(opts.name);
    this.metrics?.maxConcurrent(this.maxConcurrentReconciles);
    this.recorder =
      opts.recorder ??
      new Recorder(opts.client, {
        component: opts.name,
        instance: opts.instance,
        logger: this.log,
      });
    const watched = opts.forType ? [{ type: opts.forType, scope: opts.forScope }] : [];
    for (const w of [...watched, ...(opts.watched ?? [])]) {
      const k = typeKey(w.type);
      if (!this.watchScopes.has(k)) this.watchScopes.set(k, w.scope);
      this.usesCachedType(w.type, w.scope);
    }
    this.cacheReader = this.newReader();
    this.timeoutMs = opts.reconcileTimeoutMs ?? DEFAULT_RECONCILE_TIMEOUT_MS;
    this.runDeps = {
      controller: this.name,
      reader: this.cacheReader,
      recorder: this.recorder,
      client: opts.client,
      log: this.log,
    };
  }

  /** Notes that this controller reads `type` from the cache (so its writes of it are waited on). */
  private usesCachedType(type: TypeRef, scope?: InformerScope): void {
    if (!this.cachedTypes.has(typeKey(type))) this.cachedTypes.set(typeKey(type), scope);
  }

  /** Enqueues a request (collapsing with one already waiting). */
  enqueue(req: Request, lane: Lane = "live"): void {
    if (!req.name) return;
    this.queue.add(requestKey(req), { lane });
  }

  /** Enqueues a request to run after `delayMs`. */
  enqueueAfter(req: Request, delayMs: number): void {
    if (!req.name) return;
    this.queue.addAfter(requestKey(req), delayMs);
  }

  /** Enqueues every object of the `for` kind held by the cache (low-priority lane). */
  enqueueAll(): void {
    const t = this.opts.forType;
    if (!t) return;
    const informer = this.opts.cache.informerFor(t, this.opts.forScope);
    // The informer's keys are request keys ("namespace/name", or "name").
    for (const key of informer.keys()) this.queue.add(key, { lane: "initial" });
  }

  /** Whether workers are running. */
  get running(): boolean {
    return this.workersAbort !== undefined && !this.workersAbort.signal.aborted;
  }

  /** Starts the workers (no-op while running). */
  start(): void {
    if (this.running || this.queue.shuttingDown) return;
    const ac = new AbortController();
    this.workersAbort = ac;
    this.stopping = undefined;
    this.log.info({ workers: this.maxConcurrentReconciles }, "starting workers");
    this.workers = Array.from({ length: this.maxConcurrentReconciles }, () =>
      this.worker(ac.signal),
    );
  }

  /**
   * Stops taking keys; lets reconciles in flight finish for up to `graceMs`, then
   * aborts their signals and waits (bounded) for them to return.
   */
  stop(opts: { graceMs?: number | undefined; reason?: string | undefined } = {}): Promise<void> {
    if (!this.workersAbort) return Promise.resolve();
    const reason = opts.reason ?? "controller stopped";
    if (this.stopping) {
      // Already draining: a stop without grace (a lost lease) cuts the drain short.
      if ((opts.graceMs ?? 0) === 0) this.abortInFlight(reason);
      return this.stopping;
    }
    const ac = this.workersAbort;
    const workers = this.workers;
    this.stopping = (async () => {
      ac.abort();
      const inflight = [...this.inFlight];
      const all = Promise.all(inflight.map((run) => run.whenDone()));
      if (inflight.length > 0) {
        this.log.info(
          { inFlight: inflight.length, graceMs: opts.graceMs ?? 0 },
          "draining reconciles",
        );
        if (!(await settlesWithin(all, opts.graceMs ?? 0))) {
          this.abortInFlight(reason);
          if (!(await settlesWithin(all, ABORTED_RECONCILE_WAIT_MS))) {
            this.log.warn(
              { stuck: this.inFlight.size },
              "reconciles ignore their abort signal; leaving them",
            );
          }
        }
      }
      await settlesWithin(Promise.all(workers), ABORTED_RECONCILE_WAIT_MS);
      // A start() during the drain (leadership regained) has its own workers.
      if (this.workers === workers) this.workers = [];
      if (this.inFlight.size === 0) this.clearDeadlineTimer();
      this.log.info({ reason }, "workers stopped");
    })();
    return this.stopping;
  }

  private abortInFlight(reason: string): void {
    for (const run of this.inFlight) run.abort(new ReconcileStoppedError(reason));
  }

  /** Stops for good: stops the workers (draining) and shuts the queue down. */
  async shutDown(graceMs = 0): Promise<void> {
    await this.stop({ graceMs, reason: "shutdown" });
    this.queue.shutDown();
  }

  private async worker(signal: AbortSignal): Promise<void> {
    let lastYield = performance.now();
    for (;;) {
      const key = await this.queue.get(signal);
      if (key === undefined) return;
      if (signal.aborted) {
        // Handed a key just as we stopped: give it back untouched.
        this.queue.done(key);
        this.queue.add(key);
        return;
      }
      try {
        await this.process(key);
      } catch (e) {
        // process() handles reconcile errors; this is a fault of the machinery itself.
        this.log.error({ key, err: e instanceof Error ? e.message : String(e) }, "worker failed");
      }
      // See WORKER_YIELD_INTERVAL_MS.
      if (performance.now() - lastYield >= WORKER_YIELD_INTERVAL_MS) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        lastYield = performance.now();
      }
    }
  }

  private async process(key: string): Promise<void> {
    const started = this.clock.now();
    const run = new ReconcileRun(this.runDeps, key, parseKey(key), started + this.timeoutMs);
    this.inFlight.add(run);
    this.armDeadlineTimer(run.deadline);
    this.metrics?.activeWorkers(1);
    try {
      await this.reconcileKey(run, started);
    } finally {
      this.inFlight.delete(run);
      this.metrics?.activeWorkers(-1);
      this.queue.done(key);
      run.finish();
    }
  }

  /**
   * Makes the deadline timer fire by `at`. Runs start in deadline order (one
   * timeout per controller), so the timer set for the oldest run covers the
   * newer ones; it is not cleared when a run ends, but checks what is in
   * flight when it fires.
   */
  private armDeadlineTimer(at: number): void {
    if (this.deadlineTimer !== undefined && this.deadlineAt <= at) return;
    this.clearDeadlineTimer();
    this.deadlineAt = at;
    this.deadlineTimer = this.clock.setTimer(
      () => this.onDeadline(),
      Math.max(0, at - this.clock.now()),
    );
    // Like a timer per run cleared when it ends, it never keeps the process alive alone.
    (this.deadlineTimer as { unref?: (() => void) | undefined } | undefined)?.unref?.();
  }

  private clearDeadlineTimer(): void {
    if (this.deadlineTimer !== undefined) this.clock.clearTimer(this.deadlineTimer);
    this.deadlineTimer = undefined;
    this.deadlineAt = Number.POSITIVE_INFINITY;
  }

  /** Aborts the runs past their deadline; sets the timer for the next one still running. */
  private onDeadline(): void {
    this.deadlineTimer = undefined;
    this.deadlineAt = Number.POSITIVE_INFINITY;
    const now = this.clock.now();
    let next = Number.POSITIVE_INFINITY;
    for (const run of this.inFlight) {
      if (run.aborted) continue;
      if (run.deadline <= now) {
        run.abort(new ReconcileTimeoutError(`reconcile exceeded ${this.timeoutMs} ms`));
      } else if (run.deadline < next) {
        next = run.deadline;
      }
    }
    if (next !== Number.POSITIVE_INFINITY) this.armDeadlineTimer(next);
  }

  private async reconcileKey(run: ReconcileRun, dequeued: number): Promise<void> {
    const { key, request: req } = run;
    let started = dequeued;
    if (this.ownWrites.has(key)) {
      await this.waitForOwnWrites(run);
      if (run.reason instanceof ReconcileStoppedError) {
        this.queue.add(key); // stopped before it began: run it when workers resume
        return;
      }
      started = this.clock.now();
    }
    this.reconcileCounts.record(key);
    const seconds = () => (this.clock.now() - started) / 1000;
    try {
      const result = await this.opts.reconciler(req, run);
      this.queue.forget(key);
      const after = result?.requeueAfter;
      if (after !== undefined) {
        this.queue.addAfter(key, after);
        this.metrics?.reconciled("requeue_after", seconds());
        if (this.log.isLevelEnabled("debug")) {
          run.log.debug({ requeueAfter: after }, "reconciled; requeue requested");
        }
      } else {
        this.metrics?.reconciled("success", seconds());
        if (this.log.isLevelEnabled("debug")) run.log.debug("reconciled");
      }
    } catch (e) {
      this.metrics?.reconciled("error", seconds());
      const message = e instanceof Error ? e.message : String(e);
      if (run.reason instanceof ReconcileStoppedError) {
        // Cut short by a stop, not by its own fault: run again when workers resume.
        this.queue.add(key);
        run.log.info({ err: message }, "reconcile stopped");
      } else if (isTerminalError(e)) {
        this.queue.forget(key);
        this.metrics?.failed(true);
        run.log.error({ err: message }, "reconcile failed with a terminal error; not retrying");
        this.recordTerminal(req, e);
      } else {
        this.queue.addRateLimited(key);
        this.metrics?.failed(false);
        run.log.error(
          { err: message, retries: this.queue.numRequeues(key) },
          "reconcile failed; retrying with backoff",
        );
      }
    } finally {
      if (run.written) this.ownWrites.set(key, run.written);
    }
  }

  /**
   * The cache reader of a reconcile: the shared cache, noting the kinds it
   * reads. A read that names no scope reads a watched kind in the scope the
   * controller watches it with (the informer whose event woke the reconcile),
   * not the kind's whole, unscoped informer (a second list and watch, whose
   * copy may lag the first).
   */
  private newReader(): CacheReader {
    const cache = this.opts.cache;
    const scoped = (t: TypeRef, scope: InformerScope | undefined) => {
      const k = typeKey(t);
      const s = scope ?? this.watchScopes.get(k);
      if (!this.cachedTypes.has(k)) this.cachedTypes.set(k, s);
      return s;
    };
    return {
      get: <T extends KubeObject = KubeObject>(
        t: Kind<T>,
        name: string,
        ns?: string,
        scope?: InformerScope,
      ) => cache.get<T>(t, name, ns, scoped(t, scope)),
      list: <T extends KubeObject = KubeObject>(t: Kind<T>, opts: CacheListOptions = {}) => {
        const scope = scoped(t, opts.scope);
        return cache.list<T>(t, scope === opts.scope ? opts : { ...opts, scope });
      },
      peek: <T extends KubeObject = KubeObject>(
        t: Kind<T>,
        name: string,
        ns?: string,
        scope?: InformerScope,
      ) => cache.peek<T>(t, name, ns, scoped(t, scope)),
    };
  }

  private async waitForOwnWrites(run: ReconcileRun): Promise<void> {
    const writes = this.ownWrites.get(run.key);
    if (!writes) return;
    this.ownWrites.delete(run.key);
    const signal = run.signal;
    const timeout = this.opts.readYourWritesTimeoutMs ?? DEFAULT_READ_YOUR_WRITES_TIMEOUT_MS;
    const latest = new Map<string, WrittenObject>();
    for (const w of writes) {
      if (this.cachedTypes.has(typeKey(w.type))) {
        latest.set(`${typeKey(w.type)}|${w.namespace ?? ""}|${w.name}`, w);
      }
    }
    const aborted = new Promise<boolean[]>((resolve) => {
      if (signal.aborted) resolve([]);
      signal.addEventListener("abort", () => resolve([]), { once: true });
    });
    const waits = Promise.all(
      [...latest.values()].map((w) =>
        this.opts.cache.waitForResourceVersion(
          w.type,
          w,
          w.resourceVersion,
          timeout,
          this.cachedTypes.get(typeKey(w.type)),
        ),
      ),
    );
    const results = await Promise.race([waits, aborted]);
    if (results.includes(false)) {
      run.log.warn(
        { timeoutMs: timeout },
        "cache did not catch up with this key's own writes in time",
      );
    }
  }

  private recordTerminal(req: Request, e: unknown): void {
    const t = this.opts.forType;
    if (!t) return;
    const obj = this.opts.cache.peek(t, req.name, req.namespace, this.opts.forScope);
    if (!obj) return;
    const reason = (e as { reason?: string | undefined }).reason ?? "ReconcileError";
    this.recorder.warning(obj, reason, e instanceof Error ? e.message : String(e), {
      action: TERMINAL_ERROR_ACTION,
    });
  }
}

/** Whether `p` settles within `ms`. */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((r) => {
    timer = setTimeout(() => r(false), ms);
  });
  try {
    return await Promise.race([p.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
