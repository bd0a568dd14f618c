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
 * `start()` runs the workers; `stop({ graceMs })` stops taking keys, lets the
 * reconciles in flight finish for up to `graceMs`, then aborts their signals.
 * The queue survives a stop (a standby keeps collecting keys), so a later
 * `start()` resumes; `shutDown()` ends it for good.
 */
import { randomUUID } from "node:crypto";
import type { KubeObject } from "../api/meta.ts";
import type { CacheListOptions, InformerCache, InformerScope } from "./cache.ts";
import type { Client, TypeRef } from "./client.ts";
import { type Clock, realClock } from "./clock.ts";
import { type EventRecorder, Recorder } from "./events.ts";
import { controllerLogger, type Logger, reconcileLogger, requestKey, silentLogger } from "./log.ts";
import type { ControllerMetrics, RuntimeMetrics } from "./metrics.ts";
import type { RateLimiter } from "./ratelimiter.ts";
import {
  type CacheReader,
  isTerminalError,
  parseKey,
  type ReconcileContext,
  type Reconciler,
  type Request,
  requestFor,
  TERMINAL_ERROR_ACTION,
} from "./reconciler.ts";
import { ReconcileCounter } from "./reconcilestats.ts";
import { type Lane, WorkQueue } from "./workqueue.ts";
import { ReconcileClient, type WrittenObject } from "./writer.ts";

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
  forType?: TypeRef;
  forScope?: InformerScope;
  /**
   * The other kinds the controller watches, with their scopes. A reconcile's
   * reads of a watched kind that name no scope read the watch's informer (the
   * `for` kind's scope first, then the first watch of that kind).
   */
  watched?: readonly { type: TypeRef; scope?: InformerScope }[];
  maxConcurrentReconciles?: number;
  reconcileTimeoutMs?: number;
  readYourWritesTimeoutMs?: number;
  rateLimiter?: RateLimiter;
  clock?: Clock;
  logger?: Logger;
  metrics?: RuntimeMetrics;
  /** Records Events; by default a Recorder writing as the controller's name. */
  recorder?: EventRecorder;
  /** `reportingInstance` of the default recorder (the manager's identity). */
  instance?: string;
  /** Finalizers this controller handles (published by the manager on its lease). */
  finalizers?: string[];
}

