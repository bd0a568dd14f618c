/**
 * How big and how deep an object the server works on. Every write's object is
 * measured against these before any per-field work (field management, schema
 * validation, CEL), so that a hostile object is refused cheaply instead of blowing
 * up the recursive walks that come after.
 */
import type { StatusCause } from "../api/status.ts";
import { fieldErrors } from "../api/validation.ts";

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
