/**
 * The manager runs a set of controllers against one API server:
 *
 * 1. serves `/metrics`, `/healthz` and `/readyz` (when addresses are given);
 * 2. connects every controller's watches to shared informers, starts them, and
 *    waits until they have synced (bounded by `cacheSyncTimeoutMs`);
 * 3. with leader election, campaigns for a Lease and runs the controllers only
 *    while it leads; a standby keeps its informers (and queues) warm, so it takes
 *    over with a full cache. Losing the lease stops reconciling at once (signals
 *    of reconciles in flight abort and their writes are refused), and the
 *    manager campaigns again;
 * 4. runs the components added with `add()` (runnables) from the initial sync
 *    to shutdown, leader or not (discovery loops, side informers of the shared
 *    cache), each with its own readiness check in `/readyz`;
 * 5. on shutdown (its signal aborts, or `stop()`): stops the controllers,
 *    letting reconciles in flight finish for up to `gracefulShutdownTimeoutMs`
 *    while it still renews the lease, then releases the lease (when
 *    `releaseOnCancel`), stops the runnables (waiting up to
 *    `RUNNABLE_STOP_TIMEOUT_MS` for them), stops the informers and closes its
 *    servers.
 *
 * Published on the leader's Lease with every acquire and renewal, for tools:
 * - `setpoint.dev/finalizers`: the finalizers the controllers declare (sorted,
 *   comma-separated), so a finalizer someone handles can be told from an
 *   abandoned one;
 * - `setpoint.dev/reconcile-stats`: each controller's reconciles over the last
 *   minute and its 10 busiest keys (JSON, see `ReconcileStats`), so a key
 *   reconciled in a loop shows even when the loop writes nothing.
 */
import { randomUUID } from "node:crypto";
import os from "node:os";
import type { KubeObject } from "@setpoint/api";
import { InformerCache, type InformerCacheOptions } from "../cache/cache.ts";
import { Client, type RestConfig } from "../client/client.ts";
import { ControllerBuilder, type ControllerDeclaration } from "../controller/builder.ts";
import { Controller } from "../controller/controller.ts";
import { RECONCILE_STATS_WINDOW_MS, type ReconcileStats } from "../controller/reconcile-stats.ts";
import { connectWatch, type WatchSpec } from "../controller/watches.ts";
import { createLogger, type Logger } from "../log.ts";
import { RuntimeMetrics } from "../metrics/metrics.ts";
import {
  type CheckResult,
  HealthChecks,
  type ProbeServer,
  parseListenAddress,
  startProbeServer,
} from "./health.ts";
import { LeaderElector } from "./leader-election.ts";

/** The Lease annotation listing the finalizers this manager's controllers handle. */
export const FINALIZERS_ANNOTATION = "setpoint.dev/finalizers";
/** The Lease annotation carrying the controllers' per-key reconcile counts (JSON ReconcileStats). */
export const RECONCILE_STATS_ANNOTATION = "setpoint.dev/reconcile-stats";
/** Default time reconciles in flight get to finish on shutdown (controller-runtime's 30 s). */
export const DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT_MS = 30_000;
/** Default bound on the initial cache sync (controller-runtime's 2 min). */
export const DEFAULT_CACHE_SYNC_TIMEOUT_MS = 120_000;
/**
 * An informer counts as stalled (failing /healthz and /readyz) when it has had no
 * open watch and no activity for this long.
 */
export const DEFAULT_INFORMER_STALL_MS = 60_000;
/** On shutdown, how long to wait for Events still being written. */
export const EVENT_FLUSH_TIMEOUT_MS = 2_000;
/** On shutdown, how long to wait for each runnable to return once its signal aborted. */
export const RUNNABLE_STOP_TIMEOUT_MS = 5_000;

/**
 * A component that runs with the manager whether or not it leads: started once
 * the caches have synced (at once if added later), stopped on shutdown before
 * the informers, and part of `/readyz`.
 */
