/**
 * The fields of a new object in FieldsV1, written directly: what
 * `addedFields(obj, schema).difference(untracked).toFieldsV1()` gives, in one walk
 * without building the field set first. A create is the most frequent write and
 * its ownership is exactly "every field of the object", so it gets this short path.
 *
 * Objects of one type mostly have the same fields, so each map and list node's
 * FieldsV1 is remembered per schema node (a few per node, MEMO_ENTRIES): when a
 * node has the same field names (or item keys) in the same order, and each child's
 * FieldsV1 is the very object remembered for it, the node's is too, and is reused
 * instead of being sorted and built again. Reused FieldsV1 objects are shared
 * between objects, so every one of them is frozen, as is the `{}` of every leaf.
 */

import { setMember } from "../deep-copy.ts";
import type { FieldsV1 } from "../meta.ts";
import type { Schema } from "../schema.ts";
import {
  comparePathElements,
  comparePathKeys,
  fieldKey,
  type PathKey,
  parsePathElement,
} from "./field-path.ts";
import type { FieldSet } from "./field-set.ts";
import {
  computeItemKey,
  fieldSchema,
  indexList,
  isAtomicMap,
  itemSchema,
  type ListKind,
  listKind,
  resourceSchema,
} from "./type-info.ts";
import { compareStrings, sortInPlace } from "./value.ts";

/** The marker of a node that is itself a member of the set. */
const SELF = ".";

/** The FieldsV1 of a field with nothing tracked below it (shared: frozen). */
const LEAF: FieldsV1 = Object.freeze({}) as FieldsV1;

/** FieldsV1 of map or list nodes remembered per schema node (most recent first). */
export const MEMO_ENTRIES = 4;
/** Nodes with more fields or items than this are not remembered (long comparisons, big memos). */
export const MEMO_MAX_CHILDREN = 64;

/** A node's FieldsV1 and what it was made from. */
interface Memo {
  untracked: FieldSet | undefined;
  self: boolean;
  /** Field names in the object's order (maps), or item path elements in list order (lists). */
  names: string[];
  /** The FieldsV1 of each child, in the same order (undefined: not tracked). */
  children: (FieldsV1 | undefined)[];
  out: FieldsV1 | undefined;
}

const mapMemos = new WeakMap<Schema, Memo[]>();
const listMemos = new WeakMap<Schema, Memo[]>();

function remember(memos: WeakMap<Schema, Memo[]>, schema: Schema, memo: Memo): void {
  const list = memos.get(schema);
  if (list === undefined) {
    memos.set(schema, [memo]);
    return;
  }
  if (list.length >= MEMO_ENTRIES) list.pop();
  list.unshift(memo);
}

/**
 * The FieldsV1 of every field of `obj` (a whole object with `schema`) but the
 * members of `untracked`; undefined when nothing is left. The result may be
 * shared with other objects' and is frozen.
 */
export function createdFieldsV1(
  obj: unknown,
  schema: Schema | undefined,
  untracked: FieldSet,
): FieldsV1 | undefined {
  if (!isMapValue(obj)) return undefined;
  top = 0;
  try {
    const out = mapFields(obj, resourceSchema(schema), untracked, false);
    return out !== undefined && hasMembers(out) ? out : undefined;
  } finally {
    // What the walk left there is not kept alive (the array keeps its size).
    scratch.fill(undefined);
    top = 0;
  }
}

