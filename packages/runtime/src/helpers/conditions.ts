/**
 * Status conditions (metav1.Condition), kept the way Kubernetes API conventions
 * ask: one condition per type; `lastTransitionTime` moves only when `status`
 * changes; `observedGeneration` says which spec the condition was computed from.
 * Setting a condition to what it already is changes nothing, so writing status
 * only when it changed stays quiet (no hot loop).
 */
import type { Condition, KubeObject } from "@setpoint/api";
import { nowTimestamp } from "@setpoint/api";

/** A condition to set; the time is filled in. */
export interface ConditionInput {
  type: string;
  status: "True" | "False" | "Unknown";
  reason: string;
  message?: string | undefined;
  observedGeneration?: number | undefined;
}

/** The condition of `type`, if present. */
export function findCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** Whether the condition of `type` is present with status "True". */
export function isConditionTrue(
  conditions: readonly Condition[] | undefined,
  type: string,
): boolean {
  return findCondition(conditions, type)?.status === "True";
}

/**
 * Sets a condition in `conditions` (in place). A new condition, or a changed
 * status, gets `lastTransitionTime = now`; otherwise reason, message and
 * observedGeneration are updated and the time is kept. Returns whether anything changed.
 */
export function setCondition(
  conditions: Condition[],
  input: ConditionInput,
  now: Date = new Date(),
): boolean {
  const existing = conditions.find((c) => c.type === input.type);
  const message = input.message ?? "";
  if (!existing) {
    const c: Condition = {
      type: input.type,
      status: input.status,
      lastTransitionTime: nowTimestamp(now),
      reason: input.reason,
      message,
    };
    if (input.observedGeneration !== undefined) c.observedGeneration = input.observedGeneration;
    conditions.push(c);
    return true;
  }
  let changed = false;
  if (existing.status !== input.status) {
    existing.status = input.status;
    existing.lastTransitionTime = nowTimestamp(now);
    changed = true;
  }
  if (existing.reason !== input.reason) {
    existing.reason = input.reason;
    changed = true;
  }
  if (existing.message !== message) {
    existing.message = message;
    changed = true;
  }
  if (
    input.observedGeneration !== undefined &&
    existing.observedGeneration !== input.observedGeneration
  ) {
    existing.observedGeneration = input.observedGeneration;
    changed = true;
  }
  return changed;
}

/** Removes the condition of `type` (in place); returns whether it was there. */
export function removeCondition(conditions: Condition[], type: string): boolean {
  const i = conditions.findIndex((c) => c.type === type);
  if (i < 0) return false;
  conditions.splice(i, 1);
  return true;
}

/** An object with conditions in its status. */
export type WithConditions = KubeObject & {
  status?: { conditions?: Condition[] | undefined } | undefined;
};

/**
 * Sets a condition in `obj.status.conditions` (creating both if needed), with
 * `observedGeneration` defaulting to the object's `metadata.generation`. The
 * object must be a mutable copy (clone what the cache hands out).
 */
export function setStatusCondition(
  obj: WithConditions,
  input: ConditionInput,
  now: Date = new Date(),
): boolean {
  obj.status ??= {};
  obj.status.conditions ??= [];
  const observedGeneration = input.observedGeneration ?? obj.metadata.generation;
  return setCondition(obj.status.conditions, { ...input, observedGeneration }, now);
}

/**
 * Records an error as a condition (default type "Ready") with status "False": the
 * condition side of surfacing a TerminalError. The reason is the error's
 * `reason` when it has one.
 */
export function setErrorCondition(
  obj: WithConditions,
  error: unknown,
  opts: { type?: string | undefined; reason?: string | undefined; now?: Date | undefined } = {},
): boolean {
  const reason =
    opts.reason ?? (error as { reason?: unknown | undefined } | null)?.reason ?? "ReconcileError";
  const message = error instanceof Error ? error.message : String(error);
  return setStatusCondition(
    obj,
    { type: opts.type ?? "Ready", status: "False", reason: String(reason), message },
    opts.now,
  );
}
