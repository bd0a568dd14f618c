/**
 * One pass over one Deployment, with Kubernetes' steps: find (or create) the
 * new ReplicaSet and keep revisions in sync, scale ReplicaSets (proportionally
 * during a rollout), clean up old ReplicaSets beyond revisionHistoryLimit,
 * and compute and write the Deployment's status and conditions.
 *
 * A Rollout holds the Deployment as last written (each write returns the new
 * object, so later writes in the same pass do not conflict with earlier ones).
 */
import type { Deployment, DeploymentStatus, ReplicaSet } from "@setpoint/api";
import { deepClone } from "@setpoint/api";
import {
  type EventRecorder,
  isAlreadyExists,
  isNotFound,
  type ReconcileContext,
} from "@setpoint/runtime";
import { controllerRefTo } from "../controller-ref.ts";
import {
  byCreation,
  DESIRED_REPLICAS_ANNOTATION,
  deploymentComplete,
  deploymentProgressing,
  deploymentTimedOut,
  equalIgnoreHash,
  getCondition,
  hasProgressDeadline,
  isRollingUpdate,
  MAX_REPLICAS_ANNOTATION,
  maxRevision,
  maxSurge,
  maxUnavailable,
  newCondition,
  POD_TEMPLATE_HASH_LABEL,
  podTemplateHash,
  REVISION_ANNOTATION,
  Reason,
  removeCondition,
  replicasAnnotationsNeedUpdate,
  replicasOf,
  revisionOf,
  setCondition,
  setNewReplicaSetAnnotations,
  setReplicasAnnotations,
  sumSpec,
  sumStatus,
} from "./util.ts";

