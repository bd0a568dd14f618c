/**
 * What a delete does to the stored object: preconditions (uid, resourceVersion),
 * the propagation policy recorded as the `orphan` and `foregroundDeletion`
 * finalizers (which the garbage collector acts on), marking an object with
 * finalizers as being deleted (deletionTimestamp, deletionGracePeriodSeconds 0)
 * instead of removing it, and the type's own deletion rules (its strategy's
 * decideDelete, e.g. a Namespace becomes Terminating first).
 */
import type { KubeObject } from "@setpoint/api";
import {
  deepClone,
  errors,
  FINALIZER_DELETE_DEPENDENTS,
  FINALIZER_ORPHAN_DEPENDENTS,
  nowTimestamp,
} from "@setpoint/api";
import { sameObject } from "./lifecycle.ts";
import type { StoreContext } from "./scope.ts";
import { conflictError } from "./store-errors.ts";
import type { WriteDecision } from "./writes.ts";

export type PropagationPolicy = "Orphan" | "Background" | "Foreground";

export interface DeleteOptions {
  gracePeriodSeconds?: number;
  propagationPolicy?: PropagationPolicy;
  orphanDependents?: boolean;
  preconditions?: { uid?: string; resourceVersion?: string };
  dryRun: boolean;
}

function shouldOrphan(obj: KubeObject, o: DeleteOptions): boolean {
  if (o.orphanDependents !== undefined) return o.orphanDependents;
  if (o.propagationPolicy !== undefined) return o.propagationPolicy === "Orphan";
  const f = obj.metadata.finalizers ?? [];
  if (f.includes(FINALIZER_ORPHAN_DEPENDENTS)) return true;
  if (f.includes(FINALIZER_DELETE_DEPENDENTS)) return false;
  return false; // every type here defaults to background deletion of dependents
}

function shouldDeleteDependentsFirst(obj: KubeObject, o: DeleteOptions): boolean {
  if (o.orphanDependents !== undefined) return !o.orphanDependents;
  if (o.propagationPolicy !== undefined) return o.propagationPolicy === "Foreground";
  const f = obj.metadata.finalizers ?? [];
  if (f.includes(FINALIZER_DELETE_DEPENDENTS)) return true;
  if (f.includes(FINALIZER_ORPHAN_DEPENDENTS)) return false;
  return false;
}

/**
 * The finalizers an object should carry once deletion is requested with `o`:
 * `orphan` for Orphan, `foregroundDeletion` for Foreground, neither for Background,
 * other finalizers untouched. `changed` says whether that differs from now.
 */
export function deletionFinalizers(
  obj: KubeObject,
  o: DeleteOptions,
): { changed: boolean; finalizers: string[] } {
  const current = obj.metadata.finalizers ?? [];
  const orphan = shouldOrphan(obj, o);
  const foreground = !orphan && shouldDeleteDependentsFirst(obj, o);
  const next = current.filter(
    (f) => f !== FINALIZER_ORPHAN_DEPENDENTS && f !== FINALIZER_DELETE_DEPENDENTS,
  );
  if (orphan) next.push(FINALIZER_ORPHAN_DEPENDENTS);
  if (foreground) next.push(FINALIZER_DELETE_DEPENDENTS);
  const a = new Set(current);
  const b = new Set(next);
  const changed = a.size !== b.size || [...a].some((f) => !b.has(f));
  return { changed, finalizers: changed ? next : current };
}

function checkPreconditions(ctx: StoreContext, obj: KubeObject, o: DeleteOptions): void {
  const p = o.preconditions;
  if (!p) return;
  const subject = { ...ctx.subject, name: obj.metadata.name ?? "" };
  if (p.uid !== undefined && p.uid !== obj.metadata.uid) {
    throw conflictError(
      subject,
      `Precondition failed: UID in precondition: ${p.uid}, UID in object meta: ${obj.metadata.uid ?? ""}`,
    );
  }
  if (p.resourceVersion !== undefined && p.resourceVersion !== obj.metadata.resourceVersion) {
    throw conflictError(
      subject,
      `Precondition failed: ResourceVersion in precondition: ${p.resourceVersion}, ResourceVersion in object meta: ${obj.metadata.resourceVersion ?? ""}`,
    );
  }
}

function markDeleting(obj: KubeObject, finalizers: string[], now: Date): void {
  if (finalizers.length > 0) obj.metadata.finalizers = finalizers;
  else delete obj.metadata.finalizers;
  if (!obj.metadata.deletionTimestamp) {
    obj.metadata.deletionTimestamp = nowTimestamp(now);
    obj.metadata.deletionGracePeriodSeconds = 0;
  }
}

/** What deleting `current` (the object named `name`) with `o` does. */
export function decideDelete(
  ctx: StoreContext,
  current: KubeObject | null,
  o: DeleteOptions,
  name: string,
): WriteDecision {
  if (!current) throw errors.notFound({ ...ctx.subject, name });
  checkPreconditions(ctx, current, o);
  const now = new Date();
  const { finalizers, changed } = deletionFinalizers(current, o);
  const own = ctx.def.strategy.decideDelete?.(
    deepClone(current),
    finalizers,
    now,
    o.gracePeriodSeconds,
  );
  if (own) return own.action === "noop" ? { action: "noop", obj: current } : own;
  if (finalizers.length > 0) {
    const next = deepClone(current);
    markDeleting(next, finalizers, now);
    if (!changed && sameObject(next, current)) return { action: "noop", obj: current };
    return { action: "update", obj: next };
  }
  return { action: "delete", obj: current };
}
