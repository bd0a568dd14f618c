/**
 * Path elements of field paths, as managedFields' FieldsV1 spells them:
 *
 * - `f:<name>`  a field of a map or struct (`f:spec`, `f:app.kubernetes.io/name`);
 * - `k:<json>`  an item of an associative list, by the values of its
 *               list-map-keys, a JSON object with the keys sorted (`k:{"name":"web"}`);
 * - `v:<json>`  an item of a set list, by its value (`v:"example.com/finalizer"`);
 * - `i:<n>`     an item of a list by position (not produced by this package, but
 *               accepted).
 *
 * A path element is handled in its serialized form (`PathKey`), which is canonical:
 * two equal elements have the same key. `comparePathKeys` orders keys as
 * Kubernetes does when it writes FieldsV1 (fields, then keys, values, indexes), and
 * `pathString` prints a path the way conflict messages do (`.spec.ports[port=80,protocol="TCP"].name`).
 */
import { isJsonObject } from "../deep-copy.ts";
import { compareStrings, compareValues, goJson, goJsonString, valueToString } from "./value.ts";

/** A serialized, canonical path element (`f:spec`, `k:{"name":"x"}`, `v:1`, `i:0`). */
export type PathKey = string;

/** A field path: path elements from the root of the object. */
export type Path = readonly PathKey[];

/** A decoded path element. */
export type PathElement =
  | { kind: "field"; name: string }
  | { kind: "key"; fields: [string, unknown][] }
  | { kind: "value"; value: unknown }
  | { kind: "index"; index: number };

/** Thrown for a path element that cannot be parsed. */
export class PathElementError extends Error {
  override name = "PathElementError";
}

/** Field keys made at most (the memory is emptied when full). */
export const FIELD_KEY_CACHE_SIZE = 10_000;
const fieldKeys = new Map<string, PathKey>();

/** The key of a map or struct field. */
export function fieldKey(name: string): PathKey {
  let key = fieldKeys.get(name);
  if (key === undefined) {
    key = `f:${name}`;
    if (fieldKeys.size >= FIELD_KEY_CACHE_SIZE) fieldKeys.clear();
    fieldKeys.set(name, key);
  }
  return key;
}

/** The key of a set-list item with value `value`. */
export function valueKey(value: unknown): PathKey {
  return `v:${goJson(value)}`;
}

/** The key of an associative-list item identified by `fields` (sorted here). */
export function keyKey(fields: [string, unknown][]): PathKey {
  if (fields.length === 1) return `k:{${goJsonString(fields[0][0])}:${goJson(fields[0][1])}}`;
  const sorted = [...fields].sort((a, b) => compareStrings(a[0], b[0]));
  return `k:{${sorted.map(([n, v]) => `${goJsonString(n)}:${goJson(v)}`).join(",")}}`;
}

/** The key of a list item by position. */
export function indexKey(index: number): PathKey {
  return `i:${index}`;
}

/** The serialized form of a path element. */
export function serializePathElement(pe: PathElement): PathKey {
  switch (pe.kind) {
    case "field":
      return fieldKey(pe.name);
    case "key":
      return keyKey(pe.fields);
    case "value":
      return valueKey(pe.value);
    case "index":
      return indexKey(pe.index);
  }
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new PathElementError(`invalid JSON in ${what} path element: ${text}`);
  }
}

/**
 * At most this many parsed path elements are remembered (keyed and set-item elements
 * are parsed again and again when managedFields are decoded and sorted); the memory
 * is emptied when it is full.
 */
export const PATH_ELEMENT_CACHE_SIZE = 10_000;

const parsed = new Map<string, PathElement | undefined>();
const canonical = new Map<string, PathKey | undefined>();

/**
 * Decodes a serialized path element. Returns undefined for a well-formed key with an
 * unknown type letter (Kubernetes ignores those); throws PathElementError for a
 * malformed one. The result is shared: do not modify it.
 */
export function parsePathElement(key: string): PathElement | undefined {
  if (parsed.has(key)) return parsed.get(key);
  const pe = parseUncached(key);
  if (parsed.size >= PATH_ELEMENT_CACHE_SIZE) parsed.clear();
  parsed.set(key, pe);
  return pe;
}