export interface Runnable {
  /** Its name: in logs, and its `/readyz` check's. */
  readonly name: string;
  /**
   * Runs until `signal` aborts: returns at once (leaving work that ends with
   * the signal) or a promise that settles once it has stopped, which shutdown
   * waits for (up to RUNNABLE_STOP_TIMEOUT_MS). A failure (it throws, or its
   * promise rejects before it is stopped) is logged and fails its readiness.
   */
  start(signal: AbortSignal): void | Promise<void>;
  /** Readiness while running (default: ready once started). */
  ready?(): CheckResult;
}

interface RunnableEntry {
  runnable: Runnable;
  /** Its own stop signal (so runnables do not share listeners on one). */
  stop: AbortController;
  started: boolean;
  done?: Promise<void> | undefined;
  /** Why it failed (threw, or its promise rejected before it was stopped). */
  error?: string | undefined;
}

export interface LeaderElectionOptions {
  /** The Lease's name. */
  id: string;
  /** The Lease's namespace. */
  namespace: string;
  leaseDurationMs?: number | undefined;
  renewDeadlineMs?: number | undefined;
  retryPeriodMs?: number | undefined;
  /** Give the lease up on shutdown so a standby takes over at once (default true). */
  releaseOnCancel?: boolean | undefined;
}

export interface ManagerOptions {
  /** The client to use; or `restConfig` to build one; else the kubeconfig is loaded. */
  client?: Client | undefined;
  restConfig?: RestConfig | undefined;
  /** Unique per process: `<hostname>_<uuid>` by default. */
  identity?: string | undefined;
  leaderElection?: LeaderElectionOptions | undefined;
  /** Where to serve /metrics ("host:port", ":port", 0 for a free port); not served when unset. */
  metricsAddr?: string | number | undefined;
  /** Where to serve /healthz and /readyz; may equal metricsAddr (one server). */
  healthAddr?: string | number | undefined;
  gracefulShutdownTimeoutMs?: number | undefined;
  cacheSyncTimeoutMs?: number | undefined;
  informerStallMs?: number | undefined;
  cache?: InformerCacheOptions | undefined;
  logger?: Logger | undefined;
  metrics?: RuntimeMetrics | undefined;
}

interface Registered {
  controller: Controller;
  watches: WatchSpec[];
  connected: boolean;
}

type State = "new" | "starting" | "running" | "stopping" | "stopped";

export class Manager {
  readonly client: Client;
  readonly cache: InformerCache;
  readonly metrics: RuntimeMetrics;
  readonly identity: string;
  readonly log: Logger;
  /** Liveness checks (add your own). */
  readonly healthz = new HealthChecks();
  /** Readiness checks (add your own). */
  readonly readyz = new HealthChecks();
  private readonly opts: ManagerOptions;
  private readonly registered: Registered[] = [];
  private readonly runnables: RunnableEntry[] = [];
  private readonly elector: LeaderElector | undefined;
  private readonly cacheAbort = new AbortController();
  private readonly electorAbort = new AbortController();
  private metricsServer: ProbeServer | undefined;
  private healthServer: ProbeServer | undefined;
  private state: State = "new";
  private leading = false;
  private everLed = false;
  private synced = false;
  private electedWaiters: (() => void)[] = [];
  private stopPromise: Promise<void> | undefined;
  private electorRun: Promise<void> | undefined;
  private resolveDone!: () => void;
  /** Resolves when the manager has stopped. */
  readonly done: Promise<void> = new Promise((r) => {
    this.resolveDone = r;
  });

