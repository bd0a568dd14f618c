/**
 * The Deployment controller: rolls a Deployment's template out through
 * ReplicaSets named `<deployment>-<pod-template-hash>`.
 *
 * Each reconcile claims the Deployment's ReplicaSets (by controller UID from
 * the ReplicaSet informer's index, adopting matching orphans and releasing
 * those that stop matching), then, as Kubernetes' syncDeployment does:
 * - a Deployment being deleted only gets its status updated;
 * - pausing and resuming set Progressing to Unknown with DeploymentPaused /
 *   DeploymentResumed;
 * - paused, or a change of replicas alone: scale (proportionally during a
 *   rollout) and, when paused, clean up old ReplicaSets;
 * - otherwise the strategy's rollout (rolling.ts, recreate.ts).
 *
 * Events from `deployment-controller`: ScalingReplicaSet "Scaled up replica
 * set NAME from A to B" (and down), SelectorNone, ReplicaSetCreateError.
 */
import type { Deployment, Pod, ReplicaSet } from "@setpoint/api";
import { deepClone, isEverything, type LabelSelector, matchesLabels } from "@setpoint/api";
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
import { rolloutRecreate } from "./recreate.ts";
import { rolloutRolling } from "./rolling.ts";
import { Rollout } from "./sync.ts";
import {
  DESIRED_REPLICAS_ANNOTATION,
  getCondition,
  hasProgressDeadline,
  Reason,
  replicasOf,
} from "./util.ts";

/** The controller's name (what `--disable` takes). */
export const DEPLOYMENT_CONTROLLER = "deployment";
/** Concurrent reconciles (Kubernetes' --concurrent-deployment-syncs default). */
export const DEFAULT_DEPLOYMENT_WORKERS = 5;
/** The Events' source component, as Kubernetes names it. */
export const DEPLOYMENT_EVENT_SOURCE = "deployment-controller";

const DEPLOYMENT = { apiVersion: "apps/v1", kind: "Deployment" } as const;
const RS = { apiVersion: "apps/v1", kind: "ReplicaSet" } as const;
const POD = { apiVersion: "v1", kind: "Pod" } as const;

export interface DeploymentControllerOptions {
  workers?: number;
}

export class DeploymentController implements BuiltinController {
  readonly name = DEPLOYMENT_CONTROLLER;
  private sets!: Informer<ReplicaSet>;
  private deployments!: Informer<Deployment>;
  private pods!: Informer<Pod>;
  private recorder!: EventRecorder;

  constructor(private readonly opts: DeploymentControllerOptions = {}) {}

  setup(mgr: Manager, client: Client = mgr.client): void {
    this.recorder = new Recorder(client, {
      component: DEPLOYMENT_EVENT_SOURCE,
      instance: mgr.identity,
    });
    this.sets = mgr.cache.informerFor<ReplicaSet>(RS);
    this.sets.addIndex(ORPHAN_INDEX, orphanIndex);
    this.deployments = mgr.cache.informerFor<Deployment>(DEPLOYMENT);
    this.pods = mgr.cache.informerFor<Pod>(POD);
    mgr
      .controller(DEPLOYMENT_CONTROLLER)
      .for(DEPLOYMENT)
      .watches<ReplicaSet>(RS, (rs) =>
        ownersToWake(rs, "Deployment", (ns) => this.deployments.list({ namespace: ns })),
      )
      // A Recreate rollout waits for the old Pods to be gone.
      .watches<Pod>(POD, (p) => this.deploymentOfPod(p), {
        predicates: [{ create: () => false, update: () => false, generic: () => false }],
      })
      .withOptions({
        client,
        maxConcurrentReconciles: this.opts.workers ?? DEFAULT_DEPLOYMENT_WORKERS,
      })
      .complete((req, ctx) => this.reconcile(req, ctx));
  }

  private deploymentOfPod(p: Pod): Request | undefined {
    const ns = p.metadata.namespace ?? "";
    const rsRef = appsControllerOf(p, "ReplicaSet");
    if (!rsRef) return undefined;
    const rs = this.sets.get(rsRef.name, ns);
    const dRef = rs && appsControllerOf(rs, "Deployment");
    if (!dRef) return undefined;
    const d = this.deployments.get(dRef.name, ns);
    return d?.spec?.strategy?.type === "Recreate" ? { namespace: ns, name: dRef.name } : undefined;
  }

