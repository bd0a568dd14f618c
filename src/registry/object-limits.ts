/**
 * How big and how deep an object the server works on. Every write's object is
 * measured against these before any per-field work (field management, schema
 * validation, CEL), so that a hostile object is refused cheaply instead of blowing
 * up the recursive walks that come after.
 */
import type { StatusCause } from "@setpoint/api";
import { fieldErrors } from "@setpoint/api";

/** Deepest nesting of an object the server validates (deeper objects are refused first). */
export const MAX_OBJECT_DEPTH = 128;
/** Most values (objects, arrays and scalars) in one object the server validates. */
export const MAX_OBJECT_NODES = 250_000;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * A cause if `obj` is nested deeper than MAX_OBJECT_DEPTH or holds more than
 * MAX_OBJECT_NODES values; measured without recursion and without building paths
 * (the path of a too-deep field is looked for only once one is found).
 */
export function checkObjectLimits(obj: unknown): StatusCause | undefined {
  const values: unknown[] = [obj];
  const depths: number[] = [0];
  let nodes = 0;
  while (values.length > 0) {
    const v = values.pop();
    const depth = depths.pop() as number;
    nodes++;
    if (nodes > MAX_OBJECT_NODES) {
      return fieldErrors.forbidden(
        "",
        `the object has more than ${MAX_OBJECT_NODES} values, the most the server validates`,
      );
    }
    if (typeof v !== "object" || v === null) continue;
    if (depth >= MAX_OBJECT_DEPTH) {
      if ((Array.isArray(v) ? v.length : Object.keys(v).length) === 0) continue;
      return fieldErrors.forbidden(
        deepPath(obj),
        `the object is nested deeper than ${MAX_OBJECT_DEPTH} levels, the most the server validates`,
      );
    }
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        values.push(v[i]);
        depths.push(depth + 1);
      }
    } else {
      for (const k in v) {
        if (!Object.hasOwn(v, k)) continue;
        values.push((v as Record<string, unknown>)[k]);
        depths.push(depth + 1);
      }
    }
  }
  return undefined;
}

/** Path segments printed for a too-deep field (the rest is left out). */
const PATH_SEGMENTS = 8;

/** The path (first segments) to a value nested deeper than MAX_OBJECT_DEPTH. */
function deepPath(obj: unknown): string {
  const find = (v: unknown, depth: number, path: string[]): string[] | undefined => {
    if (depth > MAX_OBJECT_DEPTH) return path;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const p = find(v[i], depth + 1, path.length < PATH_SEGMENTS ? [...path, `[${i}]`] : path);
        if (p) return p;
      }
    } else if (isObject(v)) {
      for (const k of Object.keys(v)) {
        const p = find(v[k], depth + 1, path.length < PATH_SEGMENTS ? [...path, k] : path);
        if (p) return p;
      }
    }
    return undefined;
  };
  const segments = find(obj, 0, []) ?? [];
  let out = "";
  for (const s of segments) out += s.startsWith("[") || out === "" ? s : `.${s}`;
  return out;
}

// The fast path: every write is measured by a walk that only counts, without building
// anything; checkObjectLimits (which finds the cause and its path) runs only for an
// object past the limits.

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