function isMapValue(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function hasMembers(o: FieldsV1): boolean {
  for (const _ in o) return true;
  return false;
}

/** True for a map with a defined member or a non-empty list. */
function isNonEmptyContainer(v: object): boolean {
  if (Array.isArray(v)) return v.length > 0;
  const o = v as Record<string, unknown>;
  for (const k in o) if (Object.hasOwn(o, k) && o[k] !== undefined) return true;
  return false;
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
  let out: FieldsV1 | undefined;
  if (typeof value === "object" && value !== null && isNonEmptyContainer(value)) {
    const below = untracked?.child(key);
    if (Array.isArray(value)) {
      if (listKind(schema).kind !== "atomic") out = listFields(value, schema, below, member);
    } else if (!isAtomicMap(schema)) {
      out = mapFields(value as Record<string, unknown>, schema, below, member);
    }
  }
  if (out === undefined) return member ? LEAF : undefined;
  return out;
}

/** The FieldsV1 of field `name` of a map with schema `schema`. */
function fieldNode(
  name: string,
  value: unknown,
  schema: Schema | undefined,
  untracked: FieldSet | undefined,
): FieldsV1 | undefined {
  // Scalars (and empty containers) are leaves: no key or schema needed to say so.
  if (untracked === undefined && (typeof value !== "object" || value === null)) return LEAF;
  return node(fieldKey(name), value, fieldSchema(schema, name), untracked);
}

/** A node's FieldsV1 object, with "." when the node itself is a member. */
function start(self: boolean): FieldsV1 {
  const out: FieldsV1 = {};
  if (self) out[SELF] = LEAF;
  return out;
}

/**
 * The children's FieldsV1 of the nodes being made, as one stack: a node's children
 * sit above its parent's, and are dropped when the node is done. Comparing a node
 * with its memos fills it child by child, so a child is made once whatever the
 * number of memos, and nothing is allocated when a memo holds.
 */
const scratch: (FieldsV1 | undefined)[] = [];
/** The end of what `scratch` holds (entries above it are stale). */
let top = 0;

/**
 * Whether map memo `m` holds for `value`: the same own keys in the same order, and
 * each child's FieldsV1 the one remembered. Children are made as needed, into
 * `scratch` from `base` (the i-th holds the FieldsV1 of the value's i-th key).
 */
function mapMemoHolds(
  m: Memo,
  value: Record<string, unknown>,
  schema: Schema | undefined,
  untracked: FieldSet | undefined,
  base: number,
): boolean {
  const names = m.names;
  let i = 0;
  for (const k in value) {
    if (i >= names.length || names[i] !== k || !Object.hasOwn(value, k)) return false;
    let f: FieldsV1 | undefined;
    if (base + i < top) f = scratch[base + i];
    else {
      const v = value[k];
      f = v === undefined ? undefined : fieldNode(k, v, schema, untracked);
      scratch[top++] = f;
    }
    if (f !== m.children[i]) return false;
    i++;
  }
  return i === names.length;
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
  const base = top;
  const memos = schema === undefined ? undefined : mapMemos.get(schema);
  if (memos !== undefined) {
    for (let j = 0; j < memos.length; j++) {
      const m = memos[j];
      if (m.self !== self || m.untracked !== untracked) continue;
      if (mapMemoHolds(m, value, schema, untracked, base)) {
        top = base;
        return m.out;
      }
    }
  }
  const names = Object.keys(value);
  // The children not made while comparing with the memos.
  for (let i = top - base; i < names.length; i++) {
    const v = value[names[i]];
    const f = v === undefined ? undefined : fieldNode(names[i], v, schema, untracked);
    scratch[top++] = f;
  }
  const children = scratch.slice(base, base + names.length);
  top = base;
  // "f:" keys sort as their names do.
  const order: number[] = [];
  for (let i = 0; i < names.length; i++) order.push(i);
  if (order.length > 1) sortInPlace(order, (a, b) => compareStrings(names[a], names[b]));
  let out: FieldsV1 | undefined;
  for (const i of order) {
    const f = children[i];
    if (f === undefined) continue;
    out ??= start(self);
    setMember(out, fieldKey(names[i]), f);
  }
  if (schema !== undefined && names.length <= MEMO_MAX_CHILDREN && allFrozen(children)) {
    if (out !== undefined) Object.freeze(out);
    remember(mapMemos, schema, { untracked, self, names, children, out });
  }
  return out;
}

/** Whether every FieldsV1 given (undefined ones aside) is frozen, so that it may be shared. */
function allFrozen(children: readonly (FieldsV1 | undefined)[]): boolean {
  for (const f of children) if (f !== undefined && !Object.isFrozen(f)) return false;
  return true;
}

/**
 * Whether list memo `m` holds for `value`: the same item keys in the same order
 * (so no key repeats), and each item's FieldsV1 the one remembered. Items are made
 * as needed, into `scratch` from `base`, as for maps.
 */
function listMemoHolds(
  m: Memo,
  value: unknown[],
  kind: ListKind,
  items: Schema | undefined,
  untracked: FieldSet | undefined,
  base: number,
): boolean {
  const keys = m.names;
  if (value.length !== keys.length) return false;
  for (let i = 0; i < value.length; i++) {
    const k = computeItemKey(value[i], kind, items).key;
    if (k === undefined || k !== keys[i]) return false;
    let f: FieldsV1 | undefined;
    if (base + i < top) f = scratch[base + i];
    else {
      f = node(k, value[i], items, untracked);
      scratch[top++] = f;
    }
    if (f !== m.children[i]) return false;
  }
  return true;
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
  const items = itemSchema(schema);
  const base = top;
  const memos = schema === undefined ? undefined : listMemos.get(schema);
  if (memos !== undefined) {
    const kind = listKind(schema);
    for (let j = 0; j < memos.length; j++) {
      const m = memos[j];
      if (m.self !== self || m.untracked !== untracked) continue;
      if (listMemoHolds(m, value, kind, items, untracked, base)) {
        top = base;
        return m.out;
      }
    }
  }
  // Items made while comparing (the first ones, in list order).
  const made = scratch.slice(base, top);
  top = base;
  // Walked once: the items' keys are not worth remembering.
  const index = indexList(value, schema, false);
  if (Array.isArray(index)) return undefined;
  const keys = index.keys;
  const unique = index.count.size === keys.length;
  const children = unique
    ? keys.map((k, i) => (i < made.length ? made[i] : node(k, value[i], items, untracked)))
    : undefined;
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
    const k = keys[i];
    let f: FieldsV1 | undefined;
    if (children === undefined && (index.count.get(k) ?? 0) > 1) {
      // Several items with one key are one atomic field, listed once.
      if (out !== undefined && Object.hasOwn(out, k)) continue;
      if (untracked === undefined || !untracked.hasMember(k)) f = LEAF;
    } else {
      f = children !== undefined ? children[i] : node(k, value[i], items, untracked);
    }
    if (f === undefined) continue;
    out ??= start(self);
    setMember(out, k, f);
  }
  // Lists with repeated keys (one atomic field per key) are not remembered.
  if (
    schema !== undefined &&
    children !== undefined &&
    keys.length <= MEMO_MAX_CHILDREN &&
    allFrozen(children)
  ) {
    if (out !== undefined) Object.freeze(out);
    remember(listMemos, schema, { untracked, self, names: keys, children, out });
  }
  return out;
}
