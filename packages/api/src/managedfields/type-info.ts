/**
 * How field management reads a Schema: which children a node has, whether it is
 * one field (atomic) or merged field by field (granular), and how list items are
 * identified. The rules are Kubernetes' (structured-merge-diff over OpenAPI):
 *
 * - maps and structs are granular unless `x-kubernetes-map-type: atomic`;
 * - lists follow `x-kubernetes-list-type`: `atomic` (one field), `set` (items by
 *   value, `v:`), `map` (items by their `x-kubernetes-list-map-keys`, `k:`); a list
 *   without the marker is atomic, except that built-in schemas carrying the
 *   strategic-merge markers `x-kubernetes-patch-strategy: merge` (and a merge key)
 *   are a set (or a map keyed by the merge key), as Kubernetes converts them;
 * - where there is no schema (no schema at all, undeclared fields under
 *   `x-kubernetes-preserve-unknown-fields`) maps are granular and lists atomic;
 * - `metadata` of a top-level object or of an `x-kubernetes-embedded-resource` is
 *   always ObjectMeta, with ObjectMeta's markers (labels and annotations granular,
 *   finalizers a set, ownerReferences a map keyed by uid whose items are atomic).
 */

import { isJsonObject } from "../deep-copy.ts";
import type { Schema } from "../schema.ts";
import { keyKey, type PathKey, valueKey } from "./field-path.ts";
import { getOwn, goQuote } from "./value.ts";

const stringMap: Schema = { type: "object", additionalProperties: { type: "string" } };

/** The parts of ObjectMeta's schema that field management depends on. */
export const OBJECT_META_SCHEMA: Schema = {
  type: "object",
  properties: {
    annotations: stringMap,
    creationTimestamp: { type: "string" },
    deletionGracePeriodSeconds: { type: "integer" },
    deletionTimestamp: { type: "string" },
    finalizers: { type: "array", items: { type: "string" }, "x-kubernetes-list-type": "set" },
    generateName: { type: "string" },
    generation: { type: "integer" },
    labels: stringMap,
    managedFields: { type: "array", items: { type: "object" }, "x-kubernetes-list-type": "atomic" },
    name: { type: "string" },
    namespace: { type: "string" },
    ownerReferences: {
      type: "array",
      items: {
        type: "object",
        "x-kubernetes-map-type": "atomic",
        properties: {
          apiVersion: { type: "string" },
          blockOwnerDeletion: { type: "boolean" },
          controller: { type: "boolean" },
          kind: { type: "string" },
          name: { type: "string" },
          uid: { type: "string" },
        },
      },
      "x-kubernetes-list-type": "map",
      "x-kubernetes-list-map-keys": ["uid"],
    },
    resourceVersion: { type: "string" },
    selfLink: { type: "string" },
    uid: { type: "string" },
  },
};

const resourceCache = new WeakMap<Schema, Schema>();
const EMPTY_RESOURCE: Schema = {
  type: "object",
  properties: {
    apiVersion: { type: "string" },
    kind: { type: "string" },
    metadata: OBJECT_META_SCHEMA,
  },
};

/**
 * The schema of a whole object (top-level, or an embedded resource): `schema` with
 * apiVersion, kind and ObjectMeta's metadata.
 */
export function resourceSchema(schema: Schema | undefined): Schema {
  if (!schema) return EMPTY_RESOURCE;
  let out = resourceCache.get(schema);
  if (!out) {
    out = {
      ...schema,
      properties: {
        apiVersion: { type: "string" },
        kind: { type: "string" },
        ...schema.properties,
        metadata: OBJECT_META_SCHEMA,
      },
    };
    resourceCache.set(schema, out);
  }
  return out;
}

function resolved(s: Schema | undefined): Schema | undefined {
  return s?.["x-kubernetes-embedded-resource"] ? resourceSchema(s) : s;
}

/** The schema of a map or struct field, and whether the field is declared (a struct field). */
export interface FieldType {
  schema: Schema | undefined;
  declared: boolean;
}

const UNKNOWN: FieldType = { schema: undefined, declared: false };

