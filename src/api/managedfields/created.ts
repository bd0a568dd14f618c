/**
 * The fields of a new object in FieldsV1, written directly: what
 * `addedFields(obj, schema).difference(untracked).toFieldsV1()` gives, in one walk
 * without building the field set first. A create is the most frequent write and
 * its ownership is exactly "every field of the object", so it gets this short path.
 */

import { isJsonObject, setMember } from "../deepcopy.ts";
import type { FieldsV1 } from "../meta.ts";
import type { Schema } from "../schema.ts";
import { isEmptyContainer } from "./compare.ts";
import {
  comparePathElements,
  comparePathKeys,
  fieldKey,
  type PathKey,
  parsePathElement,
} from "./fieldpath.ts";
import type { FieldSet } from "./fieldset.ts";
import { fieldSchema, indexList, itemSchema, resourceSchema, shapeOf } from "./typeinfo.ts";
import { compareStrings, sortInPlace } from "./value.ts";

/** The marker of a node that is itself a member of the set. */
const SELF = ".";

/**
 * The FieldsV1 of every field of `obj` (a whole object with `schema`) but the
 * members of `untracked`; undefined when nothing is left.
 */
export function createdFieldsV1(
  obj: unknown,
  schema: Schema | undefined,
  untracked: FieldSet,
): FieldsV1 | undefined {
  if (!isJsonObject(obj)) return undefined;
  const out = mapChildren(obj, resourceSchema(schema), untracked);
  return out && Object.keys(out).length > 0 ? out : undefined;
}

/**
 * The FieldsV1 of node `key` holding `value` (below a node whose untracked set is
 * `untracked`), or undefined when nothing of it is tracked.
 */
function node(
  key: PathKey,
  value: unknown,
  schema: Schema | undefined,
  untracked: FieldSet | undefined,
): FieldsV1 | undefined {
  const member = untracked === undefined || !untracked.hasMember(key);
  const below = untracked?.child(key);
  let out: FieldsV1 | undefined;
  if (value !== undefined && value !== null && !isEmptyContainer(value)) {
    const shape = shapeOf(value, schema);
    if (shape === "map") out = mapFields(value as Record<string, unknown>, schema, below, member);
    else if (shape === "list") out = listFields(value as unknown[], schema, below, member);
  }
  if (out === undefined) return member ? {} : undefined;
  return out;
}

/** A node's FieldsV1 object, with "." when the node itself is a member. */
function start(self: boolean): FieldsV1 {
  const out: FieldsV1 = {};
  if (self) out[SELF] = {};
  return out;
}

function mapChildren(
  value: Record<string, unknown>,
  schema: Schema | undefined,
  untracked: FieldSet | undefined,
): FieldsV1 {
  return mapFields(value, schema, untracked, false) ?? {};
}

/**
 * The fields below a map node, keys sorted, after "." when the node is a member;
 * undefined when there are none.
 */
function mapFields(
  value: Record<string, unknown>,
  schema: Schema | undefined,
  untracked: FieldSet | undefined,
  self: boolean,
): FieldsV1 | undefined {
  const names = Object.keys(value);
  // "f:" keys sort as their names do.
  if (names.length > 1) sortInPlace(names, compareStrings);
  let out: FieldsV1 | undefined;
  for (const k of names) {
    const v = value[k];
    if (v === undefined) continue;
    const key = fieldKey(k);
    const f = node(key, v, fieldSchema(schema, k), untracked);
    if (f === undefined) continue;
    out ??= start(self);
    setMember(out, key, f);
  }
  return out;
}

/**
 * The items of a list node, as mapFields; `{}`-less undefined too when the items
 * cannot be identified (the list is then one field).
 */
function listFields(
  value: unknown[],
  schema: Schema | undefined,
  untracked: FieldSet | undefined,
  self: boolean,
): FieldsV1 | undefined {
  // Walked once: the items' keys are not worth remembering.
  const index = indexList(value, schema, false);
  if (Array.isArray(index)) return undefined;
  const items = itemSchema(schema);
  const keys = index.keys;
  const order: number[] = [];
  for (let i = 0; i < keys.length; i++) order.push(i);
  if (order.length > 1) {
    if (keys[0].startsWith("f:")) {
      sortInPlace(order, (a, b) => comparePathKeys(keys[a], keys[b]));
    } else {
      // Each item's key parsed once, not once per comparison.
      const parsed = keys.map(parsePathElement);
      sortInPlace(order, (a, b) =>
        keys[a][0] === keys[b][0]
          ? comparePathElements(keys[a], parsed[a], keys[b], parsed[b])
          : comparePathKeys(keys[a], keys[b]),
      );
    }
  }
  let out: FieldsV1 | undefined;
  for (const i of order) {
    const k = index.keys[i];
    let f: FieldsV1 | undefined;
    if ((index.count.get(k) ?? 0) > 1) {
      // Several items with one key are one atomic field, listed once.
      if (out !== undefined && Object.hasOwn(out, k)) continue;
      if (untracked === undefined || !untracked.hasMember(k)) f = {};
    } else {
      f = node(k, value[i], items, untracked);
    }
    if (f === undefined) continue;
    out ??= start(self);
    setMember(out, k, f);
  }
  return out;
}
