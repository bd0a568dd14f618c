/**
 * The uniqueness `x-kubernetes-list-type` promises, checked on every write of a
 * custom resource as Kubernetes checks it: the items of a `set` list are unique,
 * and so are the keys (`x-kubernetes-list-map-keys`) of the items of a `map`
 * list. Each value that repeats is reported once, at its second appearance, as
 * `Duplicate value: ...` with the value printed as Go prints it.
 */
import type { Schema, StatusCause } from "@setpoint/api";
import { CauseType, fieldErrors } from "@setpoint/api";
import { MAX_OBJECT_DEPTH } from "../object-limits.ts";
import { childPath, declaredProperty, indexPath, isObject, keyPath } from "./paths.ts";

/** Every duplicate in the set and map lists of `obj`, by its schema. */
export function listTypeCauses(obj: unknown, schema: Schema): StatusCause[] {
  const out: StatusCause[] = [];
  if (isObject(obj)) walkObject(obj, schema, "", out, 0);
  return out;
}

function walk(v: unknown, s: Schema, path: string, out: StatusCause[], depth: number): void {
  if (depth > MAX_OBJECT_DEPTH) return;
  if (Array.isArray(v)) walkArray(v, s, path, out, depth);
  else if (isObject(v)) walkObject(v, s, path, out, depth);
}

function walkObject(
  obj: Record<string, unknown>,
  s: Schema,
  path: string,
  out: StatusCause[],
  depth: number,
): void {
  const extra = isObject(s.additionalProperties) ? (s.additionalProperties as Schema) : undefined;
  for (const k in obj) {
    if (!Object.hasOwn(obj, k)) continue;
    const declared = declaredProperty(s, k);
    if (declared) walk(obj[k], declared, childPath(path, k), out, depth + 1);
    else if (extra) walk(obj[k], extra, keyPath(path, k), out, depth + 1);
  }
}

function walkArray(
  items: unknown[],
  s: Schema,
  path: string,
  out: StatusCause[],
  depth: number,
): void {
  const listType = s["x-kubernetes-list-type"];
  if (listType === "set") {
    for (const i of repeatedAt(items)) out.push(duplicate(indexPath(path, i), items[i]));
  } else if (listType === "map") {
    out.push(...mapListCauses(items, s["x-kubernetes-list-map-keys"] ?? [], path));
  }
  if (s.items) {
    for (let i = 0; i < items.length; i++)
      walk(items[i], s.items, indexPath(path, i), out, depth + 1);
  }
}

/** A key no item of a map list gave: all such items share it. */
const UNSPECIFIED = Symbol("unspecified key");

function mapListCauses(items: unknown[], keys: readonly string[], path: string): StatusCause[] {
  for (let i = 0; i < items.length; i++) {
    const x = items[i];
    if (x !== null && !isObject(x)) {
      return [
        fieldErrors.invalid(
          indexPath(path, i),
          x,
          "must be an object for an array of list-type map",
        ),
      ];
    }
  }
  if (items.length <= 1) return [];
  if (keys.length === 1) {
    const field = keys[0];
    const values = items.map((x) =>
      isObject(x) && Object.hasOwn(x, field) ? x[field] : UNSPECIFIED,
    );
    return repeatedAt(values).map((i) =>
      duplicate(indexPath(path, i), values[i] === UNSPECIFIED ? {} : { [field]: values[i] }),
    );
  }
  const values = items.map((x) => {
    const key: Record<string, unknown> = {};
    if (isObject(x)) for (const k of keys) if (Object.hasOwn(x, k)) key[k] = x[k];
    return key;
  });
  return repeatedAt(values).map((i) => duplicate(indexPath(path, i), values[i]));
}

/** The index of the second appearance of each value that appears more than once. */
function repeatedAt(values: readonly unknown[]): number[] {
  const seen = new Map<unknown, number>();
  const out: number[] = [];
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    const id = typeof v === "object" && v !== null ? `\u0000${canonicalJson(v)}` : v;
    const times = seen.get(id) ?? 0;
    seen.set(id, times + 1);
    if (times === 1) out.push(i);
  }
  return out;
}

/** JSON with object keys sorted, as Go's json.Marshal of a map writes it. */
function canonicalJson(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => {
    if (!isObject(x)) return x;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(x).sort()) sorted[k] = x[k];
    return sorted;
  });
}

function duplicate(field: string, value: unknown): StatusCause {
  return { reason: CauseType.Duplicate, message: `Duplicate value: ${goSyntax(value)}`, field };
}

/** A decoded JSON value as Go's %#v prints it (how field errors show compound values). */
export function goSyntax(v: unknown): string {
  if (v === null || v === undefined) return "interface {}(nil)";
  if (typeof v === "string") return JSON.stringify(v);
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  if (Array.isArray(v)) return `[]interface {}{${v.map(goSyntax).join(", ")}}`;
  if (isObject(v)) {
    const parts = Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${goSyntax(v[k])}`);
    return `map[string]interface {}{${parts.join(", ")}}`;
  }
  return String(v);
}
