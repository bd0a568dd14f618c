/**
 * The ReplicaSet controller: keeps `spec.replicas` Pods of a ReplicaSet's
 * template running.
 *
 * Each reconcile of a ReplicaSet:
 * 1. claims its Pods (controller-ref.ts): those whose controller reference
 *    names it by UID (read from the Pod informer's controller-UID index, never
 *    by scanning the namespace), plus orphans matching its selector (adopted);
 *    owned Pods that stopped matching are released;
 * 2. unless its expectations (expectations.ts) are still unmet, creates the
 *    missing Pods in slow-start batches of 1, 2, 4, ... that stop at the
 *    first failure, or deletes the surplus, least useful first (pods.ts);
 *    at most BURST_REPLICAS per pass;
 * 3. writes status (status.ts) when it changed, and looks again when a ready
 *    Pod will have been ready for minReadySeconds.
 *
 * Events as Kubernetes records them, from `replicaset-controller`:
 * SuccessfulCreate "Created pod: NAME", SuccessfulDelete "Deleted pod: NAME",
 * FailedCreate "Error creating: ...", FailedDelete "Error deleting: ...".
 */
import type { Pod, ReplicaSet } from "@setpoint/api";
import { deepClone, type LabelSelector, matchesLabels } from "@setpoint/api";
import {
  type Client,
  CONTROLLER_UID_INDEX,
  type EventRecorder,
  type Informer,
  isNotFound,
  type Manager,
  type ReconcileContext,
  Recorder,
  type Request,
  type Result,
  TerminalError,
} from "@setpoint/runtime";
import type { BuiltinController } from "../builtin-controller.ts";
import {
  appsControllerOf,
  claimObjects,
  ORPHAN_INDEX,
  orphanIndex,
  ownersToWake,
  selectorOf,
} from "../controller-ref.ts";
import { Expectations } from "./expectations.ts";
import { isPodActive, podFromTemplate, sortPodsForDeletion } from "./pods.ts";
import { replicaSetStatus, statusChanged } from "./status.ts";

/** The controller's name (what `--disable` takes). */
export const REPLICASET_CONTROLLER = "replicaset";
/** Concurrent reconciles (Kubernetes' --concurrent-replicaset-syncs default). */
export const DEFAULT_REPLICASET_WORKERS = 5;
/** Most Pods created or deleted in one pass (Kubernetes' BurstReplicas). */
export const BURST_REPLICAS = 500;
/** The first slow-start batch (Kubernetes' SlowStartInitialBatchSize). */
export const SLOW_START_INITIAL_BATCH = 1;
/** The Events' source component, as Kubernetes names it. */
export const REPLICASET_EVENT_SOURCE = "replicaset-controller";

const POD = { apiVersion: "v1", kind: "Pod" } as const;
const RS = { apiVersion: "apps/v1", kind: "ReplicaSet" } as const;

export interface ReplicaSetControllerOptions {
  workers?: number;
}

/** The `namespace/name` of the ReplicaSet controlling a Pod, if one does. */
function ownerKey(p: Pod): string | undefined {
  const ref = appsControllerOf(p, "ReplicaSet");
  return ref ? `${p.metadata.namespace ?? ""}/${ref.name}` : undefined;
}

/**
 * Runs `fn` `count` times in batches of 1, 2, 4, ... (each batch at once);
 * stops after the first batch with a failure. Returns the successes and the
 * errors; calls not made are `count - successes - errors.length`.
 */