/** The type of field `name` of an object with schema `parent`. */
export function fieldType(parent: Schema | undefined, name: string): FieldType {
  if (!parent) return UNKNOWN;
  const props = parent.properties;
  if (props && Object.hasOwn(props, name)) return { schema: resolved(props[name]), declared: true };
  const ap = parent.additionalProperties;
  if (typeof ap === "object") return { schema: resolved(ap), declared: false };
  return UNKNOWN;
}

/** fieldType(parent, name).schema, without making the FieldType. */
export function fieldSchema(parent: Schema | undefined, name: string): Schema | undefined {
  if (!parent) return undefined;
  const props = parent.properties;
  if (props && Object.hasOwn(props, name)) return resolved(props[name]);
  const ap = parent.additionalProperties;
  return typeof ap === "object" ? resolved(ap) : undefined;
}

/** The schema of the items of a list with schema `list`. */
export function itemSchema(list: Schema | undefined): Schema | undefined {
  return resolved(list?.items);
}

/** The schema of the child of a node reached through `key` (field or list item). */
export function childSchema(schema: Schema | undefined, key: PathKey): Schema | undefined {
  return key.startsWith("f:") ? fieldType(schema, key.slice(2)).schema : itemSchema(schema);
}

/** How a list is merged. */
export type ListKind = { kind: "atomic" } | { kind: "set" } | { kind: "map"; keys: string[] };

const ATOMIC: ListKind = { kind: "atomic" };
const SET: ListKind = { kind: "set" };

/** Keyed list kinds by schema: made once per schema rather than once per look. */
const keyedKinds = new WeakMap<Schema, ListKind>();

/** The list type a list schema declares. */
export function listKind(schema: Schema | undefined): ListKind {
  if (!schema) return ATOMIC;
  const lt = schema["x-kubernetes-list-type"];
  if (lt === "atomic") return ATOMIC;
  if (lt === "set") return SET;
  if (lt === undefined && schema["x-kubernetes-patch-strategy"] === undefined) return ATOMIC;
  let kind = keyedKinds.get(schema);
  if (kind === undefined) {
    kind = declaredListKind(schema);
    keyedKinds.set(schema, kind);
  }
  return kind;
}

function declaredListKind(schema: Schema): ListKind {
  const lt = schema["x-kubernetes-list-type"];
  if (lt === "map") {
    const keys = schema["x-kubernetes-list-map-keys"] ?? [];
    return keys.length > 0 ? { kind: "map", keys } : SET;
  }
  const strategy = schema["x-kubernetes-patch-strategy"];
  if (strategy?.split(",").includes("merge")) {
    const key = schema["x-kubernetes-patch-merge-key"];
    return key ? { kind: "map", keys: [key] } : SET;
  }
  return ATOMIC;
}

/** True if the schema makes a map or struct one atomic field. */
export function isAtomicMap(schema: Schema | undefined): boolean {
  return schema?.["x-kubernetes-map-type"] === "atomic";
}

/**
 * How a value is walked: `scalar` and `atomic` values are one field (leaves);
 * `map` is granular (fields below it); `list` is a set or a keyed list (items below it).
 */
export type Shape = "scalar" | "atomic" | "map" | "list";

/** The shape of `value` under `schema`. */
export function shapeOf(value: unknown, schema: Schema | undefined): Shape {
  if (Array.isArray(value)) return listKind(schema).kind === "atomic" ? "atomic" : "list";
  if (isJsonObject(value)) return isAtomicMap(schema) ? "atomic" : "map";
  return "scalar";
}

/** The path element of a list item, or the reason it has none. */
export type ItemKey = { key: PathKey; error?: undefined } | { key?: undefined; error: string };

interface CachedKey {
  keys: string[];
  values: unknown[];
  result: ItemKey;
}

/**
 * Path elements of keyed-list items already computed, per item schema and item
 * object: an apply walks the same items several times (merge, compare, extract). An
 * entry is used only while the item's key fields still hold the same values.
 */
const itemKeyCache = new WeakMap<Schema, WeakMap<object, CachedKey>>();

