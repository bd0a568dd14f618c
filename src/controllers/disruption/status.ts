/**
 * A PodDisruptionBudget's status from its Pods and the scale of their
 * controllers, as Kubernetes' disruption controller computes it: pure
 * functions of the budget, the Pods and the time.
 */
import type { Pod, PodDisruptionBudget } from "@setpoint/api";

/** How long an eviction's entry in disruptedPods holds a Pod out of the healthy count (Kubernetes' DeletionTimeout). */
export const DISRUPTED_POD_TIMEOUT_MS = 2 * 60 * 1000;

export type PdbStatus = NonNullable<PodDisruptionBudget["status"]>;
export type PdbCondition = NonNullable<PdbStatus["conditions"]>[number];

/** The budget's condition type and its reasons (policy/v1). */
export const DISRUPTION_ALLOWED = "DisruptionAllowed";
export const SUFFICIENT_PODS = "SufficientPods";
export const INSUFFICIENT_PODS = "InsufficientPods";
export const SYNC_FAILED = "SyncFailed";

/** Kubernetes' timestamp form (seconds). */
export function stamp(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");
}

/**
 * An int-or-percent resolved against `total`, rounding up (Kubernetes'
 * GetScaledValueFromIntOrPercent with roundUp); throws as it does on a string
 * that is not a percentage.
 */
export function scaled(v: number | string, total: number): number {
  if (typeof v === "number") return v;
  const m = /^(-?\d+)%$/.exec(v);
  if (!m)
    throw new Error(`invalid value for IntOrString: invalid type: string is not a percentage`);
  return Math.ceil((Number(m[1]) * total) / 100);
}

/** Whether the budget needs its Pods' controllers' scale (maxUnavailable, or a percent minAvailable). */
export function needsScale(pdb: PodDisruptionBudget): boolean {
  const s = pdb.spec ?? {};
  if (s.maxUnavailable !== undefined && s.maxUnavailable !== null) return true;
  return typeof s.minAvailable === "string";
}

/** expectedPods and desiredHealthy for the budget; `expectedScale` is the controllers' total. */
export function desired(
  pdb: PodDisruptionBudget,
  pods: number,
  expectedScale: number,
): { expected: number; desiredHealthy: number } {
  const s = pdb.spec ?? {};
  if (s.maxUnavailable !== undefined && s.maxUnavailable !== null) {
    const d = expectedScale - scaled(s.maxUnavailable, expectedScale);
    return { expected: expectedScale, desiredHealthy: Math.max(0, d) };
  }
  if (typeof s.minAvailable === "number") return { expected: pods, desiredHealthy: s.minAvailable };
  if (typeof s.minAvailable === "string") {
    return { expected: expectedScale, desiredHealthy: scaled(s.minAvailable, expectedScale) };
  }
  return { expected: 0, desiredHealthy: 0 };
}

export function isPodReady(p: Pod): boolean {
  return p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
}

/**
 * The disruptedPods entries still in force (the Pod is there and not yet
 * terminating, and was evicted less than DISRUPTED_POD_TIMEOUT_MS ago), the
 * Pods whose entry ran out without their deletion, and when the earliest
 * entry in force runs out (ms; undefined when none).
 */
export function liveDisruptions(
  pdb: PodDisruptionBudget,
  pods: readonly Pod[],
  now: number,
  timeoutMs = DISRUPTED_POD_TIMEOUT_MS,
): { map: Record<string, string>; expired: Pod[]; expiresAt: number | undefined } {
  const map: Record<string, string> = {};
  const expired: Pod[] = [];
  let expiresAt: number | undefined;
  const entries = pdb.status?.disruptedPods ?? {};
  for (const p of pods) {
    const name = p.metadata.name ?? "";
    if (p.metadata.deletionTimestamp || !Object.hasOwn(entries, name)) continue;
    const t = entries[name];
    const end = (Date.parse(t) || 0) + timeoutMs;
    if (end < now) {
      expired.push(p);
      continue;
    }
    map[name] = t;
    expiresAt = expiresAt === undefined ? end : Math.min(expiresAt, end);
  }
  return { map, expired, expiresAt };
}

