/**
 * Taints and tolerations as the node lifecycle controller reads them: which
 * taints a Node's conditions call for, whether a Pod tolerates a taint, and
 * how long it may stay on a node with NoExecute taints.
 */
import type { Node, NodeCondition, Pod, Taint, Toleration } from "@setpoint/api";

export const TAINT_NOT_READY = "node.kubernetes.io/not-ready";
export const TAINT_UNREACHABLE = "node.kubernetes.io/unreachable";
export const TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable";

/** The taints this controller owns (it adds and removes only these). */
const MANAGED: ReadonlySet<string> = new Set([
  TAINT_NOT_READY,
  TAINT_UNREACHABLE,
  TAINT_UNSCHEDULABLE,
]);

export function readyCondition(node: Node): NodeCondition | undefined {
  return node.status?.conditions?.find((c) => c.type === "Ready");
}

/** The managed taints a Node should carry, by its Ready condition and spec.unschedulable. */
export function desiredTaints(node: Node): { key: string; effect: string }[] {
  const out: { key: string; effect: string }[] = [];
  const ready = readyCondition(node)?.status;
  const key = ready === "False" ? TAINT_NOT_READY : ready === "Unknown" ? TAINT_UNREACHABLE : "";
  if (key) out.push({ key, effect: "NoSchedule" }, { key, effect: "NoExecute" });
  if (node.spec?.unschedulable) out.push({ key: TAINT_UNSCHEDULABLE, effect: "NoSchedule" });
  return out;
}

/**
 * The Node's taints with the managed ones made to match `desiredTaints`:
 * kept ones keep their timeAdded, new ones get `now` (NoExecute taints only,
 * as Kubernetes stamps them). Undefined when nothing changes.
 */
export function reconcileTaints(node: Node, now: string): Taint[] | undefined {
  const current = node.spec?.taints ?? [];
  const want = desiredTaints(node);
  const has = (t: { key: string; effect: string }) =>
    current.some((c) => c.key === t.key && c.effect === t.effect);
  const wanted = (c: Taint) => want.some((t) => t.key === c.key && t.effect === c.effect);
  const kept = current.filter((c) => !MANAGED.has(c.key) || wanted(c));
  const added: Taint[] = want
    .filter((t) => !has(t))
    .map((t) => (t.effect === "NoExecute" ? { ...t, timeAdded: now } : { ...t }));
  if (added.length === 0 && kept.length === current.length) return undefined;
  return [...kept, ...added];
}

/** Whether a toleration tolerates a taint (Kubernetes' ToleratesTaint). */
export function tolerates(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key && t.key !== taint.key) return false;
  if (t.operator === "Exists") return true;
  if (!t.key && t.operator !== "Exists") return false;
  return (t.value ?? "") === (taint.value ?? "");
}

/**
 * When a Pod on a node with these NoExecute taints must go (ms since the
 * epoch): now when a taint is not tolerated, else the earliest of each
 * taint's timeAdded plus the shortest tolerationSeconds tolerating it;
 * undefined when it may stay for good (or there are no NoExecute taints).
 */
export function evictionTime(pod: Pod, taints: readonly Taint[], now: number): number | undefined {
  let at: number | undefined;
  const tolerations = pod.spec?.tolerations ?? [];
  for (const taint of taints) {
    if (taint.effect !== "NoExecute") continue;
    const matching = tolerations.filter((t) => t.effect !== "NoSchedule" && tolerates(t, taint));
    if (matching.length === 0) return now;
    const secs = matching.map((t) => t.tolerationSeconds).filter((s) => typeof s === "number");
    // Only tolerations without tolerationSeconds: tolerated for good.
    if (secs.length === 0) continue;
    const added = Date.parse(taint.timeAdded ?? "") || now;
    const t = added + Math.max(0, Math.min(...secs)) * 1000;
    at = at === undefined ? t : Math.min(at, t);
  }
  return at;
}