/** The path element of an item of a set or keyed list. */
export function itemKey(item: unknown, kind: ListKind, items: Schema | undefined): ItemKey {
  if (kind.kind !== "map" || !items || !isJsonObject(item))
    return computeItemKey(item, kind, items);
  let perSchema = itemKeyCache.get(items);
  if (!perSchema) {
    perSchema = new WeakMap();
    itemKeyCache.set(items, perSchema);
  }
  const values = kind.keys.map((k) => getOwn(item, k));
  const hit = perSchema.get(item);
  if (hit && hit.keys === kind.keys && hit.values.every((v, i) => v === values[i]))
    return hit.result;
  const result = computeItemKey(item, kind, items);
  if (values.every((v) => typeof v !== "object" || v === null)) {
    perSchema.set(item, { keys: kind.keys, values, result });
  }
  return result;
}

/** Keyed-item path elements remembered per key field and value, at most (then forgotten). */
export const ITEM_KEY_CACHE_SIZE = 10_000;

/**
 * Path elements of items keyed by one field with a string value, by field name and
 * value: the same names (a container's, an env variable's) come back in object
 * after object, and the remembered key is the same string each time.
 */
const singleKeyItems = new Map<string, Map<string, ItemKey>>();
let singleKeyItemCount = 0;

function singleStringKey(name: string, value: string): ItemKey {
  let byValue = singleKeyItems.get(name);
  if (byValue === undefined) {
    byValue = new Map();
    singleKeyItems.set(name, byValue);
  }
  let hit = byValue.get(value);
  if (hit === undefined) {
    if (singleKeyItemCount >= ITEM_KEY_CACHE_SIZE) {
      singleKeyItems.clear();
      singleKeyItemCount = 0;
      byValue = new Map();
      singleKeyItems.set(name, byValue);
    }
    hit = { key: keyKey([[name, value]]) };
    byValue.set(value, hit);
    singleKeyItemCount++;
  }
  return hit;
}

/** The path element of an item of a set or keyed list, not remembered (itemKey remembers). */
export function computeItemKey(item: unknown, kind: ListKind, items: Schema | undefined): ItemKey {
  if (kind.kind === "map") {
    if (item === null) return { error: "associative list with keys may not have a null element" };
    if (!isJsonObject(item))
      return { error: "associative list with keys may not have non-map elements" };
    if (kind.keys.length === 1) {
      const v = getOwn(item, kind.keys[0]);
      if (typeof v === "string") return singleStringKey(kind.keys[0], v);
    }
    const fields: [string, unknown][] = [];
    for (const name of kind.keys) {
      const v = getOwn(item, name);
      if (v !== undefined) {
        fields.push([name, v]);
        continue;
      }
      const props = items?.properties;
      const def = props && Object.hasOwn(props, name) ? props[name].default : undefined;
      if (def !== undefined) fields.push([name, def]);
    }
    if (fields.length === 0) {
      return {
        error: `associative list with keys has an element that omits all key fields [${kind.keys.map(goQuote).join(" ")}] (and doesn't have default values for any key fields)`,
      };
    }
    return { key: keyKey(fields) };
  }
  if (isJsonObject(item))
    return { error: "associative list without keys has an element that's a map type" };
  if (Array.isArray(item))
    return { error: "not supported: associative list with lists as elements" };
  if (item === null)
    return { error: "associative list without keys has an element that's an explicit null" };
  return { key: valueKey(item) };
}

/** The items of a set or keyed list, by path element. */
export interface IndexedList {
  /** The path element of each item, in list order. */
  keys: PathKey[];
  /** How many items share each path element (more than one: duplicates). */
  count: Map<PathKey, number>;
}

/**
 * Indexes the items of a non-atomic list; returns the errors ("element 2: ...")
 * when some item cannot be identified. `cached`: remember the items' keys (for
 * lists walked several times, as an apply does).
 */
export function indexList(
  items: unknown[],
  schema: Schema | undefined,
  cached = true,
): IndexedList | string[] {
  const kind = listKind(schema);
  const itemsSchema = itemSchema(schema);
  const keys: PathKey[] = [];
  const count = new Map<PathKey, number>();
  const errors: string[] = [];
  for (let i = 0; i < items.length; i++) {
    const k = cached
      ? itemKey(items[i], kind, itemsSchema)
      : computeItemKey(items[i], kind, itemsSchema);
    if (k.error !== undefined) {
      errors.push(`element ${i}: ${k.error}`);
      continue;
    }
    keys.push(k.key);
    count.set(k.key, (count.get(k.key) ?? 0) + 1);
  }
  return errors.length > 0 ? errors : { keys, count };
}