function parseUncached(key: string): PathElement | undefined {
  if (key.length < 2) throw new PathElementError(`key must be 2 characters long: ${key}`);
  if (key[1] !== ":") throw new PathElementError(`missing colon: ${key}`);
  const rest = key.slice(2);
  switch (key[0]) {
    case "f":
      return { kind: "field", name: rest };
    case "v":
      return { kind: "value", value: parseJson(rest, "value") };
    case "k": {
      const obj = parseJson(rest, "key");
      if (!isJsonObject(obj))
        throw new PathElementError(`key path element is not an object: ${key}`);
      const fields: [string, unknown][] = Object.keys(obj).map((k) => [k, obj[k]]);
      fields.sort((a, b) => compareStrings(a[0], b[0]));
      return { kind: "key", fields };
    }
    case "i":
      if (!/^[+-]?\d+$/.test(rest)) throw new PathElementError(`invalid index: ${key}`);
      return { kind: "index", index: Number.parseInt(rest, 10) };
    default:
      return undefined;
  }
}

/**
 * The canonical form of a serialized path element (sorted key fields, Go-style JSON),
 * undefined for an unknown type letter; throws PathElementError when malformed.
 */
export function canonicalPathKey(key: string): PathKey | undefined {
  if (key.startsWith("f:")) return key;
  if (canonical.has(key)) return canonical.get(key);
  const pe = parsePathElement(key);
  const out = pe && serializePathElement(pe);
  if (canonical.size >= PATH_ELEMENT_CACHE_SIZE) canonical.clear();
  canonical.set(key, out);
  return out;
}

const RANK: Record<string, number> = { f: 0, k: 1, v: 2, i: 3 };

/**
 * Orders serialized path elements as Kubernetes sorts them: fields (by name), then
 * keyed items (by key fields), then set values (by value order), then indexes.
 */
export function comparePathKeys(a: PathKey, b: PathKey): number {
  if (a === b) return 0;
  const ra = RANK[a[0]] ?? 4;
  const rb = RANK[b[0]] ?? 4;
  if (ra !== rb) return ra < rb ? -1 : 1;
  // Both start with "f:": comparing whole keys orders them by name.
  if (ra === 0) return compareStrings(a, b);
  return comparePathElements(a, parsePathElement(a), b, parsePathElement(b));
}

/**
 * comparePathKeys for keys of the same rank that are already parsed (`pa` is `a`
 * parsed, `pb` is `b`): for sorting many keys, each parsed once.
 */
export function comparePathElements(
  a: PathKey,
  pa: PathElement | undefined,
  b: PathKey,
  pb: PathElement | undefined,
): number {
  if (a === b) return 0;
  if (pa?.kind === "key" && pb?.kind === "key") {
    const x = pa.fields;
    const y = pb.fields;
    for (let i = 0; i < Math.min(x.length, y.length); i++) {
      const c = compareStrings(x[i][0], y[i][0]) || compareValues(x[i][1], y[i][1]);
      if (c !== 0) return c;
    }
    return x.length < y.length ? -1 : x.length > y.length ? 1 : 0;
  }
  if (pa?.kind === "value" && pb?.kind === "value") return compareValues(pa.value, pb.value);
  if (pa?.kind === "index" && pb?.kind === "index") {
    return pa.index < pb.index ? -1 : pa.index > pb.index ? 1 : 0;
  }
  return compareStrings(a, b);
}

/** A path element printed as in Kubernetes' messages: `.name`, `[name="x"]`, `[=v]`, `[3]`. */
export function pathElementString(key: PathKey): string {
  if (key.startsWith("f:")) return `.${key.slice(2)}`;
  const pe = parsePathElement(key);
  switch (pe?.kind) {
    case "key":
      return `[${pe.fields.map(([n, v]) => `${n}=${valueToString(v)}`).join(",")}]`;
    case "value":
      return `[=${valueToString(pe.value)}]`;
    case "index":
      return `[${pe.index}]`;
    default:
      return "{{invalid path element}}";
  }
}

/** A path printed as in Kubernetes' conflict messages, e.g. `.spec.replicas`. */
export function pathString(path: Path): string {
  return path.map(pathElementString).join("");
}
