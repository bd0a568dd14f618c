/**
 * A ReplicaSet's status from its Pods: replicas (active Pods), fullyLabeled
 * (Pods carrying every label of the template), ready, available (ready for
 * minReadySeconds), observedGeneration, and the ReplicaFailure condition while
 * creating or deleting Pods fails.
 */
import type { Pod, ReplicaSet, ReplicaSetCondition, ReplicaSetStatus } from "@setpoint/api";
import { labelSelectorFromSet, matchesLabels } from "@setpoint/api";
import { isPodReady, podAvailability } from "./pods.ts";

/** What a sync computed: the status, and when a ready Pod becomes available (ms, if any). */
export interface ComputedStatus {
  status: ReplicaSetStatus;
  /** Milliseconds until the next ready Pod turns available (minReadySeconds). */
  recheckInMs?: number;
}

/** The ReplicaSet's status for its active Pods; `failure` is the error of this sync's creates or deletes. */
export function replicaSetStatus(
  rs: ReplicaSet,
  active: readonly Pod[],
  failure: { reason: "FailedCreate" | "FailedDelete"; message: string } | undefined,
  now: number = Date.now(),
): ComputedStatus {
  const templateLabels = labelSelectorFromSet(rs.spec?.template?.metadata?.labels);
  const minReady = rs.spec?.minReadySeconds ?? 0;
  let fullyLabeled = 0;
  let ready = 0;
  let available = 0;
  let recheckInMs: number | undefined;
  for (const p of active) {
    if (matchesLabels(templateLabels, p.metadata.labels)) fullyLabeled++;
    if (!isPodReady(p)) continue;
    ready++;
    const a = podAvailability(p, minReady, now);
    if (a.available) available++;
    else if (a.availableInMs !== undefined) {
      recheckInMs = Math.min(recheckInMs ?? Number.POSITIVE_INFINITY, a.availableInMs);
    }
  }
  const status: ReplicaSetStatus = { replicas: active.length };
  if (fullyLabeled > 0) status.fullyLabeledReplicas = fullyLabeled;
  if (ready > 0) status.readyReplicas = ready;
  if (available > 0) status.availableReplicas = available;
  if (rs.metadata.generation !== undefined) status.observedGeneration = rs.metadata.generation;
  const conditions = (rs.status?.conditions ?? []).filter((c) => c.type !== "ReplicaFailure");
  const previous = rs.status?.conditions?.find((c) => c.type === "ReplicaFailure");
  if (failure) {
    const c: ReplicaSetCondition = previous ?? {
      type: "ReplicaFailure",
      status: "True",
      lastTransitionTime: new Date(now).toISOString().replace(/\.\d+Z$/, "Z"),
      reason: failure.reason,
      message: failure.message,
    };
    conditions.push(c);
  }
  if (conditions.length > 0) status.conditions = conditions;
  return recheckInMs === undefined ? { status } : { status, recheckInMs };
}

/** Whether two statuses differ in anything the controller writes (absent counts as 0). */
export function statusChanged(a: ReplicaSetStatus | undefined, b: ReplicaSetStatus): boolean {
  const n = (x: number | undefined) => x ?? 0;
  return (
    n(a?.replicas) !== n(b.replicas) ||
    n(a?.fullyLabeledReplicas) !== n(b.fullyLabeledReplicas) ||
    n(a?.readyReplicas) !== n(b.readyReplicas) ||
    n(a?.availableReplicas) !== n(b.availableReplicas) ||
    n(a?.observedGeneration) !== n(b.observedGeneration) ||
    JSON.stringify(a?.conditions ?? []) !== JSON.stringify(b.conditions ?? [])
  );
}