export async function slowStartBatch(
  count: number,
  initial: number,
  fn: () => Promise<void>,
): Promise<{ successes: number; errors: unknown[] }> {
  let remaining = count;
  let successes = 0;
  for (
    let batch = Math.min(remaining, initial);
    batch > 0;
    batch = Math.min(2 * batch, remaining)
  ) {
    const results = await Promise.allSettled(Array.from({ length: batch }, () => fn()));
    const errors = results.flatMap((r) => (r.status === "rejected" ? [r.reason] : []));
    successes += batch - errors.length;
    if (errors.length > 0) return { successes, errors };
    remaining -= batch;
  }
  return { successes, errors: [] };
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export class ReplicaSetController implements BuiltinController {
  readonly name = REPLICASET_CONTROLLER;
  readonly expectations = new Expectations();
  private pods!: Informer<Pod>;
  private sets!: Informer<ReplicaSet>;
  private recorder!: EventRecorder;

  constructor(private readonly opts: ReplicaSetControllerOptions = {}) {}

  setup(mgr: Manager, client: Client = mgr.client): void {
    this.recorder = new Recorder(client, {
      component: REPLICASET_EVENT_SOURCE,
      instance: mgr.identity,
    });
    this.pods = mgr.cache.informerFor<Pod>(POD);
    this.pods.addIndex(ORPHAN_INDEX, orphanIndex);
    this.sets = mgr.cache.informerFor<ReplicaSet>(RS);
    // Lower expectations before the watch below enqueues the owner.
    this.pods.addEventHandler({
      onAdd: (p) => this.observe(p, undefined),
      onUpdate: (old, p) => this.observe(p, old),
      onDelete: (p) => {
        const k = ownerKey(p);
        if (k) this.expectations.deletionObserved(k, p.metadata.uid ?? "");
      },
    });
    mgr
      .controller(REPLICASET_CONTROLLER)
      .for(RS)
      .watches<Pod>(POD, (p) =>
        ownersToWake(p, "ReplicaSet", (ns) => this.sets.list({ namespace: ns })),
      )
      .withOptions({
        client,
        maxConcurrentReconciles: this.opts.workers ?? DEFAULT_REPLICASET_WORKERS,
      })
      .complete((req, ctx) => this.reconcile(req, ctx));
  }

  private observe(p: Pod, old: Pod | undefined): void {
    const k = ownerKey(p);
    if (!k) return;
    if (p.metadata.deletionTimestamp) {
      if (!old?.metadata.deletionTimestamp)
        this.expectations.deletionObserved(k, p.metadata.uid ?? "");
    } else if (!old) {
      this.expectations.creationObserved(k);
    }
  }

  private async reconcile(req: Request, ctx: ReconcileContext): Promise<Result | undefined> {
    const ns = req.namespace ?? "";
    const key = `${ns}/${req.name}`;
    let rs: ReplicaSet;
    try {
      rs = await ctx.reader.get<ReplicaSet>(RS, req.name, ns);
    } catch (e) {
      if (!isNotFound(e)) throw e;
      this.expectations.delete(key);
      return undefined;
    }
    let selector: LabelSelector;
    try {
      selector = selectorOf(rs.spec?.selector);
    } catch (e) {
      throw new TerminalError(`invalid selector: ${message(e)}`, { reason: "InvalidSelector" });
    }
    // Read before claiming: a Pod seen after this must not satisfy stale counts.
    const mayAct = this.expectations.satisfied(key);
    const { claimed } = await claimObjects<Pod>({
      owner: rs,
      type: POD,
      owned: this.pods.byIndex(CONTROLLER_UID_INDEX, rs.metadata.uid ?? ""),
      orphans: this.pods.byIndex(ORPHAN_INDEX, ns),
      matches: (p) => matchesLabels(selector, p.metadata.labels),
      client: ctx.client,
    });
    const active = claimed.filter(isPodActive);
    let failure: { reason: "FailedCreate" | "FailedDelete"; message: string } | undefined;
    if (mayAct && !rs.metadata.deletionTimestamp) {
      failure = await this.manageReplicas(key, rs, active, ctx);
    }
    const { status, recheckInMs } = replicaSetStatus(rs, active, failure);
    if (statusChanged(rs.status, status)) {
      const body = deepClone(rs);
      body.status = status;
      try {
        await ctx.client.updateStatus(body);
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
    }
    if (failure) throw new Error(failure.message);
    // A little after the Pod's minReadySeconds have passed, so it counts as available.
    return recheckInMs === undefined ? undefined : { requeueAfter: recheckInMs + 100 };
  }

  /** Creates or deletes Pods towards spec.replicas; returns the failure to report, if any. */
  private async manageReplicas(
    key: string,
    rs: ReplicaSet,
    active: Pod[],
    ctx: ReconcileContext,
  ): Promise<{ reason: "FailedCreate" | "FailedDelete"; message: string } | undefined> {
    const diff = active.length - (rs.spec?.replicas ?? 1);
    if (diff < 0) {
      const n = Math.min(-diff, BURST_REPLICAS);
      this.expectations.expectCreations(key, n);
      const template = podFromTemplate(rs.spec?.template, rs, `${rs.metadata.name}-`);
      const { successes, errors } = await slowStartBatch(n, SLOW_START_INITIAL_BATCH, async () => {
        try {
          const pod = await ctx.client.create<Pod>(deepClone(template));
          this.recorder.normal(rs, "SuccessfulCreate", `Created pod: ${pod.metadata.name}`);
        } catch (e) {
          this.expectations.creationObserved(key);
          this.recorder.warning(rs, "FailedCreate", `Error creating: ${message(e)}`);
          throw e;
        }
      });
      // Pods not created because an earlier batch failed will not be seen either.
      for (let i = successes + errors.length; i < n; i++) this.expectations.creationObserved(key);
      if (errors.length > 0) return { reason: "FailedCreate", message: message(errors[0]) };
      return undefined;
    }
    if (diff > 0) {
      const victims = sortPodsForDeletion(active).slice(0, Math.min(diff, BURST_REPLICAS));
      this.expectations.expectDeletions(
        key,
        victims.map((p) => p.metadata.uid ?? ""),
      );
      const results = await Promise.allSettled(
        victims.map(async (p) => {
          try {
            await ctx.client.delete(POD, p.metadata.name ?? "", p.metadata.namespace, {
              preconditions: { uid: p.metadata.uid },
            });
            this.recorder.normal(rs, "SuccessfulDelete", `Deleted pod: ${p.metadata.name}`);
          } catch (e) {
            this.expectations.deletionObserved(key, p.metadata.uid ?? "");
            if (isNotFound(e)) return;
            this.recorder.warning(rs, "FailedDelete", `Error deleting: ${message(e)}`);
            throw e;
          }
        }),
      );
      const failed = results.find((r) => r.status === "rejected");
      if (failed) return { reason: "FailedDelete", message: message(failed.reason) };
    }
    return undefined;
  }
}