  constructor(opts: ManagerOptions = {}) {
    this.opts = opts;
    this.client =
      opts.client ?? (opts.restConfig ? new Client(opts.restConfig) : Client.fromKubeconfig());
    this.identity = opts.identity ?? `${os.hostname()}_${randomUUID()}`;
    this.log = opts.logger ?? createLogger();
    this.metrics = opts.metrics ?? new RuntimeMetrics();
    this.cache = new InformerCache(this.client, { logger: this.log, ...opts.cache });
    const le = opts.leaderElection;
    if (le) {
      this.metrics.leaderStatus(le.id, false);
      this.elector = new LeaderElector(this.client, {
        name: le.id,
        namespace: le.namespace,
        identity: this.identity,
        leaseDurationMs: le.leaseDurationMs,
        renewDeadlineMs: le.renewDeadlineMs,
        retryPeriodMs: le.retryPeriodMs,
        releaseOnCancel: le.releaseOnCancel,
        annotations: () => this.leaseAnnotations(),
        logger: this.log,
        onStartedLeading: () => this.startedLeading(),
        onStoppedLeading: () => this.stoppedLeading(),
        onNewLeader: (id) => this.log.info({ leader: id || "(none)" }, "observed leader"),
      });
    }
    this.healthz.add("ping", () => ({ ok: true }));
    this.healthz.add("informers", () => this.informersCheck());
    if (this.elector) this.healthz.add("leader-election", () => this.elector!.check());
    this.readyz.add("ping", () => ({ ok: true }));
    this.readyz.add("informers-synced", () =>
      this.synced && this.cache.hasSynced()
        ? { ok: true }
        : { ok: false, reason: "caches not synced" },
    );
    this.readyz.add("informers", () => this.informersCheck());
  }

  /** Starts a controller declaration bound to this manager. */
  controller(name: string): ControllerBuilder {
    return new ControllerBuilder(this, name);
  }

  /**
   * Registers a controller (the builder's `complete` calls this). Controllers
   * added after start are connected and started right away.
   */
  addController(base: ControllerDeclaration, watches: WatchSpec[]): Controller {
    if (this.registered.some((r) => r.controller.name === base.name)) {
      throw new Error(`a controller named "${base.name}" is already registered`);
    }
    if (this.state === "stopping" || this.state === "stopped") {
      throw new Error("the manager is stopping");
    }
    const controller = new Controller({
      ...base,
      client: base.client ?? this.client,
      cache: this.cache,
      logger: this.log,
      metrics: this.metrics,
      instance: this.identity,
      watched: watches.map((w) => ({ type: w.type, scope: w.scope })),
    });
    const reg: Registered = { controller, watches, connected: false };
    this.registered.push(reg);
    if (this.state === "starting" || this.state === "running") {
      void this.connect(reg).then(() => {
        if (this.state === "running" && this.isLeader) controller.start();
      });
    }
    return controller;
  }

  /**
   * Adds a component that runs with the manager, leader or not (see Runnable).
   * Added after start, it starts at once.
   */
  add(runnable: Runnable): void {
    if (this.runnables.some((r) => r.runnable.name === runnable.name)) {
      throw new Error(`a runnable named "${runnable.name}" is already added`);
    }
    if (this.state === "stopping" || this.state === "stopped") {
      throw new Error("the manager is stopping");
    }
    const entry: RunnableEntry = { runnable, stop: new AbortController(), started: false };
    this.runnables.push(entry);
    this.readyz.add(runnable.name, () => {
      if (!entry.started) return { ok: false, reason: "not started" };
      if (entry.error !== undefined) return { ok: false, reason: `failed: ${entry.error}` };
      return runnable.ready?.() ?? { ok: true };
    });
    if (this.state === "running") this.startRunnable(entry);
  }

  /** The controllers registered so far. */
  get controllers(): readonly Controller[] {
    return this.registered.map((r) => r.controller);
  }

  /** Whether this manager runs its controllers now (always true without leader election, once running). */
  get isLeader(): boolean {
    return this.elector ? this.leading : this.state === "running";
  }

  /** The finalizers the controllers declare, sorted and de-duplicated. */
  finalizers(): string[] {
    return [...new Set(this.registered.flatMap((r) => r.controller.finalizers))].sort();
  }

  /**
   * Each controller's reconciles over the last minute and its busiest keys
   * (what the leader publishes in RECONCILE_STATS_ANNOTATION).
   */
  reconcileStats(): ReconcileStats {
    const controllers: ReconcileStats["controllers"] = {};
    for (const r of this.registered) {
      controllers[r.controller.name] = r.controller.reconcileCounts.snapshot();
    }
    return { windowSeconds: RECONCILE_STATS_WINDOW_MS / 1000, controllers };
  }

  /** "host:port" of the metrics server, once started. */
  get metricsAddress(): string | undefined {
    return this.metricsServer?.address;
  }

  /** "host:port" of the health server, once started. */
  get healthAddress(): string | undefined {
    return this.healthServer?.address;
  }

