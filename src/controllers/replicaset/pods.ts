/**
 * What the ReplicaSet controller reads from Pods: whether one is active, ready
 * or available, the Pod it creates from a template, and Kubernetes' order of
 * which Pods to delete first when scaling down.
 */
import type { KubeObject, Pod, PodTemplateSpec } from "@setpoint/api";
import { deepClone } from "@setpoint/api";
import { controllerRefTo } from "../controller-ref.ts";

/** A Pod that counts towards replicas: not finished and not being deleted. */
export function isPodActive(p: Pod): boolean {
  const phase = p.status?.phase;
  return phase !== "Succeeded" && phase !== "Failed" && !p.metadata.deletionTimestamp;
}

function readyCondition(p: Pod) {
  return p.status?.conditions?.find((c) => c.type === "Ready");
}

/** Whether the Pod's Ready condition is True. */
export function isPodReady(p: Pod): boolean {
  return readyCondition(p)?.status === "True";
}

/**
 * Whether the Pod has been ready for at least `minReadySeconds` at `now`; when
 * not yet, `availableInMs` says how long until it is.
 */
export function podAvailability(
  p: Pod,
  minReadySeconds: number,
  now: number,
): { available: boolean; availableInMs?: number } {
  const c = readyCondition(p);
  if (c?.status !== "True") return { available: false };
  if (minReadySeconds <= 0) return { available: true };
  const since = c.lastTransitionTime ? Date.parse(c.lastTransitionTime) : Number.NaN;
  if (Number.isNaN(since)) return { available: false };
  const at = since + minReadySeconds * 1000;
  return at <= now ? { available: true } : { available: false, availableInMs: at - now };
}

/** The Pod a controller creates from its template: named `<prefix><5 random chars>` by the server. */
export function podFromTemplate(
  template: PodTemplateSpec | undefined,
  owner: KubeObject,
  generateName: string,
): Pod {
  const t = deepClone(template ?? {});
  const metadata: Pod["metadata"] = {
    generateName,
    namespace: owner.metadata.namespace,
    ownerReferences: [controllerRefTo(owner)],
  };
  if (t.metadata?.labels) metadata.labels = t.metadata.labels;
  if (t.metadata?.annotations) metadata.annotations = t.metadata.annotations;
  if (t.metadata?.finalizers) metadata.finalizers = t.metadata.finalizers;
  return { apiVersion: "v1", kind: "Pod", metadata, spec: t.spec ?? { containers: [] } };
}

const PHASE_RANK: Record<string, number> = { Pending: 0, Unknown: 1, Running: 2 };

function restarts(p: Pod): number {
  let n = 0;
  for (const s of p.status?.containerStatuses ?? []) n += s.restartCount ?? 0;
  return n;
}

function time(ts: string | undefined): number {
  const t = ts ? Date.parse(ts) : Number.NaN;
  return Number.isNaN(t) ? 0 : t;
}

/**
 * Sorts Pods so the ones to delete first come first, as Kubernetes ranks them:
 * unscheduled before scheduled; Pending before Unknown before Running; not
 * ready before ready; more Pods of the same owner on the node before fewer;
 * ready for a shorter time before longer; more restarts before fewer; newer
 * before older.
 */
export function sortPodsForDeletion(pods: Pod[]): Pod[] {
  const perNode = new Map<string, number>();
  for (const p of pods) {
    const n = p.spec?.nodeName;
    if (n) perNode.set(n, (perNode.get(n) ?? 0) + 1);
  }
  const key = (p: Pod) => ({
    scheduled: p.spec?.nodeName ? 1 : 0,
    phase: PHASE_RANK[p.status?.phase ?? "Pending"] ?? 0,
    ready: isPodReady(p) ? 1 : 0,
    colocated: p.spec?.nodeName ? (perNode.get(p.spec.nodeName) ?? 0) : 0,
    readySince: isPodReady(p) ? time(readyCondition(p)?.lastTransitionTime) : 0,
    restarts: restarts(p),
    created: time(p.metadata.creationTimestamp),
  });
  const keyed = pods.map((p) => ({ p, k: key(p) }));
  keyed.sort(
    (a, b) =>
      a.k.scheduled - b.k.scheduled ||
      a.k.phase - b.k.phase ||
      a.k.ready - b.k.ready ||
      b.k.colocated - a.k.colocated ||
      b.k.readySince - a.k.readySince ||
      b.k.restarts - a.k.restarts ||
      b.k.created - a.k.created,
  );
  return keyed.map((x) => x.p);
}
