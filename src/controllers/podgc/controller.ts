/**
 * The Pod garbage collector (`pod-garbage-collector`), as Kubernetes' podgc:
 * every check period (20 s) it
 *
 * - deletes terminated Pods (Succeeded or Failed) beyond
 *   --terminated-pod-gc-threshold (default 12500; 0 turns it off), oldest first;
 * - deletes Pods bound to a Node that no longer exists, once the Node has been
 *   missing for the quarantine (40 s) and a fresh read still finds no Node:
 *   first marked Failed with a DisruptionTarget condition (DeletionByPodGC),
 *   then deleted at once;
 * - deletes, at once, terminating Pods that were never scheduled.
 *
 * The sweep runs as one reconcile (key "sweep"), so only the leader sweeps.
 */
import type { Node, Pod } from "@setpoint/api";
import {
  type Client,
  type Controller,
  type Informer,
  isConflict,
  isNotFound,
  type Manager,
  type ReconcileContext,
  type Runnable,
} from "@setpoint/runtime";
import type { BuiltinController } from "../builtin-controller.ts";

/** The controller's name (what `--disable` takes). */
export const POD_GC_CONTROLLER = "pod-garbage-collector";
/** Kubernetes' --terminated-pod-gc-threshold default. */
export const DEFAULT_TERMINATED_POD_GC_THRESHOLD = 12_500;
/** Kubernetes' gcCheckPeriod. */
export const DEFAULT_POD_GC_PERIOD_MS = 20_000;
/** Kubernetes' quarantineTime: how long a Node must be missing before its Pods go. */
export const DEFAULT_ORPHAN_QUARANTINE_MS = 40_000;

const NODE = { apiVersion: "v1", kind: "Node" } as const;
const POD = { apiVersion: "v1", kind: "Pod" } as const;
const SWEEP = { name: "sweep" };

export interface PodGcOptions {
  /** Terminated Pods kept (default 12500; 0: never collected by count). */
  terminatedPodGcThreshold?: number;
  /** Time between sweeps, in ms (default 20 s). */
  periodMs?: number;
  /** How long a Pod's Node must be missing before the Pod is deleted, in ms (default 40 s). */
  quarantineMs?: number;
}

function stamp(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");
}

function isTerminated(p: Pod): boolean {
  return p.status?.phase === "Succeeded" || p.status?.phase === "Failed";
}

export class PodGarbageCollector implements BuiltinController, Runnable {
  readonly name = POD_GC_CONTROLLER;
  private readonly threshold: number;
  private readonly periodMs: number;
  private readonly quarantineMs: number;
  private nodes!: Informer<Node>;
  private pods!: Informer<Pod>;
  private controller!: Controller;
  /** Node names first seen missing, and when. */
  private readonly missingSince = new Map<string, number>();

  constructor(opts: PodGcOptions = {}) {
    this.threshold = opts.terminatedPodGcThreshold ?? DEFAULT_TERMINATED_POD_GC_THRESHOLD;
    this.periodMs = opts.periodMs ?? DEFAULT_POD_GC_PERIOD_MS;
    this.quarantineMs = opts.quarantineMs ?? DEFAULT_ORPHAN_QUARANTINE_MS;
    if (!(this.threshold >= 0)) throw new RangeError("the terminated Pod threshold must be >= 0");
    if (!(this.periodMs > 0)) throw new RangeError("the Pod GC period must be positive");
  }

  setup(mgr: Manager, client: Client = mgr.client): void {
    this.nodes = mgr.cache.informerFor<Node>(NODE);
    this.pods = mgr.cache.informerFor<Pod>(POD);
    this.controller = mgr.addController(
      {
        client,
        name: POD_GC_CONTROLLER,
        reconciler: (_req, ctx) => this.sweep(ctx),
        maxConcurrentReconciles: 1,
      },
      [],
    );
    mgr.add(this);
  }

  /** Schedules the first sweep; each sweep schedules the next. */
  async start(): Promise<void> {
    this.controller.enqueueAfter(SWEEP, this.periodMs);
  }

  private async sweep(ctx: ReconcileContext): Promise<{ requeueAfter: number }> {
    if (this.nodes.hasSynced() && this.pods.hasSynced()) {
      const pods = this.pods.list();
      await this.gcTerminated(pods, ctx);
      await this.gcOrphaned(pods, ctx);
      await this.gcUnscheduledTerminating(pods, ctx);
    }
    return { requeueAfter: this.periodMs };
  }

  private async remove(p: Pod, ctx: ReconcileContext, gracePeriodSeconds?: number): Promise<void> {
    try {
      await ctx.client.delete(POD, p.metadata.name ?? "", p.metadata.namespace, {
        preconditions: { uid: p.metadata.uid },
        ...(gracePeriodSeconds === undefined ? {} : { gracePeriodSeconds }),
      });
      ctx.log.info({ pod: `${p.metadata.namespace}/${p.metadata.name}` }, "pod collected");
    } catch (e) {
      if (!isNotFound(e) && !isConflict(e)) throw e;
    }
  }

  private async gcTerminated(pods: Pod[], ctx: ReconcileContext): Promise<void> {
    if (this.threshold <= 0) return;
    const done = pods.filter((p) => isTerminated(p) && !p.metadata.deletionTimestamp);
    const excess = done.length - this.threshold;
    if (excess <= 0) return;
    const created = (p: Pod) => Date.parse(p.metadata.creationTimestamp ?? "") || 0;
    done.sort((a, b) => created(a) - created(b));
    for (const p of done.slice(0, excess)) await this.remove(p, ctx);
  }

  private async gcOrphaned(pods: Pod[], ctx: ReconcileContext): Promise<void> {
    const now = Date.now();
    const bound = new Set(pods.map((p) => p.spec?.nodeName).filter((n) => !!n) as string[]);
    for (const n of [...this.missingSince.keys()]) {
      if (!bound.has(n) || this.nodes.get(n)) this.missingSince.delete(n);
    }
    for (const name of bound) {
      if (this.nodes.get(name)) continue;
      const since = this.missingSince.get(name);
      if (since === undefined) {
        this.missingSince.set(name, now);
        continue;
      }
      if (now - since < this.quarantineMs) continue;
      try {
        await ctx.client.get<Node>(NODE, name);
        this.missingSince.delete(name);
        continue; // The cache lags: the Node is there.
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
      for (const p of pods.filter((x) => x.spec?.nodeName === name)) {
        await this.markFailed(p, ctx, now);
        await this.remove(p, ctx, 0);
      }
    }
  }

  private async markFailed(p: Pod, ctx: ReconcileContext, now: number): Promise<void> {
    const status: Record<string, unknown> = {
      conditions: [
        {
          type: "DisruptionTarget",
          status: "True",
          reason: "DeletionByPodGC",
          message: "PodGC: node no longer exists",
          lastTransitionTime: stamp(now),
        },
      ],
    };
    if (!isTerminated(p)) status.phase = "Failed";
    try {
      await ctx.client.patch(
        POD,
        p.metadata.name ?? "",
        p.metadata.namespace,
        { status },
        {
          type: "strategic",
          subresource: "status",
        },
      );
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }

  private async gcUnscheduledTerminating(pods: Pod[], ctx: ReconcileContext): Promise<void> {
    for (const p of pods) {
      if (p.metadata.deletionTimestamp && !p.spec?.nodeName) await this.remove(p, ctx, 0);
    }
  }
}
