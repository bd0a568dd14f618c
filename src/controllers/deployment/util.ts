/**
 * What the Deployment controller computes without writing anything: the
 * annotations it keeps on Deployments and ReplicaSets, the pod-template-hash,
 * surge and unavailability from the strategy, template equality, the
 * Deployment's conditions, and the sums over its ReplicaSets.
 */
import type {
  Deployment,
  DeploymentCondition,
  DeploymentStatus,
  PodTemplateSpec,
  ReplicaSet,
} from "@setpoint/api";
import { deepClone } from "@setpoint/api";

export const REVISION_ANNOTATION = "deployment.kubernetes.io/revision";
export const REVISION_HISTORY_ANNOTATION = "deployment.kubernetes.io/revision-history";
export const DESIRED_REPLICAS_ANNOTATION = "deployment.kubernetes.io/desired-replicas";
export const MAX_REPLICAS_ANNOTATION = "deployment.kubernetes.io/max-replicas";
export const POD_TEMPLATE_HASH_LABEL = "pod-template-hash";
/** The longest revision-history annotation (Kubernetes' default). */
export const MAX_REVISION_HISTORY_CHARS = 2000;

/** Annotations of a Deployment that are not copied to its ReplicaSets. */
const NOT_COPIED = new Set([
  "kubectl.kubernetes.io/last-applied-configuration",
  REVISION_ANNOTATION,
  REVISION_HISTORY_ANNOTATION,
  DESIRED_REPLICAS_ANNOTATION,
  MAX_REPLICAS_ANNOTATION,
  "deprecated.deployment.rollback.to",
]);

/** Kubernetes' condition reasons and the Deployment's condition types. */
export const Reason = {
  NewReplicaSet: "NewReplicaSetCreated",
  FoundNewReplicaSet: "FoundNewReplicaSet",
  ReplicaSetUpdated: "ReplicaSetUpdated",
  NewReplicaSetAvailable: "NewReplicaSetAvailable",
  TimedOut: "ProgressDeadlineExceeded",
  FailedRSCreate: "ReplicaSetCreateError",
  Paused: "DeploymentPaused",
  Resumed: "DeploymentResumed",
  MinimumReplicasAvailable: "MinimumReplicasAvailable",
  MinimumReplicasUnavailable: "MinimumReplicasUnavailable",
} as const;

/** A timestamp as Kubernetes writes one (seconds). */
export function nowTimestamp(now: number = Date.now()): string {
  return new Date(now).toISOString().replace(/\.\d+Z$/, "Z");
}

export function replicasOf(o: Deployment | ReplicaSet): number {
  return o.spec?.replicas ?? 1;
}

// --- strategy --------------------------------------------------------------

function scaled(v: number | string | undefined, total: number, roundUp: boolean): number {
  if (v === undefined) return 0;
  if (typeof v === "number") return v;
  const m = /^(\d+)%$/.exec(v);
  if (!m) {
    const n = Number.parseInt(v, 10);
    return Number.isNaN(n) ? 0 : n;
  }
  const x = (Number(m[1]) * total) / 100;
  return roundUp ? Math.ceil(x) : Math.floor(x);
}

/** maxSurge (rounded up) and maxUnavailable (rounded down); both 0 makes unavailable 1. */
export function fenceposts(d: Deployment): { surge: number; unavailable: number } {
  const ru = d.spec?.strategy?.rollingUpdate;
  const desired = replicasOf(d);
  const surge = scaled(ru?.maxSurge ?? "25%", desired, true);
  let unavailable = scaled(ru?.maxUnavailable ?? "25%", desired, false);
  if (surge === 0 && unavailable === 0) unavailable = 1;
  return { surge, unavailable };
}

export function isRollingUpdate(d: Deployment): boolean {
  return (d.spec?.strategy?.type ?? "RollingUpdate") === "RollingUpdate";
}

/** The surge a rolling update allows (0 for Recreate). */
export function maxSurge(d: Deployment): number {
  return isRollingUpdate(d) ? fenceposts(d).surge : 0;
}

/** The unavailability a rolling update allows, at most replicas (0 for Recreate). */
export function maxUnavailable(d: Deployment): number {
  const n = replicasOf(d);
  if (!isRollingUpdate(d) || n === 0) return 0;
  return Math.min(fenceposts(d).unavailable, n);
}

export function hasProgressDeadline(d: Deployment): boolean {
  const s = d.spec?.progressDeadlineSeconds;
  return s !== undefined && s !== 2147483647;
}

