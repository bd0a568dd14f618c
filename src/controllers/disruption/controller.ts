/**
 * The disruption controller (`disruption`), as kube-controller-manager's:
 *
 * - each PodDisruptionBudget's status: expectedPods, currentHealthy (Ready,
 *   not terminating, not just evicted), desiredHealthy, disruptionsAllowed
 *   (none while no Pods are expected), the disruptedPods entries still in
 *   force (requeued for when the earliest runs out; one that ran out without
 *   its Pod's deletion gets a NotDeleted Event), observedGeneration, and the
 *   DisruptionAllowed condition (SufficientPods, InsufficientPods). For
 *   maxUnavailable and a percent minAvailable the expected count is the sum
 *   of the replicas of the Pods' controllers: a Deployment's for the Pods of
 *   its ReplicaSets, a ReplicaSet's, or any other kind's scale subresource.
 *   When that cannot be known (a controller that is gone, or a kind without
 *   a scale subresource), the budget allows
 *   no disruption and says why (SyncFailed, with a
 *   CalculateExpectedPodCountFailed Event); Pods without a controller are
 *   left out of the count with an UnmanagedPods Event; a budget selecting no
 *   Pod gets a NoPods Event;
 * - a Pod several budgets select gets a MultiplePodDisruptionBudgets Event
 *   (an eviction of it is refused);
 * - a Pod whose DisruptionTarget condition (set by an eviction) has been True
 *   for the stale timeout (2 minutes) without its deletion gets it set False.
 */
import type { KubeObject, OwnerReference, Pod, PodDisruptionBudget } from "@setpoint/api";
import { deepEqual, matchesLabels } from "@setpoint/api";
import {
  type Client,
  type EventRecorder,
  type Informer,
  isConflict,
  isNotFound,
  type Manager,
  type ReconcileContext,
  Recorder,
  type Request,
  type Result,
} from "@setpoint/runtime";
import type { BuiltinController } from "../builtin-controller.ts";
import { appsControllerOf, selectorOf } from "../controller-ref.ts";
import {
  allowedCondition,
  conditionsUpToDate,
  countHealthy,
  DISRUPTED_POD_TIMEOUT_MS,
  DISRUPTION_ALLOWED,
  desired,
  disruptionsAllowed,
  goSelector,
  liveDisruptions,
  needsScale,
  type PdbStatus,
  SYNC_FAILED,
  setCondition,
  stamp,
} from "./status.ts";

/** The controller's name (what `--disable` takes). */
export const DISRUPTION_CONTROLLER = "disruption";
export const DEFAULT_DISRUPTION_WORKERS = 4;
/** How long an eviction's DisruptionTarget condition may stay True on a Pod that is not deleted. */
export const DEFAULT_STALE_POD_DISRUPTION_TIMEOUT_MS = 2 * 60 * 1000;
/** The Events' source component, as kube-controller-manager's disruption controller names it. */
export const DISRUPTION_EVENT_SOURCE = "controllermanager";

const PDB = { apiVersion: "policy/v1", kind: "PodDisruptionBudget" } as const;
const POD = { apiVersion: "v1", kind: "Pod" } as const;
const RS = { apiVersion: "apps/v1", kind: "ReplicaSet" } as const;
const DEPLOYMENT = { apiVersion: "apps/v1", kind: "Deployment" } as const;

export interface DisruptionControllerOptions {
  workers?: number;
  /** How long an entry of disruptedPods holds (default 2 min, Kubernetes' DeletionTimeout). */
  disruptedPodTimeoutMs?: number;
  /** How long an eviction's DisruptionTarget=True may stay on a Pod not deleted (default 2 min). */
  stalePodDisruptionTimeoutMs?: number;
}

interface Scaled extends KubeObject {
  spec?: { replicas?: number };
}

