/**
 * The object size limits (src/registry/objectlimits.ts) as the custom resource
 * strategy checks them on every write: first a walk that only counts, without
 * building anything, and the limits' own check (which finds the cause and its
 * path) only for an object that is past them.
 */
import type { StatusCause } from "../../api/status.ts";
import { checkObjectLimits, MAX_OBJECT_DEPTH, MAX_OBJECT_NODES } from "../objectlimits.ts";

/** Values counted so far by the walk in progress. */
let counted = 0;

/**
 * Whether `v` (at `depth`) and everything in it stay within the limits: at most
 * MAX_OBJECT_NODES values in all, and no non-empty map or list at depth
 * MAX_OBJECT_DEPTH or deeper (checkObjectLimits' two rules). Recurses at most
 * MAX_OBJECT_DEPTH levels.
 */
function within(v: unknown, depth: number): boolean {
  if (++counted > MAX_OBJECT_NODES) return false;
  if (typeof v !== "object" || v === null) return true;
  if (Array.isArray(v)) {
    if (v.length === 0) return true;
    if (depth >= MAX_OBJECT_DEPTH) return false;
    for (let i = 0; i < v.length; i++) if (!within(v[i], depth + 1)) return false;
    return true;
  }
  const o = v as Record<string, unknown>;
  if (depth >= MAX_OBJECT_DEPTH) {
    for (const k in o) if (Object.hasOwn(o, k)) return false;
    return true;
  }
  for (const k in o) if (Object.hasOwn(o, k) && !within(o[k], depth + 1)) return false;
  return true;
}

/** True when `obj` is within the object size limits (checkObjectLimits finds nothing). */
export function withinObjectLimits(obj: unknown): boolean {
  counted = 0;
  return within(obj, 0);
}

/** checkObjectLimits(obj), walking the object only once when it is within them. */
export function objectLimitsCause(obj: unknown): StatusCause | undefined {
  return withinObjectLimits(obj) ? undefined : checkObjectLimits(obj);
}
