/**
 * Removing fields from an object, and the pruning step of server-side apply: after
 * merging, the fields a manager applied last time and leaves out now are removed,
 * unless some manager (another applier, an updater, or the applier's new
 * configuration) still owns them.
 *
 * Removal works on whole nodes: removing a map field, a list item or an atomic
 * field removes everything below it. A map or list whose every child is removed
 * stays, empty: a node is only removed when it is in the set itself (pruning puts
 * it there when nobody owns it nor anything below it).
 */

import { setMember } from "../deep-copy.ts";
import type { Schema } from "../schema.ts";
import { extractFields, extractNodes } from "./extract.ts";
import { fieldKey } from "./field-path.ts";
import { FieldSet } from "./field-set.ts";
import {
  childSchema,
  fieldType,
  indexList,
  itemSchema,
  resourceSchema,
  shapeOf,
} from "./type-info.ts";
import { definedKeys } from "./value.ts";

/** `obj` without the fields of `set` (whole nodes). Shares untouched values with `obj`. */
export function removeFields(
  obj: Record<string, unknown>,
  set: FieldSet,
  schema: Schema | undefined,
): Record<string, unknown> {
  if (set.empty) return obj;
  return removeIn(obj, set, resourceSchema(schema)) as Record<string, unknown>;
}

function removeIn(value: unknown, set: FieldSet, schema: Schema | undefined): unknown {
  const shape = shapeOf(value, schema);
  if (shape === "map") {
    const obj = value as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const k of definedKeys(obj)) {
      const key = fieldKey(k);
      if (set.hasMember(key)) continue;
      const below = set.child(key);
      setMember(out, k, below ? removeIn(obj[k], below, fieldType(schema, k).schema) : obj[k]);
    }
    return out;
  }
  if (shape === "list") {
    const items = value as unknown[];
    const index = indexList(items, schema);
    if (Array.isArray(index)) return value;
    const itemsSchema = itemSchema(schema);
    const out: unknown[] = [];
    for (let i = 0; i < items.length; i++) {
      const key = index.keys[i];
      if (set.hasMember(key)) continue;
      const below = set.child(key);
      out.push(below ? removeIn(items[i], below, itemsSchema) : items[i]);
    }
    return out;
  }
  return value;
}

/**
 * `set` with every declared struct field that has fields below it made a member
 * itself (structured-merge-diff's EnsureNamedFieldsAreMembers), so that "owns
 * something below spec.template" also reads as "owns spec.template" when deciding
 * what to remove.
 */
export function withNamedFields(set: FieldSet, schema: Schema | undefined): FieldSet {
  return ensureNamed(set, resourceSchema(schema));
}

function ensureNamed(set: FieldSet, schema: Schema | undefined): FieldSet {
  const out = new FieldSet();
  for (const m of set.memberKeys()) out.addMember(m);
  for (const [key, child] of set.childEntries()) {
    if (child.empty) continue;
    if (key.startsWith("f:") && fieldType(schema, key.slice(2)).declared) out.addMember(key);
    out.setChild(key, ensureNamed(child, childSchema(schema, key)));
  }
  return out;
}

/**
 * Removes from `merged` what `lastApplied` (the applier's previous Apply set) held
 * and nobody in `owned` (the union of every manager's set, the applier's new one
 * included, plus any node to keep) holds. Follows Kubernetes' three steps: remove the
 * previous set, add back what is owned, then add back anything removed that the
 * previous set did not hold.
 */
export function pruneObject(
  merged: Record<string, unknown>,
  lastApplied: FieldSet,
  owned: FieldSet,
  schema: Schema | undefined,
): Record<string, unknown> {
  const last = withNamedFields(lastApplied, schema);
  if (last.empty) return merged;
  const fieldsOf = (o: Record<string, unknown>) =>
    withNamedFields(extractFields(o, schema), schema);
  const mergedSet = fieldsOf(merged);
  const ownedSet = withNamedFields(owned, schema);
  const first = removeFields(merged, last, schema);
  const notOwned = mergedSet.difference(fieldsOf(first).union(ownedSet));
  const second = removeFields(merged, notOwned, schema);
  // A map or list that is owned and survived the second step stays, even when left
  // empty (Kubernetes would drop it here, since it no longer counts as a field).
  const keep = ownedSet.intersection(extractNodes(second, schema));
  const toRemove = mergedSet.difference(fieldsOf(second)).intersection(last).difference(keep);
  return removeFields(merged, toRemove, schema);
}