/** The Pods a budget selects (a missing selector selects none; an empty one, all). */
export function podsOf(pdb: PodDisruptionBudget, pods: readonly Pod[]): Pod[] {
  if (!pdb.spec?.selector) return [];
  const sel = selectorOf(pdb.spec.selector);
  return pods.filter((p) => matchesLabels(sel, p.metadata.labels));
}

function selects(pdb: PodDisruptionBudget, pod: Pod): boolean {
  try {
    return podsOf(pdb, [pod]).length > 0;
  } catch {
    return false;
  }
}

function controllerRefOf(obj: KubeObject): OwnerReference | undefined {
  return obj.metadata.ownerReferences?.find((r) => r.controller === true);
}

export class DisruptionController implements BuiltinController {
  readonly name = DISRUPTION_CONTROLLER;
  private pods!: Informer<Pod>;
  private pdbs!: Informer<PodDisruptionBudget>;
  private replicaSets!: Informer<Scaled>;
  private deployments!: Informer<Scaled>;
  private recorder!: EventRecorder;
  private readonly disruptedPodTimeoutMs: number;
  private readonly staleTimeoutMs: number;

  constructor(private readonly opts: DisruptionControllerOptions = {}) {
    this.disruptedPodTimeoutMs = opts.disruptedPodTimeoutMs ?? DISRUPTED_POD_TIMEOUT_MS;
    this.staleTimeoutMs =
      opts.stalePodDisruptionTimeoutMs ?? DEFAULT_STALE_POD_DISRUPTION_TIMEOUT_MS;
  }

  setup(mgr: Manager, client: Client = mgr.client): void {
    this.recorder = new Recorder(client, {
      component: DISRUPTION_EVENT_SOURCE,
      instance: mgr.identity,
    });
    this.pods = mgr.cache.informerFor<Pod>(POD);
    this.pdbs = mgr.cache.informerFor<PodDisruptionBudget>(PDB);
    this.replicaSets = mgr.cache.informerFor<Scaled>(RS);
    this.deployments = mgr.cache.informerFor<Scaled>(DEPLOYMENT);
    const workers = this.opts.workers ?? DEFAULT_DISRUPTION_WORKERS;
    mgr
      .controller(DISRUPTION_CONTROLLER)
      .for(PDB)
      .watches<Pod>(POD, (p) => this.budgetsOf(p))
      .withOptions({ client, maxConcurrentReconciles: workers })
      .complete((req, ctx) => this.reconcile(req, ctx));
    mgr
      .controller(`${DISRUPTION_CONTROLLER}-stale-pod-disruption`)
      .for(POD)
      .withOptions({ client, maxConcurrentReconciles: workers })
      .complete((req, ctx) => this.reconcileStalePod(req, ctx));
  }

  /** The budgets selecting a Pod, for its events; a Warning Event when it is more than one. */
  private budgetsOf(p: Pod): Request[] {
    const matching = this.pdbs
      .list({ namespace: p.metadata.namespace })
      .filter((b) => selects(b, p));
    if (matching.length > 1) {
      this.recorder.warning(
        p,
        "MultiplePodDisruptionBudgets",
        `Pod "${p.metadata.namespace ?? ""}"/"${p.metadata.name ?? ""}" matches multiple PodDisruptionBudgets.  Chose "${matching[0].metadata.name ?? ""}" arbitrarily.`,
      );
    }
    return matching.map((b) => ({ namespace: b.metadata.namespace, name: b.metadata.name ?? "" }));
  }