interface InFlight {
  abort: AbortController;
  done: Promise<void>;
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
  private readonly metrics?: ControllerMetrics;
  private readonly clock: Clock;
  /** Kinds with informers this controller uses: only these are waited on for read-your-own-writes. */
  private readonly cachedTypes = new Map<string, InformerScope | undefined>();
  /** The scope each watched kind is watched in: the default scope of the reconcile reader's reads. */
  private readonly watchScopes = new Map<string, InformerScope | undefined>();
  /** The reader every reconcile gets (it holds no per-reconcile state). */
  private readonly cacheReader: CacheReader;
  private readonly ownWrites = new Map<string, WrittenObject[]>();
  private readonly inFlight = new Set<InFlight>();
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
    for (const obj of informer.list()) this.enqueue(requestFor(obj), "initial");
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
  stop(opts: { graceMs?: number; reason?: string } = {}): Promise<void> {
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
      const all = Promise.all(inflight.map((f) => f.done));
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
      this.log.info({ reason }, "workers stopped");
    })();
    return this.stopping;
  }

  private abortInFlight(reason: string): void {
    for (const f of this.inFlight) {
      if (!f.abort.signal.aborted) f.abort.abort(new ReconcileStoppedError(reason));
    }
  }

  /** Stops for good: stops the workers (draining) and shuts the queue down. */
  async shutDown(graceMs = 0): Promise<void> {
    await this.stop({ graceMs, reason: "shutdown" });
    this.queue.shutDown();
  }

  private async worker(signal: AbortSignal): Promise<void> {
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
      // A reconcile that needs no I/O and requeues at once would otherwise loop on
      // promises alone and starve timers, sockets and every other part of the process.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  private async process(key: string): Promise<void> {
    const abort = new AbortController();
    let finish!: () => void;
    const entry: InFlight = { abort, done: new Promise((r) => (finish = r)) };
    this.inFlight.add(entry);
    this.metrics?.activeWorkers(1);
    const timeoutMs = this.opts.reconcileTimeoutMs ?? DEFAULT_RECONCILE_TIMEOUT_MS;
    const timer = this.clock.setTimer(
      () => abort.abort(new ReconcileTimeoutError(`reconcile exceeded ${timeoutMs} ms`)),
      timeoutMs,
    );
    try {
      await this.reconcileKey(key, abort.signal);
    } finally {
      this.clock.clearTimer(timer);
      this.inFlight.delete(entry);
      this.metrics?.activeWorkers(-1);
      this.queue.done(key);
      finish();
    }
  }

  private async reconcileKey(key: string, signal: AbortSignal): Promise<void> {
    const req = parseKey(key);
    const reconcileID = randomUUID();
    const log = reconcileLogger(this.log, req, reconcileID);
    await this.waitForOwnWrites(key, log, signal);
    if (signal.reason instanceof ReconcileStoppedError) {
      this.queue.add(key); // stopped before it began: run it when workers resume
      return;
    }
    this.reconcileCounts.record(key);
    const written: WrittenObject[] = [];
    const client = new ReconcileClient(this.opts.client, {
      fieldManager: this.name,
      signal,
      onWrite: (w) => written.push(w),
    });
    const ctx: ReconcileContext = {
      reader: this.cacheReader,
      client,
      log,
      recorder: this.recorder,
      signal,
      reconcileID,
      controller: this.name,
    };
    const started = this.clock.now();
    const seconds = () => (this.clock.now() - started) / 1000;
    try {
      const result = await this.opts.reconciler(req, ctx);
      this.queue.forget(key);
      const after = result?.requeueAfter;
      if (after !== undefined) {
        this.queue.addAfter(key, after);
        this.metrics?.reconciled("requeue_after", seconds());
        log.debug({ requeueAfter: after }, "reconciled; requeue requested");
      } else {
        this.metrics?.reconciled("success", seconds());
        log.debug("reconciled");
      }
    } catch (e) {
      this.metrics?.reconciled("error", seconds());
      const message = e instanceof Error ? e.message : String(e);
      if (signal.reason instanceof ReconcileStoppedError) {
        // Cut short by a stop, not by its own fault: run again when workers resume.
        this.queue.add(key);
        log.info({ err: message }, "reconcile stopped");
      } else if (isTerminalError(e)) {
        this.queue.forget(key);
        this.metrics?.failed(true);
        log.error({ err: message }, "reconcile failed with a terminal error; not retrying");
        this.recordTerminal(req, e);
      } else {
        this.queue.addRateLimited(key);
        this.metrics?.failed(false);
        log.error(
          { err: message, retries: this.queue.numRequeues(key) },
          "reconcile failed; retrying with backoff",
        );
      }
    } finally {
      if (written.length > 0) this.ownWrites.set(key, written);
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
      get: <T extends KubeObject>(t: TypeRef, name: string, ns?: string, scope?: InformerScope) =>
        cache.get<T>(t, name, ns, scoped(t, scope)),
      list: <T extends KubeObject>(t: TypeRef, opts: CacheListOptions = {}) => {
        const scope = scoped(t, opts.scope);
        return cache.list<T>(t, scope === opts.scope ? opts : { ...opts, scope });
      },
      peek: <T extends KubeObject>(t: TypeRef, name: string, ns?: string, scope?: InformerScope) =>
        cache.peek<T>(t, name, ns, scoped(t, scope)),
    };
  }

  private async waitForOwnWrites(key: string, log: Logger, signal: AbortSignal): Promise<void> {
    const writes = this.ownWrites.get(key);
    if (!writes) return;
    this.ownWrites.delete(key);
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
      log.warn({ timeoutMs: timeout }, "cache did not catch up with this key's own writes in time");
    }
  }

  private recordTerminal(req: Request, e: unknown): void {
    const t = this.opts.forType;
    if (!t) return;
    const obj = this.opts.cache.peek(t, req.name, req.namespace, this.opts.forScope);
    if (!obj) return;
    const reason = (e as { reason?: string }).reason ?? "ReconcileError";
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