// --- templates and hashes ----------------------------------------------------

/** JSON with keys sorted, so equal objects print equal. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  if (v && typeof v === "object") {
    const entries = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonicalJson(x)}`).join(",")}}`;
  }
  return JSON.stringify(v);
}

/** Characters of Kubernetes' rand.SafeEncodeString (no vowels, no confusable digits). */
const SAFE = "bcdfghjklmnpqrstvwxz2456789";

/** The pod-template-hash of a template: FNV-1a over its canonical JSON and the collision count. */
export function podTemplateHash(t: PodTemplateSpec | undefined, collisionCount?: number): string {
  let h = 0x811c9dc5;
  const text =
    canonicalJson(t ?? {}) + (collisionCount === undefined ? "" : String(collisionCount));
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return [...String(h)].map((c) => SAFE[c.charCodeAt(0) % SAFE.length]).join("");
}

function withoutHash(t: PodTemplateSpec | undefined): PodTemplateSpec {
  const c = deepClone(t ?? {});
  if (c.metadata?.labels) {
    delete c.metadata.labels[POD_TEMPLATE_HASH_LABEL];
    if (Object.keys(c.metadata.labels).length === 0) delete c.metadata.labels;
  }
  return c;
}

/** Whether two templates are equal but for the pod-template-hash label. */
export function equalIgnoreHash(
  a: PodTemplateSpec | undefined,
  b: PodTemplateSpec | undefined,
): boolean {
  return canonicalJson(withoutHash(a)) === canonicalJson(withoutHash(b));
}

// --- revisions and annotations ---------------------------------------------

export function revisionOf(o: Deployment | ReplicaSet): number {
  const v = o.metadata.annotations?.[REVISION_ANNOTATION];
  const n = v ? Number.parseInt(v, 10) : 0;
  return Number.isNaN(n) ? 0 : n;
}

export function maxRevision(sets: readonly ReplicaSet[]): number {
  let m = 0;
  for (const rs of sets) m = Math.max(m, revisionOf(rs));
  return m;
}

/** Sets the desired- and max-replicas annotations; returns whether they changed. */
export function setReplicasAnnotations(rs: ReplicaSet, desired: number, max: number): boolean {
  rs.metadata.annotations ??= {};
  const a = rs.metadata.annotations;
  const changed =
    a[DESIRED_REPLICAS_ANNOTATION] !== String(desired) ||
    a[MAX_REPLICAS_ANNOTATION] !== String(max);
  a[DESIRED_REPLICAS_ANNOTATION] = String(desired);
  a[MAX_REPLICAS_ANNOTATION] = String(max);
  return changed;
}

export function replicasAnnotationsNeedUpdate(
  rs: ReplicaSet,
  desired: number,
  max: number,
): boolean {
  const a = rs.metadata.annotations ?? {};
  return (
    a[DESIRED_REPLICAS_ANNOTATION] !== String(desired) || a[MAX_REPLICAS_ANNOTATION] !== String(max)
  );
}

/**
 * Brings a (new or existing) new ReplicaSet's annotations up to date: the
 * Deployment's own annotations, the revision (an older revision moves into
 * revision-history, as when rolling back), and for a new one desired and max replicas. Returns
 * whether anything changed.
 */
export function setNewReplicaSetAnnotations(
  d: Deployment,
  rs: ReplicaSet,
  newRevision: number,
  exists: boolean,
): boolean {
  rs.metadata.annotations ??= {};
  const a = rs.metadata.annotations;
  let changed = false;
  for (const [k, v] of Object.entries(d.metadata.annotations ?? {})) {
    if (NOT_COPIED.has(k) || a[k] === v) continue;
    a[k] = v;
    changed = true;
  }
  const old = a[REVISION_ANNOTATION];
  const oldN = old === undefined ? 0 : Number.parseInt(old, 10);
  if (old !== undefined && Number.isNaN(oldN)) return changed;
  if (oldN < newRevision) {
    a[REVISION_ANNOTATION] = String(newRevision);
    changed = true;
    if (old !== undefined) {
      const history = a[REVISION_HISTORY_ANNOTATION];
      if (!history) a[REVISION_HISTORY_ANNOTATION] = old;
      else {
        let parts = history.split(",");
        let total = history.length + old.length + 1;
        while (total > MAX_REVISION_HISTORY_CHARS && parts.length > 0) {
          total -= (parts[0]?.length ?? 0) + 1;
          parts = parts.slice(1);
        }
        if (total <= MAX_REVISION_HISTORY_CHARS) {
          a[REVISION_HISTORY_ANNOTATION] = [...parts, old].join(",");
        }
      }
    }
  }
  // An existing one keeps the sizes it was scaled for (proportional scaling reads them).
  if (!exists && setReplicasAnnotations(rs, replicasOf(d), replicasOf(d) + maxSurge(d))) {
    changed = true;
  }
  return changed;
}