  /** The replicas of a Pod's controller and its uid; undefined when it is not found. */
  private async controllerScale(
    ref: OwnerReference,
    namespace: string | undefined,
    ctx: ReconcileContext,
  ): Promise<{ uid: string; replicas: number } | undefined> {
    if (ref.kind === "ReplicaSet" && ref.apiVersion.startsWith("apps/")) {
      const rs = this.replicaSets.get(ref.name, namespace);
      if (rs && rs.metadata.uid === ref.uid) {
        // A Deployment's ReplicaSet: the Deployment's replicas are what is expected.
        const up = appsControllerOf(rs, "Deployment");
        const d = up ? this.deployments.get(up.name, namespace) : undefined;
        if (up && d && d.metadata.uid === up.uid) {
          return { uid: up.uid, replicas: d.spec?.replicas ?? 0 };
        }
        return { uid: rs.metadata.uid, replicas: rs.spec?.replicas ?? 0 };
      }
    }
    let scale: Scaled;
    try {
      scale = await ctx.client.get<Scaled>(
        { apiVersion: ref.apiVersion, kind: ref.kind },
        ref.name,
        namespace,
        { subresource: "scale" },
      );
    } catch (e) {
      if (!isNotFound(e)) throw e;
      // Gone, or a kind without a scale subresource: only the second is an error.
      const info = await ctx.client.client.resourceFor({
        apiVersion: ref.apiVersion,
        kind: ref.kind,
      });
      if (!info.subresources.includes("scale")) {
        const gr = info.group ? `${info.plural}.${info.group}` : info.plural;
        throw new Error(`${gr} does not implement the scale subresource`);
      }
      return undefined;
    }
    if (scale.metadata.uid !== ref.uid) return undefined;
    return { uid: ref.uid, replicas: scale.spec?.replicas ?? 0 };
  }

  /** The total replicas of the Pods' controllers, and the Pods that have none. */
  private async expectedScale(
    pods: readonly Pod[],
    ctx: ReconcileContext,
  ): Promise<{ total: number; unmanaged: string[] }> {
    const scales = new Map<string, number>();
    const unmanaged: string[] = [];
    for (const p of pods) {
      const ref = controllerRefOf(p);
      if (!ref) {
        unmanaged.push(p.metadata.name ?? "");
        continue;
      }
      if (scales.has(ref.uid)) continue;
      const found = await this.controllerScale(ref, p.metadata.namespace, ctx);
      if (!found) throw new Error(`found no controllers for pod "${p.metadata.name ?? ""}"`);
      scales.set(found.uid, found.replicas);
    }
    let total = 0;
    for (const n of scales.values()) total += n;
    return { total, unmanaged };
  }

  private async reconcile(req: Request, ctx: ReconcileContext): Promise<Result | undefined> {
    const pdb = this.pdbs.get(req.name, req.namespace);
    if (!pdb) return undefined;
    const now = Date.now();
    let pods: Pod[];
    try {
      pods = podsOf(pdb, this.pods.list({ namespace: req.namespace }));
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      this.recorder.warning(pdb, "NoPods", `Failed to get pods: ${message}`);
      await this.failSafe(pdb, message, now, ctx);
      return undefined;
    }
    if (pods.length === 0) this.recorder.normal(pdb, "NoPods", "No matching pods found");

    let expected: number;
    let desiredHealthy: number;
    try {
      const { total, unmanaged } = needsScale(pdb)
        ? await this.expectedScale(pods, ctx)
        : { total: 0, unmanaged: [] };
      ({ expected, desiredHealthy } = desired(pdb, pods.length, total));
      if (unmanaged.length > 0) {
        this.recorder.warning(
          pdb,
          "UnmanagedPods",
          `Pods selected by this PodDisruptionBudget (selector: ${goSelector(pdb.spec?.selector)}) were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set ".spec.minAvailable" field of the PDB to an integer value.`,
        );
      }
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      this.recorder.warning(
        pdb,
        "CalculateExpectedPodCountFailed",
        `Failed to calculate the number of expected pods: ${message}`,
      );
      ctx.log.info({ err: message }, "disruption budget sync failed");
      await this.failSafe(pdb, message, now, ctx);
      return undefined;
    }

    const { map, expired, expiresAt } = liveDisruptions(pdb, pods, now, this.disruptedPodTimeoutMs);
    for (const p of expired) {
      // Kubernetes names the budget's namespace twice in this message.
      const ns = pdb.metadata.namespace ?? "";
      this.recorder.warning(
        p,
        "NotDeleted",
        `Pod was expected by PDB ${ns}/${ns} to be deleted but it wasn't`,
      );
    }
    const currentHealthy = countHealthy(pods, map);
    const allowed = disruptionsAllowed(currentHealthy, desiredHealthy, expected);
    const old: Partial<PdbStatus> = pdb.status ?? {};
    const unchanged =
      (old.currentHealthy ?? 0) === currentHealthy &&
      (old.desiredHealthy ?? 0) === desiredHealthy &&
      (old.expectedPods ?? 0) === expected &&
      (old.disruptionsAllowed ?? 0) === allowed &&
      deepEqual(old.disruptedPods ?? {}, map) &&
      conditionsUpToDate(pdb);
    if (!unchanged) {
      const status: PdbStatus = {
        currentHealthy,
        desiredHealthy,
        disruptionsAllowed: allowed,
        expectedPods: expected,
        observedGeneration: pdb.metadata.generation,
        ...(Object.keys(map).length > 0 ? { disruptedPods: map } : {}),
        conditions: allowedCondition(old.conditions, allowed, now),
      };
      await ctx.client.updateStatus<PodDisruptionBudget>({ ...structuredClone(pdb), status });
    }
    return expiresAt === undefined ? undefined : { requeueAfter: Math.max(1, expiresAt - now) };
  }