  /**
   * Resolves once this manager leads (once running, without leader election),
   * or when it stops without having led.
   */
  elected(): Promise<void> {
    if (this.isLeader) return Promise.resolve();
    return new Promise((r) => this.electedWaiters.push(r));
  }

  /**
   * Starts everything and resolves once the caches have synced (leadership may
   * come later; see `elected()`). Aborting `signal` shuts down like `stop()`.
   */
  async start(signal?: AbortSignal): Promise<void> {
    if (this.state !== "new") throw new Error("a manager starts only once");
    this.state = "starting";
    if (signal?.aborted) {
      await this.stop();
      return;
    }
    signal?.addEventListener("abort", () => void this.stop(), { once: true });
    try {
      await this.startServers();
      for (const reg of this.registered) await this.connect(reg);
      this.cache.start(this.cacheAbort.signal);
      await this.waitForSync();
    } catch (e) {
      await this.stop();
      throw e;
    }
    if (this.state !== "starting") return; // stopped meanwhile
    this.synced = true;
    this.state = "running";
    for (const entry of this.runnables) this.startRunnable(entry);
    this.log.info(
      { identity: this.identity, controllers: this.registered.length },
      "manager started",
    );
    if (this.elector) {
      this.electorRun = this.elector.run(this.electorAbort.signal);
    } else {
      this.startedLeading();
    }
  }

  /** Starts, then waits until the manager has stopped. */
  async run(signal?: AbortSignal): Promise<void> {
    await this.start(signal);
    await this.done;
  }

  /** Graceful shutdown (see the module doc). Safe to call more than once. */
  stop(): Promise<void> {
    this.stopPromise ??= this.shutdown();
    return this.stopPromise;
  }

  private async shutdown(): Promise<void> {
    const wasRunning = this.state === "running";
    this.state = "stopping";
    this.log.info("manager stopping");
    const grace = this.opts.gracefulShutdownTimeoutMs ?? DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT_MS;
    // Drain while still holding (and renewing) the lease.
    await Promise.all(this.registered.map((r) => r.controller.shutDown(grace)));
    this.electorAbort.abort();
    if (this.electorRun) await this.electorRun;
    this.leading = false;
    if (this.opts.leaderElection) this.metrics.leaderStatus(this.opts.leaderElection.id, false);
    for (const r of this.runnables) r.stop.abort();
    await Promise.all(
      this.runnables.map((r) =>
        r.done ? withTimeout(r.done, RUNNABLE_STOP_TIMEOUT_MS) : undefined,
      ),
    );
    this.cacheAbort.abort();
    await Promise.all(
      this.registered.map((r) => {
        const flushing = r.controller.recorder.flush?.();
        return flushing ? withTimeout(flushing, EVENT_FLUSH_TIMEOUT_MS) : undefined;
      }),
    );
    await this.closeServers();
    this.state = "stopped";
    for (const w of this.electedWaiters.splice(0)) w();
    this.log.info({ wasRunning }, "manager stopped");
    this.resolveDone();
  }

  private startRunnable(entry: RunnableEntry): void {
    if (entry.started) return;
    entry.started = true;
    const { name } = entry.runnable;
    const failed = (e: unknown): void => {
      if (entry.stop.signal.aborted) return;
      entry.error = e instanceof Error ? e.message : String(e);
      this.log.error({ runnable: name, err: entry.error }, "runnable failed");
    };
    try {
      const run = entry.runnable.start(entry.stop.signal);
      if (run) entry.done = run.catch(failed);
    } catch (e) {
      failed(e);
    }
  }

  private startedLeading(): void {
    if (this.state !== "running") return;
    this.leading = true;
    if (this.opts.leaderElection) this.metrics.leaderStatus(this.opts.leaderElection.id, true);
    for (const reg of this.registered) {
      if (!reg.connected) continue;
      // After a lost lease, another leader ran meanwhile: look at everything again.
      if (this.everLed) reg.controller.enqueueAll();
      reg.controller.start();
    }
    this.everLed = true;
    for (const w of this.electedWaiters.splice(0)) w();
  }

