/**
 * Removing one finalizer by hand, safely: what the removal will do (plan), the
 * guarded JSON patch that does it, and the Event that records it.
 */
import type { JsonPatchOperation, KubeObject } from "@setpoint/api";
import { newEvent } from "@setpoint/runtime";
import { type FinalizerHandling, type FinalizerPlace, specFinalizers } from "./stuck.ts";

/** What removing one finalizer from an object will do. */
export interface ClearPlan {
  finalizer: string;
  place: FinalizerPlace;
  /** Index of the finalizer in its list. */
  index: number;
  /** The list as read (the patch tests it is unchanged). */
  before: string[];
  /** The finalizers left afterwards (metadata and spec). */
  remaining: string[];
  /** Whether the object has a deletionTimestamp. */
  beingDeleted: boolean;
  /** Whether the server removes the object right after (deleted and nothing left). */
  deletesObject: boolean;
}

/** Plans removing `finalizer` (from metadata.finalizers first, else a Namespace's spec); undefined when absent. */
export function planClear(obj: KubeObject, finalizer: string): ClearPlan | undefined {
  const meta = obj.metadata.finalizers ?? [];
  const spec = specFinalizers(obj);
  let place: FinalizerPlace;
  let index = meta.indexOf(finalizer);
  if (index >= 0) place = "metadata";
  else {
    index = spec.indexOf(finalizer);
    if (index < 0) return undefined;
    place = "spec";
  }
  const before = place === "metadata" ? meta : spec;
  const after = before.filter((_, i) => i !== index);
  const remaining = place === "metadata" ? [...after, ...spec] : [...meta, ...after];
  const beingDeleted = Boolean(obj.metadata.deletionTimestamp);
  return {
    finalizer,
    place,
    index,
    before: [...before],
    remaining,
    beingDeleted,
    deletesObject: beingDeleted && remaining.length === 0,
  };
}

/**
 * The JSON patch removing a metadata finalizer. It first tests that the object
 * is the same one (uid) and that its finalizers are exactly what was read, so a
 * concurrent change (another finalizer added or removed, the object replaced)
 * fails the patch instead of being overwritten; other changes (status, labels)
 * do not get in the way.
 */
export function clearPatch(obj: KubeObject, plan: ClearPlan): JsonPatchOperation[] {
  if (plan.place !== "metadata") throw new Error("spec finalizers are removed through /finalize");
  return [
    { op: "test", path: "/metadata/uid", value: obj.metadata.uid ?? "" },
    { op: "test", path: "/metadata/finalizers", value: plan.before },
    { op: "remove", path: `/metadata/finalizers/${plan.index}` },
  ];
}

/** The Namespace sent to /finalize to remove a spec finalizer (guarded by its resourceVersion). */
export function finalizeBody(ns: KubeObject, plan: ClearPlan): KubeObject {
  return {
    ...ns,
    spec: {
      ...(ns.spec as Record<string, unknown>),
      finalizers: plan.before.filter((_, i) => i !== plan.index),
    },
  };
}

/** The reason of the Event recording a finalizer removed by hand. */
export const FINALIZER_CLEARED_REASON = "FinalizerCleared";
/** The component named on that Event. */
export const CLI_COMPONENT = "setpoint-cli";

/** The message of the FinalizerCleared Event. */
export function clearedMessage(plan: ClearPlan, handling: FinalizerHandling, who: string): string {
  const state =
    handling.state === "handled"
      ? `declared by the live controller ${handling.handlers.map((h) => h.lease).join(", ")}`
      : handling.state === "builtin"
        ? `a built-in finalizer of the ${handling.builtin}`
        : "declared by no live controller";
  const where = plan.place === "spec" ? " from spec.finalizers" : "";
  return `Finalizer ${plan.finalizer} removed${where} by ${who} with "setpoint finalizers clear" (it was ${state})`;
}

/** The FinalizerCleared Event about `obj`, recorded by this command from `instance` (its host). */
export function eventFor(
  obj: KubeObject,
  reason: string,
  message: string,
  instance: string,
  now: Date,
): KubeObject {
  return newEvent(obj, "Normal", reason, message, { component: CLI_COMPONENT, instance }, now);
}
