/**
 * Merging an applied configuration into a live object, per the schema
 * (structured-merge-diff's Merge, the applied side winning):
 *
 * - scalars, atomic lists and atomic maps: the applied value replaces the live one;
 * - granular maps: merged key by key; live keys keep their order, new keys follow;
 * - set lists: union of the values; keyed lists: items merged by their keys.
 *
 * List order is Kubernetes': live items the configuration does not mention stay
 * where they are; items it does mention appear in the configuration's order, new
 * ones next to the mentioned items they follow in the configuration (so applying to
 * a list of live items a, b with a configuration listing a, c gives a, b, c). A live
 * list with duplicate items keeps them unless the configuration names their key,
 * which replaces them with its single item.
 */

import { isJsonObject, setMember } from "../deep-copy.ts";
import type { Schema } from "../schema.ts";
import { isEmptyContainer, pairShape } from "./compare.ts";
import type { PathKey } from "./field-path.ts";
import { fieldType, indexList, itemSchema, resourceSchema } from "./type-info.ts";
import { definedKeys } from "./value.ts";

/** The merge of `applied` into `live` (whole objects). Shares values with its inputs. */
export function mergeObjects(
  live: Record<string, unknown> | undefined,
  applied: Record<string, unknown>,
  schema: Schema | undefined,
): Record<string, unknown> {
  return mergeMap(live ?? {}, applied, resourceSchema(schema));
}

function mergeValue(l: unknown, r: unknown, schema: Schema | undefined): unknown {
  if (r === undefined) return l;
  if (l === undefined) return r;
  const shape = pairShape(l, r, schema);
  if (shape === "mismatch" || shape === "scalar" || shape === "atomic") return r;
  if (isEmptyContainer(l) && isEmptyContainer(r)) return r;
  if (shape === "map") {
    if (!isJsonObject(r)) return l;
    if (!isJsonObject(l)) return r;
    return mergeMap(l, r, schema);
  }
  if (!Array.isArray(r)) return l;
  if (!Array.isArray(l)) return r;
  return mergeList(l, r, schema);
}

function mergeMap(
  l: Record<string, unknown>,
  r: Record<string, unknown>,
  schema: Schema | undefined,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of definedKeys(l)) {
    const rv = Object.hasOwn(r, k) ? r[k] : undefined;
    setMember(out, k, rv === undefined ? l[k] : mergeValue(l[k], rv, fieldType(schema, k).schema));
  }
  for (const k of definedKeys(r)) {
    if (!Object.hasOwn(out, k)) setMember(out, k, r[k]);
  }
  return out;
}

function mergeList(l: unknown[], r: unknown[], schema: Schema | undefined): unknown[] {
  const li = indexList(l, schema);
  const ri = indexList(r, schema);
  // Live items that cannot be identified: the list is replaced as a whole.
  if (Array.isArray(li) || Array.isArray(ri)) return r;
  const items = itemSchema(schema);
  const lFirst = new Map<PathKey, number>();
  li.keys.forEach((k, i) => {
    if (!lFirst.has(k)) lFirst.set(k, i);
  });
  const out: unknown[] = [];
  for (const step of zipListKeys(li.keys, ri.keys)) {
    if (step.r === undefined) {
      out.push(l[step.l as number]);
      continue;
    }
    const key = ri.keys[step.r];
    const dup = (li.count.get(key) ?? 0) > 1;
    const lIndex = lFirst.get(key);
    const lv = lIndex === undefined || dup ? undefined : l[lIndex];
    out.push(mergeValue(lv, r[step.r], items));
  }
  return out;
}

/** One item of a merged list: from the live list only (`l`), or from the configuration (`r`). */
export interface ZipStep {
  l?: number | undefined;
  r?: number | undefined;
}

/**
 * The order of a merged list, from the keys of the live items and of the applied
 * items (no duplicates among the latter): the walk Kubernetes does, advancing
 * through both lists and holding back live items the configuration mentions until
 * the configuration reaches them.
 */
export function zipListKeys(lKeys: PathKey[], rKeys: PathKey[]): ZipStep[] {
  const rIndex = new Map<PathKey, number>();
  rKeys.forEach((k, i) => {
    if (!rIndex.has(k)) rIndex.set(k, i);
  });
  const inLive = new Set(lKeys);
  const shared = rKeys.filter((k) => inLive.has(k));
  let sharedAt = 0;
  let nextShared: PathKey | undefined = shared[sharedAt++];
  const merged = new Set<PathKey>();
  const out: ZipStep[] = [];
  let li = 0;
  let ri = 0;
  while (li < lKeys.length || ri < rKeys.length) {
    if (li < lKeys.length && ri < rKeys.length) {
      const k = lKeys[li];
      if (k === rKeys[ri]) {
        merged.add(k);
        out.push({ r: ri });
        li++;
        ri++;
        nextShared = shared[sharedAt++];
        continue;
      }
      if (rIndex.has(k) && nextShared !== undefined && nextShared !== k) {
        li++;
        continue;
      }
    }
    if (li < lKeys.length) {
      const k = lKeys[li];
      if (!rIndex.has(k)) {
        out.push({ l: li });
        li++;
        continue;
      }
      if (merged.has(k)) li++;
    }
    if (ri < rKeys.length) {
      const k = rKeys[ri];
      merged.add(k);
      out.push({ r: ri });
      ri++;
      if (nextShared === k) nextShared = shared[sharedAt++];
    }
  }
  return out;
}