  private async stoppedLeading(): Promise<void> {
    this.leading = false;
    if (this.opts.leaderElection) this.metrics.leaderStatus(this.opts.leaderElection.id, false);
    // Stop promptly: another candidate may take over once the lease expires.
    await Promise.all(
      this.registered.map((r) => r.controller.stop({ graceMs: 0, reason: "leadership lost" })),
    );
  }

  private leaseAnnotations(): Record<string, string> {
    const out: Record<string, string> = {
      [RECONCILE_STATS_ANNOTATION]: JSON.stringify(this.reconcileStats()),
    };
    const f = this.finalizers();
    if (f.length > 0) out[FINALIZERS_ANNOTATION] = f.join(",");
    return out;
  }

  private async connect(reg: Registered): Promise<void> {
    if (reg.connected) return;
    reg.connected = true;
    const forType = reg.watches[0]?.type;
    let forNamespaced: boolean | undefined;
    if (forType) {
      try {
        forNamespaced = (await this.client.resourceFor(forType)).namespaced;
      } catch (e) {
        this.log.warn(
          {
            controller: reg.controller.name,
            kind: forType.kind,
            err: e instanceof Error ? e.message : String(e),
          },
          "kind not served yet; will look it up again on events",
        );
      }
    }
    const ownerNamespaced = () =>
      forNamespaced ?? (forType ? this.client.cachedResource(forType)?.namespaced : undefined);
    for (const spec of reg.watches) {
      const informer = this.cache.informerFor<KubeObject>(spec.type, spec.scope);
      connectWatch(reg.controller, spec, informer, ownerNamespaced);
    }
  }

  private async waitForSync(): Promise<void> {
    const timeoutMs = this.opts.cacheSyncTimeoutMs ?? DEFAULT_CACHE_SYNC_TIMEOUT_MS;
    const signal = AbortSignal.any([
      this.cacheAbort.signal,
      AbortSignal.timeout(Math.ceil(timeoutMs)),
    ]);
    try {
      await this.cache.waitForSync(signal);
    } catch (e) {
      if (this.cacheAbort.signal.aborted) return;
      const pending = this.cache
        .health()
        .filter((h) => !h.synced)
        .map((h) => `${h.kind} (${h.lastError ?? "no error"})`);
      throw new Error(
        `caches did not sync within ${timeoutMs} ms: ${pending.join(", ") || String(e)}`,
      );
    }
  }

  private informersCheck(): CheckResult {
    const stallMs = this.opts.informerStallMs ?? DEFAULT_INFORMER_STALL_MS;
    const stalled = this.cache
      .health()
      .filter((h) => !h.watching && h.lastEventAgeMs > stallMs)
      .map(
        (h) =>
          `${h.kind}: no watch for ${Math.round(h.lastEventAgeMs / 1000)}s${h.lastError ? ` (${h.lastError})` : ""}`,
      );
    return stalled.length === 0
      ? { ok: true }
      : { ok: false, reason: `stalled informers: ${stalled.join("; ")}` };
  }

  private async startServers(): Promise<void> {
    const { metricsAddr, healthAddr } = this.opts;
    // One server when both name the same fixed port (port 0 means two free ports).
    if (
      metricsAddr !== undefined &&
      String(metricsAddr) === String(healthAddr) &&
      parseListenAddress(metricsAddr).port !== 0
    ) {
      const both = await startProbeServer(metricsAddr, {
        metrics: this.metrics,
        healthz: this.healthz,
        readyz: this.readyz,
      });
      this.metricsServer = both;
      this.healthServer = both;
      return;
    }
    if (metricsAddr !== undefined) {
      this.metricsServer = await startProbeServer(metricsAddr, { metrics: this.metrics });
    }
    if (healthAddr !== undefined) {
      this.healthServer = await startProbeServer(healthAddr, {
        healthz: this.healthz,
        readyz: this.readyz,
      });
    }
  }

  private async closeServers(): Promise<void> {
    const servers = new Set([this.metricsServer, this.healthServer]);
    await Promise.all([...servers].map((s) => s?.close()));
  }
}

async function withTimeout(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([p, new Promise((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
}