// --- conditions -------------------------------------------------------------

export function getCondition(
  s: DeploymentStatus | undefined,
  type: string,
): DeploymentCondition | undefined {
  return s?.conditions?.find((c) => c.type === type);
}

export function newCondition(
  type: string,
  status: "True" | "False" | "Unknown",
  reason: string,
  message: string,
): DeploymentCondition {
  const t = nowTimestamp();
  return { type, status, lastUpdateTime: t, lastTransitionTime: t, reason, message };
}

/**
 * Sets a condition as Kubernetes' SetDeploymentCondition does: the same
 * status and reason is no change; the same status keeps its transition time.
 * Returns whether it changed.
 */
export function setCondition(s: DeploymentStatus, c: DeploymentCondition): boolean {
  const current = getCondition(s, c.type);
  if (current && current.status === c.status && current.reason === c.reason) return false;
  if (current && current.status === c.status) c.lastTransitionTime = current.lastTransitionTime;
  s.conditions = [...(s.conditions ?? []).filter((x) => x.type !== c.type), c];
  return true;
}

export function removeCondition(s: DeploymentStatus, type: string): void {
  if (!s.conditions) return;
  s.conditions = s.conditions.filter((c) => c.type !== type);
  if (s.conditions.length === 0) delete s.conditions;
}

// --- sums over ReplicaSets -------------------------------------------------

export function sumSpec(sets: readonly ReplicaSet[]): number {
  return sets.reduce((n, rs) => n + (rs.spec?.replicas ?? 0), 0);
}

export function sumStatus(
  sets: readonly ReplicaSet[],
  field: "replicas" | "readyReplicas" | "availableReplicas",
): number {
  return sets.reduce((n, rs) => n + (rs.status?.[field] ?? 0), 0);
}

function created(rs: ReplicaSet): number {
  const t = rs.metadata.creationTimestamp ? Date.parse(rs.metadata.creationTimestamp) : 0;
  return Number.isNaN(t) ? 0 : t;
}

/** Oldest first; ties by name. */
export function byCreation(a: ReplicaSet, b: ReplicaSet): number {
  return created(a) - created(b) || (a.metadata.name ?? "").localeCompare(b.metadata.name ?? "");
}

/** Whether the Deployment's rollout is done: every replica updated and available, generation seen. */
export function deploymentComplete(d: Deployment, s: DeploymentStatus | undefined): boolean {
  const n = replicasOf(d);
  return (
    (s?.updatedReplicas ?? 0) === n &&
    (s?.replicas ?? 0) === n &&
    (s?.availableReplicas ?? 0) === n &&
    (s?.observedGeneration ?? 0) >= (d.metadata.generation ?? 0)
  );
}

/** Whether the new status shows progress over the Deployment's current one. */
export function deploymentProgressing(d: Deployment, s: DeploymentStatus): boolean {
  const o = d.status ?? {};
  const oldOld = (o.replicas ?? 0) - (o.updatedReplicas ?? 0);
  const newOld = (s.replicas ?? 0) - (s.updatedReplicas ?? 0);
  return (
    (s.updatedReplicas ?? 0) > (o.updatedReplicas ?? 0) ||
    newOld < oldOld ||
    (s.readyReplicas ?? 0) > (o.readyReplicas ?? 0) ||
    (s.availableReplicas ?? 0) > (o.availableReplicas ?? 0)
  );
}

/** Whether the Progressing condition has not moved for progressDeadlineSeconds. */
export function deploymentTimedOut(d: Deployment, s: DeploymentStatus, now: number): boolean {
  if (!hasProgressDeadline(d)) return false;
  const c = getCondition(s, "Progressing");
  if (!c) return false;
  if (c.reason === Reason.NewReplicaSetAvailable) return false;
  if (c.reason === Reason.TimedOut) return true;
  const from = Date.parse(c.lastUpdateTime ?? "");
  return !Number.isNaN(from) && from + (d.spec?.progressDeadlineSeconds ?? 600) * 1000 < now;
}
