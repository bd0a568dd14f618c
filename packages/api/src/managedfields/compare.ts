/**
 * The difference between two versions of an object, as three field sets
 * (structured-merge-diff's Compare): `added` (fields set in the new version only),
 * `modified` (leaves whose value changed), `removed` (fields gone in the new
 * version). Leaves are scalars, atomic lists and maps, and empty or null maps and
 * lists; a granular map, list or list item that appears or disappears is itself in
 * `added` or `removed`, next to the fields below it.
 *
 * Items of keyed and set lists are matched by key, not position: reordering a list
 * changes nothing. Duplicate items (several items with one key, which live objects
 * may have) are compared as one atomic field.
 */

import { deepEqual, isJsonObject } from "../deep-copy.ts";
import type { Schema } from "../schema.ts";
import { fieldKey, type PathKey } from "./field-path.ts";
import { FieldSet } from "./field-set.ts";
import {
  fieldType,
  indexList,
  itemSchema,
  resourceSchema,
  type Shape,
  shapeOf,
} from "./type-info.ts";
import { definedKeys } from "./value.ts";

/** What changed between two versions of an object. */
export interface Comparison {
  added: FieldSet;
  modified: FieldSet;
  removed: FieldSet;
}

interface Ctx extends Comparison {
  path: PathKey[];
}

/** Compares two versions of a whole object (`undefined` is an empty object). */
export function compareObjects(lhs: unknown, rhs: unknown, schema: Schema | undefined): Comparison {
  if (lhs === undefined) {
    return { added: addedFields(rhs, schema), modified: new FieldSet(), removed: new FieldSet() };
  }
  const c: Ctx = {
    added: new FieldSet(),
    modified: new FieldSet(),
    removed: new FieldSet(),
    path: [],
  };
  const l = isJsonObject(lhs) ? lhs : {};
  const r = isJsonObject(rhs) ? rhs : {};
  compareChildren(l, r, resourceSchema(schema), "map", c);
  return { added: c.added, modified: c.modified, removed: c.removed };
}

/**
 * The fields of a whole object, as comparing it with nothing adds them
 * (`compareObjects(undefined, obj).added`), built in one walk: every leaf, and
 * every granular map, list and list item node itself.
 */
export function addedFields(obj: unknown, schema: Schema | undefined): FieldSet {
  const out = new FieldSet();
  if (isJsonObject(obj)) addMapChildren(out, obj, resourceSchema(schema));
  return out;
}

/** Adds to `set` the node `key` holding `value`, and what lies below it. */
function addNode(set: FieldSet, key: PathKey, value: unknown, schema: Schema | undefined): void {
  set.addMember(key);
  if (value === undefined || value === null || isEmptyContainer(value)) return;
  const shape = shapeOf(value, schema);
  if (shape === "scalar" || shape === "atomic") return;
  const child = new FieldSet();
  if (shape === "map") addMapChildren(child, value as Record<string, unknown>, schema);
  // Items that cannot be identified: the list is one field.
  else if (!addListChildren(child, value as unknown[], schema)) return;
  set.setChild(key, child);
}

function addMapChildren(
  set: FieldSet,
  value: Record<string, unknown>,
  schema: Schema | undefined,
): void {
  for (const k of Object.keys(value)) {
    const v = value[k];
    if (v !== undefined) addNode(set, fieldKey(k), v, fieldType(schema, k).schema);
  }
}

function addListChildren(set: FieldSet, value: unknown[], schema: Schema | undefined): boolean {
  const index = indexList(value, schema);
  if (Array.isArray(index)) return false;
  const items = itemSchema(schema);
  for (let i = 0; i < value.length; i++) {
    const k = index.keys[i];
    const n = index.count.get(k) ?? 0;
    // Several items with one key are one atomic field.
    if (n > 1) set.addMember(k);
    else addNode(set, k, value[i], items);
  }
  return true;
}

/** True if nothing changed. */
export function isSame(c: Comparison): boolean {
  return c.added.empty && c.modified.empty && c.removed.empty;
}

/**
 * The shape two versions of a node share: null and absent take the other side's
 * shape; "mismatch" when both are present with different shapes.
 */
export function pairShape(l: unknown, r: unknown, schema: Schema | undefined): Shape | "mismatch" {
  const sl = l === undefined || l === null ? undefined : shapeOf(l, schema);
  const sr = r === undefined || r === null ? undefined : shapeOf(r, schema);
  if (sl !== undefined && sr !== undefined && sl !== sr) return "mismatch";
  return sl ?? sr ?? "scalar";
}

