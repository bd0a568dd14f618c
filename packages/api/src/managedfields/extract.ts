/**
 * The set of fields an object sets (structured-merge-diff's ToFieldSet): every
 * scalar, every atomic list or map (one field, nothing below it), every item of a
 * set or keyed list (plus the fields inside keyed items), every null or empty-map
 * field, and every field of a map that the schema does not declare (a label key, a
 * preserve-unknown-fields key) even when it has fields below it. Declared struct
 * fields with fields below them, and granular lists, are not members themselves.
 *
 * An applied configuration is read strictly: duplicate items and items that cannot
 * be identified are errors. Live objects are read leniently: duplicates count as one
 * field (the item, nothing below it), and a list whose items cannot be identified
 * counts as one atomic field.
 */

import { isJsonObject } from "../deep-copy.ts";
import type { Schema } from "../schema.ts";
import { fieldKey, type PathKey, pathElementString, pathString } from "./field-path.ts";
import { FieldSet } from "./field-set.ts";
import { fieldType, indexList, itemSchema, resourceSchema, shapeOf } from "./type-info.ts";
import { definedKeys } from "./value.ts";

/** Thrown when an applied configuration cannot be read as its type (its messages name the paths). */
export class TypedValueError extends Error {
  override name = "TypedValueError";
  constructor(readonly errors: string[]) {
    super(errors.length === 1 ? errors[0] : ["errors:", ...errors.map((e) => `  ${e}`)].join("\n"));
  }
}

interface Walk {
  strict: boolean;
  errors: string[];
  path: PathKey[];
}

/**
 * The fields `obj` sets. `schema` is the type's schema (the whole object's); with
 * `strict`, throws TypedValueError for duplicates and unidentifiable list items.
 */
export function extractFields(obj: unknown, schema: Schema | undefined, strict = false): FieldSet {
  const w: Walk = { strict, errors: [], path: [] };
  const out = new FieldSet();
  if (isJsonObject(obj)) walkMap(obj, resourceSchema(schema), out, w);
  if (w.errors.length > 0) throw new TypedValueError(w.errors);
  return out;
}

/**
 * Every node `obj` contains, as paths: each map key and each list item at any depth
 * (not below atomic values), whether or not it counts as a field of its own.
 */
export function extractNodes(obj: unknown, schema: Schema | undefined): FieldSet {
  const out = new FieldSet();
  if (isJsonObject(obj)) nodesOfMap(obj, resourceSchema(schema), out);
  return out;
}

function nodesOfMap(obj: Record<string, unknown>, schema: Schema | undefined, set: FieldSet): void {
  for (const name of definedKeys(obj)) {
    const key = fieldKey(name);
    set.addMember(key);
    const child = new FieldSet();
    nodesOf(obj[name], fieldType(schema, name).schema, child);
    set.setChild(key, child);
  }
}

function nodesOf(value: unknown, schema: Schema | undefined, set: FieldSet): void {
  const shape = shapeOf(value, schema);
  if (shape === "map") nodesOfMap(value as Record<string, unknown>, schema, set);
  if (shape !== "list") return;
  const items = value as unknown[];
  const index = indexList(items, schema);
  if (Array.isArray(index)) return;
  const itemsSchema = itemSchema(schema);
  items.forEach((item, i) => {
    const key = index.keys[i];
    set.addMember(key);
    const child = new FieldSet();
    nodesOf(item, itemsSchema, child);
    set.setChild(key, set.child(key)?.union(child) ?? child);
  });
}

function walkMap(
  obj: Record<string, unknown>,
  schema: Schema | undefined,
  set: FieldSet,
  w: Walk,
): void {
  for (const name of definedKeys(obj)) {
    const ft = fieldType(schema, name);
    const v = obj[name];
    const key = fieldKey(name);
    w.path.push(key);
    const leaf = walkValue(v, ft.schema, set, key, w);
    w.path.pop();
    if (leaf || v === null || !ft.declared || (isJsonObject(v) && definedKeys(v).length === 0)) {
      set.addMember(key);
    }
  }
}

/**
 * Walks `value` found below `key` of `parent`; records the fields below it in
 * `parent`'s child set. Returns true if the value is a leaf (one field).
 */
function walkValue(
  value: unknown,
  schema: Schema | undefined,
  parent: FieldSet,
  key: PathKey,
  w: Walk,
): boolean {
  switch (shapeOf(value, schema)) {
    case "scalar":
    case "atomic":
      return true;
    case "map": {
      const child = new FieldSet();
      walkMap(value as Record<string, unknown>, schema, child, w);
      parent.setChild(key, child);
      return false;
    }
    case "list":
      return walkList(value as unknown[], schema, parent, key, w);
  }
}

function walkList(
  items: unknown[],
  schema: Schema | undefined,
  parent: FieldSet,
  key: PathKey,
  w: Walk,
): boolean {
  const index = indexList(items, schema);
  if (Array.isArray(index)) {
    if (!w.strict) return true;
    for (const e of index) w.errors.push(`${pathString(w.path)}: ${e}`);
    return false;
  }
  const itemsSchema = itemSchema(schema);
  const child = new FieldSet();
  const reported = new Set<PathKey>();
  for (let i = 0; i < items.length; i++) {
    const k = index.keys[i];
    child.addMember(k);
    if ((index.count.get(k) ?? 0) > 1) {
      if (w.strict && !reported.has(k)) {
        reported.add(k);
        w.errors.push(`${pathString(w.path)}: duplicate entries for key ${pathElementString(k)}`);
      }
      continue;
    }
    w.path.push(k);
    walkValue(items[i], itemsSchema, child, k, w);
    w.path.pop();
  }
  parent.setChild(key, child);
  return false;
}
