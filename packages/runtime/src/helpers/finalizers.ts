/**
 * Finalizers: strings in `metadata.finalizers` that keep a deleted object (with
 * `deletionTimestamp` set) until the controller that added them has cleaned up
 * and removed them. These functions change a mutable copy of an object; write it
 * with `client.update` (or a patch) afterwards.
 */
import type { KubeObject } from "@setpoint/api";

/** Whether `obj` carries `finalizer`. */
export function hasFinalizer(obj: KubeObject, finalizer: string): boolean {
  return obj.metadata.finalizers?.includes(finalizer) ?? false;
}

/** Adds `finalizer` unless present; returns whether `obj` changed. */
export function addFinalizer(obj: KubeObject, finalizer: string): boolean {
  if (hasFinalizer(obj, finalizer)) return false;
  obj.metadata.finalizers = [...(obj.metadata.finalizers ?? []), finalizer];
  return true;
}

/** Removes every occurrence of `finalizer`; returns whether `obj` changed. */
export function removeFinalizer(obj: KubeObject, finalizer: string): boolean {
  const before = obj.metadata.finalizers;
  if (!before?.includes(finalizer)) return false;
  obj.metadata.finalizers = before.filter((f) => f !== finalizer);
  return true;
}

/** Whether `obj` is being deleted (has a deletionTimestamp). */
export function isBeingDeleted(obj: KubeObject): boolean {
  return obj.metadata.deletionTimestamp !== undefined && obj.metadata.deletionTimestamp !== null;
}