  /** No disruption allowed, and why (Kubernetes' failSafe): the rest of the status is kept. */
  private async failSafe(
    pdb: PodDisruptionBudget,
    message: string,
    now: number,
    ctx: ReconcileContext,
  ): Promise<void> {
    const old: Partial<PdbStatus> = pdb.status ?? {};
    const status: PdbStatus = {
      currentHealthy: 0,
      desiredHealthy: 0,
      expectedPods: 0,
      ...structuredClone(old),
      disruptionsAllowed: 0,
      conditions: setCondition(
        old.conditions,
        {
          type: DISRUPTION_ALLOWED,
          status: "False",
          reason: SYNC_FAILED,
          message,
          observedGeneration: old.observedGeneration,
        },
        now,
      ),
    };
    if (deepEqual(status, { currentHealthy: 0, desiredHealthy: 0, expectedPods: 0, ...old })) {
      return;
    }
    await ctx.client.updateStatus<PodDisruptionBudget>({ ...structuredClone(pdb), status });
  }

  /** Sets an eviction's DisruptionTarget=True to False once it is stale on a Pod still there. */
  private async reconcileStalePod(
    req: Request,
    ctx: ReconcileContext,
  ): Promise<Result | undefined> {
    const pod = this.pods.get(req.name, req.namespace);
    if (!pod || pod.metadata.deletionTimestamp) return undefined;
    const phase = pod.status?.phase;
    if (phase === "Succeeded" || phase === "Failed") return undefined;
    const conditions = pod.status?.conditions ?? [];
    const c = conditions.find((x) => x.type === "DisruptionTarget");
    // The kubelet's own (TerminationByKubelet) may take any time before the Pod terminates.
    if (c?.status !== "True" || c.reason === "TerminationByKubelet") return undefined;
    const now = Date.now();
    const wait = (Date.parse(c.lastTransitionTime ?? "") || 0) + this.staleTimeoutMs - now;
    if (wait > 0) return { requeueAfter: wait };
    const status = structuredClone(pod.status ?? {});
    status.conditions = conditions.map((x) =>
      x.type === "DisruptionTarget"
        ? { type: "DisruptionTarget", status: "False", lastTransitionTime: stamp(now) }
        : x,
    );
    try {
      await ctx.client.updateStatus<Pod>({ ...structuredClone(pod), status });
      ctx.log.info("reset stale DisruptionTarget condition to False");
    } catch (e) {
      if (!isNotFound(e) && !isConflict(e)) throw e;
      if (isConflict(e)) return { requeueAfter: 100 };
    }
    return undefined;
  }
}
