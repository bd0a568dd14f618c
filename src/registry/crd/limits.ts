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
 * The size of a deeply frozen value (one nothing can change, such as the FieldsV1
 * objects shared between new objects): its number of values, and how deep below
 * it its deepest non-empty map or list is (-1: none).
 */
interface FrozenSize {
  values: number;
  deepest: number;
}

/** Sizes of deeply frozen values, measured once each. */
const frozenSizes = new WeakMap<object, FrozenSize>();

/** The size of `v` if it and everything in it is frozen, else undefined. */
function frozenSize(v: object, depth: number): FrozenSize | undefined {
  const known = frozenSizes.get(v);
  if (known !== undefined) return known;
  if (!Object.isFrozen(v) || depth > MAX_OBJECT_DEPTH) return undefined;
  let values = 1;
  let deepest = -1;
  const add = (c: unknown): boolean => {
    if (deepest < 0) deepest = 0;
    if (typeof c !== "object" || c === null) {
      values++;
      return true;
    }
    const size = frozenSize(c, depth + 1);
    if (size === undefined) return false;
    values += size.values;
    if (size.deepest >= 0) deepest = Math.max(deepest, size.deepest + 1);
    return true;
  };
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (!add(v[i])) return undefined;
  } else {
    const o = v as Record<string, unknown>;
    for (const k in o) if (Object.hasOwn(o, k) && !add(o[k])) return undefined;
  }
  const size = { values, deepest };
  frozenSizes.set(v, size);
  return size;
}

/**
 * Whether `v` (at `depth`) and everything in it stay within the limits: at most
 * MAX_OBJECT_NODES values in all, and no non-empty map or list at depth
 * MAX_OBJECT_DEPTH or deeper (checkObjectLimits' two rules). Recurses at most
 * MAX_OBJECT_DEPTH levels; a deeply frozen value is measured once and then
 * counted whole.
 */
function within(v: unknown, depth: number): boolean {
  if (typeof v !== "object" || v === null) return ++counted <= MAX_OBJECT_NODES;
  if (Array.isArray(v)) {
    if (++counted > MAX_OBJECT_NODES) return false;
    if (v.length === 0) return true;
    if (depth >= MAX_OBJECT_DEPTH) return false;
    for (let i = 0; i < v.length; i++) if (!within(v[i], depth + 1)) return false;
    return true;
  }
  if (Object.isFrozen(v)) {
    const size = frozenSize(v, 0);
    if (size !== undefined) {
      counted += size.values;
      return (
        counted <= MAX_OBJECT_NODES && (size.deepest < 0 || depth + size.deepest < MAX_OBJECT_DEPTH)
      );
    }
  }
  if (++counted > MAX_OBJECT_NODES) return false;
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