const RS = { apiVersion: "apps/v1", kind: "ReplicaSet" } as const;
const DEPLOYMENT = { apiVersion: "apps/v1", kind: "Deployment" } as const;

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export class Rollout {
  /** The Deployment as last written (a mutable copy). */
  d: Deployment;
  /** When to look again (a stalled rollout's deadline), if at all. */
  requeueAfterMs: number | undefined;

  constructor(
    d: Deployment,
    private readonly ctx: ReconcileContext,
    private readonly recorder: EventRecorder,
    private readonly now: () => number = Date.now,
  ) {
    this.d = deepClone(d);
  }

  // --- the new ReplicaSet and revisions ------------------------------------

  /**
   * The new ReplicaSet (whose template is the Deployment's) and the old ones.
   * With `create`, makes the new one when there is none. Keeps the new one's
   * revision above every old one's and the Deployment's revision annotation
   * equal to it.
   */
  async newAndOld(
    rsList: ReplicaSet[],
    create: boolean,
  ): Promise<{ newRS: ReplicaSet | undefined; oldRSs: ReplicaSet[] }> {
    const sorted = [...rsList].sort(byCreation);
    const existing = sorted.find((rs) => equalIgnoreHash(rs.spec?.template, this.d.spec?.template));
    const oldRSs = sorted.filter((rs) => rs !== existing);
    const newRevision = maxRevision(oldRSs) + 1;
    if (existing) return { newRS: await this.syncExisting(existing, newRevision), oldRSs };
    if (!create) return { newRS: undefined, oldRSs };
    return { newRS: await this.createNew(oldRSs, newRevision), oldRSs };
  }

  private async syncExisting(existing: ReplicaSet, newRevision: number): Promise<ReplicaSet> {
    const d = this.d;
    let rs = existing;
    const copy = deepClone(existing);
    const annotationsChanged = setNewReplicaSetAnnotations(d, copy, newRevision, true);
    const minReady = d.spec?.minReadySeconds ?? 0;
    if (annotationsChanged || (copy.spec?.minReadySeconds ?? 0) !== minReady) {
      if (copy.spec) copy.spec.minReadySeconds = minReady;
      rs = await this.ctx.client.update(copy);
    }
    await this.setRevision(rs.metadata.annotations?.[REVISION_ANNOTATION]);
    if (hasProgressDeadline(d) && !getCondition(d.status, "Progressing")) {
      await this.setProgressing(
        "True",
        Reason.FoundNewReplicaSet,
        `Found new replica set "${rs.metadata.name}"`,
      );
    }
    return rs;
  }

  private async createNew(oldRSs: ReplicaSet[], newRevision: number): Promise<ReplicaSet> {
    const d = this.d;
    const name = d.metadata.name ?? "";
    const template = deepClone(d.spec?.template ?? {});
    const hash = podTemplateHash(template, d.status?.collisionCount);
    template.metadata ??= {};
    template.metadata.labels = { ...template.metadata.labels, [POD_TEMPLATE_HASH_LABEL]: hash };
    const selector = deepClone(d.spec?.selector ?? {});
    selector.matchLabels = { ...selector.matchLabels, [POD_TEMPLATE_HASH_LABEL]: hash };
    const rs: ReplicaSet = {
      ...RS,
      metadata: {
        name: `${name}-${hash}`,
        namespace: d.metadata.namespace,
        labels: template.metadata.labels,
        ownerReferences: [controllerRefTo({ ...DEPLOYMENT, metadata: d.metadata })],
      },
      spec: { replicas: 0, minReadySeconds: d.spec?.minReadySeconds ?? 0, selector, template },
    };
    const replicas = newReplicaSetReplicas(d, [...oldRSs, rs], rs);
    if (rs.spec) rs.spec.replicas = replicas;
    setNewReplicaSetAnnotations(d, rs, newRevision, false);
    let created: ReplicaSet;
    let alreadyExisted = false;
    try {
      created = await this.ctx.client.create(rs);
    } catch (e) {
      if (!isAlreadyExists(e)) {
        if (hasProgressDeadline(d)) {
          const msg = `Failed to create new replica set "${rs.metadata.name}": ${message(e)}`;
          await this.setProgressing("False", Reason.FailedRSCreate, msg);
          this.recorder.warning(d, Reason.FailedRSCreate, msg);
        }
        throw e;
      }
      const there = await this.ctx.client.get<ReplicaSet>(
        RS,
        rs.metadata.name ?? "",
        d.metadata.namespace,
      );
      const ours = there.metadata.ownerReferences?.some(
        (r) => r.controller === true && r.uid === d.metadata.uid,
      );
      if (!ours || !equalIgnoreHash(there.spec?.template, d.spec?.template)) {
        // A hash collision: another template hashed to this name. Count it and try again.
        const status = deepClone(d.status ?? {});
        status.collisionCount = (status.collisionCount ?? 0) + 1;
        await this.writeStatus(status);
        throw new Error(
          `hash collision for replica set ${rs.metadata.name}; collisionCount now ${status.collisionCount}`,
        );
      }
      created = there;
      alreadyExisted = true;
    }
    if (!alreadyExisted && replicas > 0) {
      this.recorder.normal(
        d,
        "ScalingReplicaSet",
        `Scaled up replica set ${created.metadata.name} from 0 to ${replicas}`,
      );
    }
    await this.setRevision(String(newRevision));
    if (!alreadyExisted && hasProgressDeadline(d)) {
      await this.setProgressing(
        "True",
        Reason.NewReplicaSet,
        `Created new replica set "${created.metadata.name}"`,
      );
    }
    return created;
  }

  /** Sets the Deployment's revision annotation (a metadata patch) when it differs. */
  private async setRevision(revision: string | undefined): Promise<void> {
    if (revision === undefined || this.d.metadata.annotations?.[REVISION_ANNOTATION] === revision)
      return;
    const out = await this.ctx.client.patch<Deployment>(
      DEPLOYMENT,
      this.d.metadata.name ?? "",
      this.d.metadata.namespace,
      { metadata: { annotations: { [REVISION_ANNOTATION]: revision } } },
      { type: "merge" },
    );
    this.d = deepClone(out);
  }

  /** Sets the Progressing condition, writing the status when that changes it. */
  async setProgressing(
    status: "True" | "False" | "Unknown",
    reason: string,
    message: string,
  ): Promise<void> {
    const s = deepClone(this.d.status ?? {});
    if (setCondition(s, newCondition("Progressing", status, reason, message))) {
      await this.writeStatus(s);
    }
  }

  /** Writes the Deployment's status through the status subresource. */
  async writeStatus(status: DeploymentStatus): Promise<void> {
    const body = deepClone(this.d);
    body.status = status;
    this.d = deepClone(await this.ctx.client.updateStatus(body));
  }

  // --- scaling ---------------------------------------------------------------

  /**
   * Scales a ReplicaSet (and brings its desired/max-replicas annotations up to
   * date); records "Scaled up|down replica set NAME from A to B". Returns the
   * ReplicaSet as written and whether its size changed.
   */
  async scaleReplicaSet(rs: ReplicaSet, to: number): Promise<{ rs: ReplicaSet; scaled: boolean }> {
    const d = this.d;
    const from = rs.spec?.replicas ?? 0;
    const sizeChanges = from !== to;
    const max = replicasOf(d) + maxSurge(d);
    if (!sizeChanges && !replicasAnnotationsNeedUpdate(rs, replicasOf(d), max)) {
      return { rs, scaled: false };
    }
    const copy = deepClone(rs);
    copy.spec = { ...copy.spec, replicas: to } as ReplicaSet["spec"];
    setReplicasAnnotations(copy, replicasOf(d), max);
    const out = await this.ctx.client.update(copy);
    if (sizeChanges) {
      const op = to > from ? "up" : "down";
      this.recorder.normal(
        d,
        "ScalingReplicaSet",
        `Scaled ${op} replica set ${rs.metadata.name} from ${from} to ${to}`,
      );
    }
    return { rs: out, scaled: sizeChanges };
  }

  /** Scales only when the size changes. */
  async scaleAndRecord(rs: ReplicaSet, to: number): Promise<{ rs: ReplicaSet; scaled: boolean }> {
    if ((rs.spec?.replicas ?? 0) === to) return { rs, scaled: false };
    return this.scaleReplicaSet(rs, to);
  }

  /**
   * Scaling while not rolling out (or paused): one active ReplicaSet takes the
   * new size; a saturated new ReplicaSet retires the old ones; otherwise the
   * difference is spread over the active ReplicaSets in proportion to their
   * size (Kubernetes' proportional scaling).
   */
  async scale(newRS: ReplicaSet | undefined, oldRSs: ReplicaSet[]): Promise<void> {
    const d = this.d;
    const desired = replicasOf(d);
    const active = [...(newRS ? [newRS] : []), ...oldRSs].filter(
      (rs) => (rs.spec?.replicas ?? 0) > 0,
    );
    let single: ReplicaSet | undefined;
    if (active.length === 0) single = newRS ?? [...oldRSs].sort(byCreation).at(-1);
    else if (active.length === 1) single = active[0];
    if (single || active.length <= 1) {
      if (single && (single.spec?.replicas ?? 0) !== desired)
        await this.scaleReplicaSet(single, desired);
      return;
    }
    if (newRS && isSaturated(d, newRS)) {
      for (const old of oldRSs)
        if ((old.spec?.replicas ?? 0) > 0) await this.scaleReplicaSet(old, 0);
      return;
    }
    if (!isRollingUpdate(d)) return;
    const allowed = desired > 0 ? desired + maxSurge(d) : 0;
    const toAdd = allowed - sumSpec(active);
    const created = (rs: ReplicaSet) => Date.parse(rs.metadata.creationTimestamp ?? "") || 0;
    const sorted = [...active].sort((a, b) => {
      const size = (b.spec?.replicas ?? 0) - (a.spec?.replicas ?? 0);
      if (size !== 0) return size;
      return toAdd > 0 ? created(b) - created(a) : created(a) - created(b);
    });
    const sizes = new Map<ReplicaSet, number>();
    let added = 0;
    if (toAdd !== 0) {
      for (const rs of sorted) {
        const p = proportion(rs, d, toAdd, added);
        sizes.set(rs, (rs.spec?.replicas ?? 0) + p);
        added += p;
      }
    }
    for (const [i, rs] of sorted.entries()) {
      let size = sizes.get(rs) ?? rs.spec?.replicas ?? 0;
      if (i === 0 && toAdd !== 0) size = Math.max(0, size + (toAdd - added));
      await this.scaleReplicaSet(rs, size);
    }
  }

  // --- cleanup ---------------------------------------------------------------

  /** Deletes old, empty ReplicaSets beyond revisionHistoryLimit, lowest revision first. */
  async cleanup(oldRSs: ReplicaSet[]): Promise<void> {
    const limit = this.d.spec?.revisionHistoryLimit;
    if (limit === undefined) return;
    const alive = oldRSs.filter((rs) => !rs.metadata.deletionTimestamp);
    const diff = alive.length - limit;
    if (diff <= 0) return;
    alive.sort((a, b) => revisionOf(a) - revisionOf(b) || byCreation(a, b));
    for (const rs of alive.slice(0, diff)) {
      if (
        (rs.status?.replicas ?? 0) !== 0 ||
        (rs.spec?.replicas ?? 0) !== 0 ||
        (rs.metadata.generation ?? 0) > (rs.status?.observedGeneration ?? 0)
      ) {
        continue;
      }
      try {
        await this.ctx.client.delete(RS, rs.metadata.name ?? "", rs.metadata.namespace, {
          preconditions: { uid: rs.metadata.uid },
        });
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
    }
  }

  // --- status ----------------------------------------------------------------

  /** The status the ReplicaSets add up to, with the Available condition. */
  calculateStatus(allRSs: ReplicaSet[], newRS: ReplicaSet | undefined): DeploymentStatus {
    const d = this.d;
    const available = sumStatus(allRSs, "availableReplicas");
    const status: DeploymentStatus = deepClone(d.status ?? {});
    const set = (
      k:
        | "replicas"
        | "updatedReplicas"
        | "readyReplicas"
        | "availableReplicas"
        | "unavailableReplicas",
      v: number,
    ) => {
      if (v > 0) status[k] = v;
      else delete status[k];
    };
    if (d.metadata.generation !== undefined) status.observedGeneration = d.metadata.generation;
    set("replicas", sumStatus(allRSs, "replicas"));
    set("updatedReplicas", newRS?.status?.replicas ?? 0);
    set("readyReplicas", sumStatus(allRSs, "readyReplicas"));
    set("availableReplicas", available);
    set("unavailableReplicas", Math.max(0, sumSpec(allRSs) - available));
    if (available >= replicasOf(d) - maxUnavailable(d)) {
      setCondition(
        status,
        newCondition(
          "Available",
          "True",
          Reason.MinimumReplicasAvailable,
          "Deployment has minimum availability.",
        ),
      );
    } else {
      setCondition(
        status,
        newCondition(
          "Available",
          "False",
          Reason.MinimumReplicasUnavailable,
          "Deployment does not have minimum availability.",
        ),
      );
    }
    return status;
  }

  /** Writes the status if it changed (no progress estimation: paused, scaling, deleting). */
  async syncStatus(allRSs: ReplicaSet[], newRS: ReplicaSet | undefined): Promise<void> {
    const status = this.calculateStatus(allRSs, newRS);
    if (!sameStatus(this.d.status, status)) await this.writeStatus(status);
  }

  /** Writes the status with the Progressing condition estimated from progress and the deadline. */
  async syncRolloutStatus(allRSs: ReplicaSet[], newRS: ReplicaSet | undefined): Promise<void> {
    const d = this.d;
    const status = this.calculateStatus(allRSs, newRS);
    const now = this.now();
    if (!hasProgressDeadline(d)) removeCondition(status, "Progressing");
    const current = getCondition(status, "Progressing");
    const complete =
      (status.replicas ?? 0) === (status.updatedReplicas ?? 0) &&
      current?.reason === Reason.NewReplicaSetAvailable;
    if (hasProgressDeadline(d) && !complete) {
      const rsName = newRS?.metadata.name;
      if (deploymentComplete(d, status)) {
        const msg = rsName
          ? `ReplicaSet "${rsName}" has successfully progressed.`
          : `Deployment "${d.metadata.name}" has successfully progressed.`;
        setCondition(
          status,
          newCondition("Progressing", "True", Reason.NewReplicaSetAvailable, msg),
        );
      } else if (deploymentProgressing(d, status)) {
        const msg = rsName
          ? `ReplicaSet "${rsName}" is progressing.`
          : `Deployment "${d.metadata.name}" is progressing.`;
        const c = newCondition("Progressing", "True", Reason.ReplicaSetUpdated, msg);
        if (current?.status === "True" && current.lastTransitionTime) {
          c.lastTransitionTime = current.lastTransitionTime;
        }
        status.conditions = [
          ...(status.conditions ?? []).filter((x) => x.type !== "Progressing"),
          c,
        ];
      } else if (deploymentTimedOut(d, status, now)) {
        const msg = rsName
          ? `ReplicaSet "${rsName}" has timed out progressing.`
          : `Deployment "${d.metadata.name}" has timed out progressing.`;
        setCondition(status, newCondition("Progressing", "False", Reason.TimedOut, msg));
      }
    }
    const failure = replicaFailure(allRSs, newRS);
    if (failure) setCondition(status, failure);
    else removeCondition(status, "ReplicaFailure");
    if (!sameStatus(d.status, status)) {
      await this.writeStatus(status);
      return;
    }
    // Nothing new: look again when the progress deadline would pass.
    const c = getCondition(status, "Progressing");
    if (!c || c.reason === Reason.TimedOut || deploymentComplete(d, status)) return;
    const from = Date.parse(c.lastUpdateTime ?? "");
    if (Number.isNaN(from)) return;
    const at = from + (d.spec?.progressDeadlineSeconds ?? 600) * 1000;
    this.requeueAfterMs = Math.max(0, at - now) + 1000;
  }
}

/** Replicas for the new ReplicaSet: Recreate takes all at once; RollingUpdate up to the surge. */
export function newReplicaSetReplicas(
  d: Deployment,
  allRSs: ReplicaSet[],
  newRS: ReplicaSet,
): number {
  const desired = replicasOf(d);
  const current = newRS.spec?.replicas ?? 0;
  if (!isRollingUpdate(d)) return desired;
  const maxTotal = desired + maxSurge(d);
  const total = sumSpec(allRSs);
  if (total >= maxTotal) return current;
  return current + Math.min(maxTotal - total, desired - current);
}

function isSaturated(d: Deployment, rs: ReplicaSet): boolean {
  const desired = rs.metadata.annotations?.[DESIRED_REPLICAS_ANNOTATION];
  return (
    (rs.spec?.replicas ?? 0) === replicasOf(d) &&
    desired === String(replicasOf(d)) &&
    (rs.status?.availableReplicas ?? 0) === replicasOf(d)
  );
}

/** A ReplicaSet's share of `toAdd`, from its size relative to the max-replicas it was sized for. */
function proportion(rs: ReplicaSet, d: Deployment, toAdd: number, added: number): number {
  const size = rs.spec?.replicas ?? 0;
  if (size === 0 || toAdd === 0 || toAdd === added) return 0;
  let fraction: number;
  if (replicasOf(d) === 0) fraction = -size;
  else {
    const target = replicasOf(d) + maxSurge(d);
    const annotated = Number.parseInt(rs.metadata.annotations?.[MAX_REPLICAS_ANNOTATION] ?? "", 10);
    const base = Number.isNaN(annotated) ? (d.status?.replicas ?? 0) : annotated;
    fraction = base > 0 ? Math.round((size * target) / base) - size : 0;
  }
  const allowed = toAdd - added;
  return toAdd > 0 ? Math.min(fraction, allowed) : Math.max(fraction, allowed);
}

function replicaFailure(allRSs: ReplicaSet[], newRS: ReplicaSet | undefined) {
  const order = newRS ? [newRS, ...allRSs.filter((rs) => rs !== newRS)] : allRSs;
  for (const rs of order) {
    const c = rs.status?.conditions?.find(
      (x) => x.type === "ReplicaFailure" && x.status === "True",
    );
    if (c) {
      return newCondition("ReplicaFailure", "True", c.reason ?? "", c.message ?? "");
    }
  }
  return undefined;
}

/** Whether two statuses are the same (absent counts equal 0; conditions compared in full). */
export function sameStatus(a: DeploymentStatus | undefined, b: DeploymentStatus): boolean {
  const n = (x: number | undefined) => x ?? 0;
  const keys = [
    "observedGeneration",
    "replicas",
    "updatedReplicas",
    "readyReplicas",
    "availableReplicas",
    "unavailableReplicas",
    "collisionCount",
  ] as const;
  for (const k of keys) if (n(a?.[k]) !== n(b[k])) return false;
  return JSON.stringify(a?.conditions ?? []) === JSON.stringify(b.conditions ?? []);
}