/** Ready Pods that are not terminating and not in `disrupted`. */
export function countHealthy(pods: readonly Pod[], disrupted: Record<string, string>): number {
  return pods.filter(
    (p) =>
      !p.metadata.deletionTimestamp &&
      !Object.hasOwn(disrupted, p.metadata.name ?? "") &&
      isPodReady(p),
  ).length;
}

/** Disruptions allowed: healthy beyond desired, and none while no Pods are expected. */
export function disruptionsAllowed(
  currentHealthy: number,
  desiredHealthy: number,
  expected: number,
): number {
  const allowed = currentHealthy - desiredHealthy;
  return expected <= 0 || allowed <= 0 ? 0 : allowed;
}

/**
 * `conditions` with `c` set as apimachinery's SetStatusCondition sets it: the
 * transition time moves only when the status does; reason, message and
 * observedGeneration are replaced.
 */
export function setCondition(
  conditions: readonly PdbCondition[] | undefined,
  c: Omit<PdbCondition, "lastTransitionTime">,
  now: number,
): PdbCondition[] {
  const out = (conditions ?? []).map((x) => ({ ...x }));
  const next: PdbCondition = { ...c, lastTransitionTime: stamp(now) };
  if (!c.observedGeneration) delete next.observedGeneration;
  const i = out.findIndex((x) => x.type === c.type);
  if (i < 0) return [...out, next];
  if (out[i].status === c.status) next.lastTransitionTime = out[i].lastTransitionTime;
  out[i] = next;
  return out;
}

/** The DisruptionAllowed condition for `allowed` disruptions (Kubernetes' UpdateDisruptionAllowedCondition). */
export function allowedCondition(
  conditions: readonly PdbCondition[] | undefined,
  allowed: number,
  now: number,
): PdbCondition[] {
  return setCondition(
    conditions,
    allowed > 0
      ? { type: DISRUPTION_ALLOWED, status: "True", reason: SUFFICIENT_PODS, message: "" }
      : { type: DISRUPTION_ALLOWED, status: "False", reason: INSUFFICIENT_PODS, message: "" },
    now,
  );
}

/** Whether the status's DisruptionAllowed condition is what its counts say (Kubernetes' ConditionsAreUpToDate). */
export function conditionsUpToDate(pdb: PodDisruptionBudget): boolean {
  const c = pdb.status?.conditions?.find((x) => x.type === DISRUPTION_ALLOWED);
  if (!c || (pdb.status?.observedGeneration ?? 0) !== (pdb.metadata.generation ?? 0)) return false;
  if ((pdb.status?.disruptionsAllowed ?? 0) > 0) {
    return c.status === "True" && c.reason === SUFFICIENT_PODS;
  }
  return c.status === "False" && c.reason === INSUFFICIENT_PODS;
}

/** A label selector as Go's %v prints a *metav1.LabelSelector (for Event messages). */
export function goSelector(sel: unknown): string {
  if (!sel || typeof sel !== "object") return "nil";
  const s = sel as {
    matchLabels?: Record<string, string>;
    matchExpressions?: { key: string; operator: string; values?: string[] }[];
  };
  const labels = Object.keys(s.matchLabels ?? {})
    .sort()
    .map((k) => `${k}: ${s.matchLabels?.[k]},`)
    .join("");
  const exprs = (s.matchExpressions ?? [])
    .map(
      (e) =>
        `LabelSelectorRequirement{Key:${e.key},Operator:${e.operator},Values:[${(e.values ?? []).join(" ")}],},`,
    )
    .join("");
  return `&LabelSelector{MatchLabels:map[string]string{${labels}},MatchExpressions:[]LabelSelectorRequirement{${exprs}},}`;
}