  private async reconcile(req: Request, ctx: ReconcileContext): Promise<Result | undefined> {
    const ns = req.namespace ?? "";
    let cached: Deployment;
    try {
      cached = await ctx.reader.get<Deployment>(DEPLOYMENT, req.name, ns);
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
    const r = new Rollout(cached, ctx, this.recorder);
    const d = r.d;
    let selector: LabelSelector;
    try {
      selector = selectorOf(d.spec?.selector);
    } catch (e) {
      throw new TerminalError(`invalid selector: ${e instanceof Error ? e.message : String(e)}`, {
        reason: "InvalidSelector",
      });
    }
    if (isEverything(selector)) {
      this.recorder.warning(
        d,
        "SelectorNone",
        "This deployment is selecting all pods. A non-empty selector is required.",
      );
      if (d.metadata.generation !== d.status?.observedGeneration) {
        await r.writeStatus({
          ...deepClone(d.status ?? {}),
          observedGeneration: d.metadata.generation,
        });
      }
      return undefined;
    }
    const { claimed } = await claimObjects<ReplicaSet>({
      owner: { ...DEPLOYMENT, metadata: d.metadata },
      type: RS,
      owned: this.sets.byIndex(CONTROLLER_UID_INDEX, d.metadata.uid ?? ""),
      orphans: this.sets.byIndex(ORPHAN_INDEX, ns),
      matches: (rs) => matchesLabels(selector, rs.metadata.labels),
      client: ctx.client,
    });
    const rsList = claimed.map((rs) => deepClone(rs));

    if (d.metadata.deletionTimestamp) {
      const { newRS, oldRSs } = await r.newAndOld(rsList, false);
      await r.syncStatus(newRS ? [...oldRSs, newRS] : oldRSs, newRS);
      return undefined;
    }
    await this.checkPaused(r);
    if (r.d.spec?.paused || (await this.isScalingEvent(r, rsList))) {
      const { newRS, oldRSs } = await r.newAndOld(rsList, false);
      await r.scale(newRS, oldRSs);
      if (r.d.spec?.paused) await r.cleanup(oldRSs);
      // Read back what scaling wrote on the next pass; status now from what is known.
      await r.syncStatus(newRS ? [...oldRSs, newRS] : oldRSs, newRS);
      return undefined;
    }
    if (r.d.spec?.strategy?.type === "Recreate") {
      await rolloutRecreate(r, rsList, (rs) =>
        this.pods.byIndex(CONTROLLER_UID_INDEX, rs.metadata.uid ?? ""),
      );
    } else {
      await rolloutRolling(r, rsList);
    }
    return r.requeueAfterMs === undefined ? undefined : { requeueAfter: r.requeueAfterMs };
  }

  /** Progressing turns Unknown with DeploymentPaused / DeploymentResumed as the Deployment is paused or resumed. */
  private async checkPaused(r: Rollout): Promise<void> {
    const d = r.d;
    if (!hasProgressDeadline(d)) return;
    const c = getCondition(d.status, "Progressing");
    if (c?.reason === Reason.TimedOut) return;
    const pausedCond = c?.reason === Reason.Paused;
    if (d.spec?.paused && !pausedCond) {
      await r.setProgressing("Unknown", Reason.Paused, "Deployment is paused");
    } else if (!d.spec?.paused && pausedCond) {
      await r.setProgressing("Unknown", Reason.Resumed, "Deployment is resumed");
    }
  }

  /** Whether an active ReplicaSet was sized for another replica count than the Deployment's. */
  private async isScalingEvent(r: Rollout, rsList: ReplicaSet[]): Promise<boolean> {
    const { newRS, oldRSs } = await r.newAndOld(rsList, false);
    const all = newRS ? [...oldRSs, newRS] : oldRSs;
    for (const rs of all) {
      if ((rs.spec?.replicas ?? 0) === 0) continue;
      const desired = rs.metadata.annotations?.[DESIRED_REPLICAS_ANNOTATION];
      if (desired !== undefined && desired !== String(replicasOf(r.d))) return true;
    }
    return false;
  }
}