/** True for an absent, null or empty map or list. */
export function isEmptyContainer(v: unknown): boolean {
  if (v === undefined || v === null) return true;
  if (Array.isArray(v)) return v.length === 0;
  return isJsonObject(v) && definedKeys(v).length === 0;
}

function compareNode(l: unknown, r: unknown, schema: Schema | undefined, c: Ctx): void {
  // One value on both sides (a status write keeps the stored spec): nothing changed below.
  if (l === r) return;
  const shape = pairShape(l, r, schema);
  if (shape === "mismatch") {
    c.modified.insert(c.path);
    compareChildren(l, undefined, schema, shapeOf(l, schema), c);
    compareChildren(undefined, r, schema, shapeOf(r, schema), c);
    return;
  }
  if (shape === "scalar" || shape === "atomic" || (isEmptyContainer(l) && isEmptyContainer(r))) {
    if (l === undefined) c.added.insert(c.path);
    else if (r === undefined) c.removed.insert(c.path);
    else if (!deepEqual(l, r)) c.modified.insert(c.path);
    return;
  }
  if (!compareChildren(l, r, schema, shape, c)) {
    // Items that cannot be identified: the list is compared as one field.
    if (l === undefined) c.added.insert(c.path);
    else if (r === undefined) c.removed.insert(c.path);
    else if (!deepEqual(l, r)) c.modified.insert(c.path);
    return;
  }
  if (l === undefined) c.added.insert(c.path);
  else if (r === undefined) c.removed.insert(c.path);
}

/** Compares the children of a map or list node; false if a list's items cannot be identified. */
function compareChildren(
  l: unknown,
  r: unknown,
  schema: Schema | undefined,
  shape: Shape,
  c: Ctx,
): boolean {
  if (shape === "map") {
    const lm = isJsonObject(l) ? l : undefined;
    const rm = isJsonObject(r) ? r : undefined;
    const keys = new Set<string>(lm ? definedKeys(lm) : []);
    if (rm) for (const k of definedKeys(rm)) keys.add(k);
    for (const k of keys) {
      c.path.push(fieldKey(k));
      compareNode(lm?.[k], rm?.[k], fieldType(schema, k).schema, c);
      c.path.pop();
    }
    return true;
  }
  if (shape === "list") return compareLists(l, r, schema, c);
  return true;
}

function group(
  items: unknown[],
  keys: PathKey[],
  into: Map<PathKey, unknown[]>,
  order: PathKey[],
): void {
  for (let i = 0; i < items.length; i++) {
    const g = into.get(keys[i]);
    if (g) g.push(items[i]);
    else {
      into.set(keys[i], [items[i]]);
      order.push(keys[i]);
    }
  }
}

function compareLists(l: unknown, r: unknown, schema: Schema | undefined, c: Ctx): boolean {
  const la = Array.isArray(l) ? l : [];
  const ra = Array.isArray(r) ? r : [];
  const li = indexList(la, schema);
  const ri = indexList(ra, schema);
  if (Array.isArray(li) || Array.isArray(ri)) return false;
  const lGroups = new Map<PathKey, unknown[]>();
  const rGroups = new Map<PathKey, unknown[]>();
  const order: PathKey[] = [];
  group(la, li.keys, lGroups, order);
  const rOrder: PathKey[] = [];
  group(ra, ri.keys, rGroups, rOrder);
  for (const k of rOrder) if (!lGroups.has(k)) order.push(k);
  const items = itemSchema(schema);
  for (const k of order) {
    const lg = lGroups.get(k) ?? [];
    const rg = rGroups.get(k) ?? [];
    c.path.push(k);
    if (lg.length <= 1 && rg.length <= 1) {
      compareNode(lg[0], rg[0], items, c);
    } else if (lg.length >= 2 && rg.length >= 2) {
      if (!deepEqual(lg, rg)) c.modified.insert(c.path);
    } else if (lg.length >= 2) {
      if (rg.length > 0) compareNode(undefined, rg[0], items, c);
      c.removed.insert(c.path);
    } else {
      if (lg.length > 0) compareNode(lg[0], undefined, items, c);
      c.added.insert(c.path);
    }
    c.path.pop();
  }
  return true;
}
