/**
 * Deep copy, deep equality and deep freezing of JSON values (null, booleans, numbers,
 * strings, arrays and plain objects). Caches, patches and the runtime's informers
 * use these on every object, so they are written for speed on plain JSON: no
 * cycles, no class instances, no Maps or Dates.
 */

/** A JSON value as JSON.parse produces it. */
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;

/** A JSON object as JSON.parse produces it. */
export interface JsonObject {
  [key: string]: JsonValue;
}

/** True for a plain JSON object (not null, not an array). */
export function isJsonObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * A deep copy of a JSON value. Object keys keep their order; `undefined` members are
 * copied as they are (JSON.stringify would drop them later).
 */
export function deepClone<T>(v: T): T {
  if (typeof v !== "object" || v === null) return v;
  if (Array.isArray(v)) {
    // A copy of the list, then its objects and lists copied in place: a long list of
    // strings or numbers (a schema's enum) is one copy, and `new Array(n)` of a large n
    // would make a slow dictionary-backed array.
    const out = v.slice();
    for (let i = 0; i < out.length; i++) {
      const item: unknown = out[i];
      if (typeof item === "object" && item !== null) out[i] = deepClone(item);
    }
    return out as T;
  }
  const src = v as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  const keys = Object.keys(src);
  for (let i = 0; i < keys.length; i++) setMember(out, keys[i], deepClone(src[keys[i]]));
  return out as T;
}

/**
 * Sets `obj[key] = value` as an own data member, also for the key "__proto__"
 * (which plain assignment would turn into a prototype change). Use it whenever
 * keys come from input.
 */
export function setMember(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") {
    Object.defineProperty(obj, key, {
      value,
      writable: true,
      enumerable: true,
      configurable: true,
    });
  } else {
    obj[key] = value;
  }
}

/**
 * Structural equality of JSON values: arrays compare element by element, objects
 * by their set of keys regardless of order. A member set to `undefined` counts as
 * absent, as it would after a JSON round trip.
 */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) {
    // NaN is not JSON; treat it as equal to itself so comparisons stay reflexive.
    return typeof a === "number" && typeof b === "number" && Number.isNaN(a) && Number.isNaN(b);
  }
  const aArr = Array.isArray(a);
  if (aArr !== Array.isArray(b)) return false;
  if (aArr) {
    const x = a as unknown[];
    const y = b as unknown[];
    if (x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) if (!deepEqual(x[i], y[i])) return false;
    return true;
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let count = 0;
  for (const k in x) {
    if (!Object.hasOwn(x, k) || x[k] === undefined) continue;
    count++;
    if (!Object.hasOwn(y, k) || !deepEqual(x[k], y[k])) return false;
  }
  for (const k in y) {
    if (Object.hasOwn(y, k) && y[k] !== undefined) count--;
  }
  return count === 0;
}

/**
 * Freezes a JSON value and everything inside it, so shared cached objects cannot be
 * changed by accident (writes throw in strict mode). Returns the same value. A value
 * that is already frozen is taken to be frozen all the way down and is not walked.
 */
export function deepFreeze<T>(v: T): Readonly<T> {
  if (typeof v !== "object" || v === null || Object.isFrozen(v)) return v;
  if (Array.isArray(v)) {
    for (const item of v) deepFreeze(item);
  } else {
    for (const k in v) {
      if (Object.hasOwn(v, k)) deepFreeze((v as Record<string, unknown>)[k]);
    }
  }
  return Object.freeze(v);
}
