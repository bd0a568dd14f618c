/**
 * Strategic merge patch, the `application/strategic-merge-patch+json` patch type of
 * built-in types: a JSON merge patch whose lists can merge item by item. The type's
 * Schema says how: a list whose schema has `x-kubernetes-patch-strategy: merge`
 * merges — items of objects by `x-kubernetes-patch-merge-key`, scalars as a set —
 * and every other list is replaced whole. A map whose schema says `replace` is
 * replaced whole; other maps merge member by member, `null` deleting a member.
 *
 * Directives in the patch:
 * - `$patch: replace` in a map replaces the map with the rest of the patch map; as a
 *   list item it replaces the whole list with the other items.
 * - `$patch: delete` in a map empties it; as a list item `{name: x, $patch: delete}`
 *   removes the items with that merge key.
 * - `$patch: merge` in a map asks for the default (merge).
 * - `$deleteFromPrimitiveList/<list>: [values]` removes those values from a list of scalars.
 * - `$setElementOrder/<list>: [...]` gives the order of the patched list (scalars, or
 *   `{mergeKey: value}` items); items only the server has keep their place relative
 *   to their neighbours.
 * - `$retainKeys: [keys]` clears every member of the map not listed.
 *
 * Without `$setElementOrder`, items the patch mentions take the patch's order and
 * items only the server has keep theirs, the two interleaved by the server's order
 * (so a new item goes first): Kubernetes' rule. Errors follow Kubernetes: 400 for
 * a malformed patch, 422 for lists of lists.
 */
import { deepClone, isJsonObject, setMember } from "../deep-copy.ts";
import { childSchema, type Schema } from "../schema.ts";
import type { StatusError } from "../status.ts";
import { patchMalformed, patchNotApplicable } from "./errors.ts";

type Obj = Record<string, unknown>;

const DIRECTIVE = "$patch";
const RETAIN_KEYS = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER = "$setElementOrder";

/** Kubernetes' messages for malformed strategic merge patches. */
const MSG = {
  badDoc: "invalid JSON document",
  listOfLists: "lists of lists are not supported",
  primitiveList: "invalid patch format of primitive list",
  retainKeys: "invalid patch format of retainKeys",
  setElementOrder: "invalid patch format of setElementOrder list",
};

class SmpError extends Error {
  constructor(
    message: string,
    readonly code: 400 | 422 = 400,
  ) {
    super(message);
  }
}

/**
 * Applies a strategic merge patch to `target` using `schema`, the schema of the
 * whole object. Neither input is changed; the result shares no objects with them.
 * Throws StatusError 400 if target or patch is not an object or the patch is
 * malformed (missing merge key, bad directive), 422 for lists of lists.
 */
export function applyStrategicMergePatch(target: unknown, patch: unknown, schema: Schema): unknown {
  if (!isJsonObject(target) || !isJsonObject(patch)) throw patchMalformed(MSG.badDoc);
  try {
    return mergeMap(deepClone(target), deepClone(patch), schema);
  } catch (e) {
    if (e instanceof SmpError) throw toStatus(e);
    throw e;
  }
}

function toStatus(e: SmpError): StatusError {
  return e.code === 422 ? patchNotApplicable(e.message) : patchMalformed(e.message);
}

// ---------------------------------------------------------------------------
// Schema lookups.

interface ListMeta {
  merge: boolean;
  mergeKey: string;
  items: Schema | undefined;
}

function strategies(schema: Schema | undefined): string[] {
  const s = schema?.["x-kubernetes-patch-strategy"];
  return s
    ? s
        .split(",")
        .map((x) => x.trim())
        .filter(Boolean)
    : [];
}

function listMeta(schema: Schema | undefined): ListMeta {
  return {
    merge: strategies(schema).includes("merge"),
    mergeKey: schema?.["x-kubernetes-patch-merge-key"] ?? "",
    items: schema?.items,
  };
}

function replacesMap(schema: Schema | undefined): boolean {
  return strategies(schema).includes("replace");
}

// ---------------------------------------------------------------------------
// Helpers.

type Kind = "object" | "array" | "string" | "number" | "boolean" | "null";

function kindOf(v: unknown): Kind {
  if (v === null || v === undefined) return "null";
  if (Array.isArray(v)) return "array";
  const t = typeof v;
  if (t === "object") return "object";
  if (t === "string" || t === "number" || t === "boolean") return t;
  return "null";
}

/** Renders a value as Go's fmt prints decoded JSON, as Kubernetes' messages show it. */
function goString(v: unknown): string {
  if (v === null || v === undefined) return "<nil>";
  if (Array.isArray(v)) return `[${v.map(goString).join(" ")}]`;
  if (isJsonObject(v)) {
    const keys = Object.keys(v).sort();
    return `map[${keys.map((k) => `${k}:${goString(v[k])}`).join(" ")}]`;
  }
  return String(v);
}

function noMergeKey(m: unknown, key: string): SmpError {
  return new SmpError(`map: ${goString(m)} does not contain declared merge key: ${key}`);
}

function hasDirective(v: unknown): boolean {
  return isJsonObject(v) && Object.hasOwn(v, DIRECTIVE);
}

// Equality of merge key values (scalars in practice).
function sameKey(a: unknown, b: unknown): boolean {
  return a === b;
}

/** The element kind shared by all items; throws for lists of lists or mixed kinds. */
function elementKind(...lists: unknown[][]): Kind | undefined {
  let kind: Kind | undefined;
  for (const list of lists) {
    for (const v of list) {
      const k = kindOf(v);
      if (kind === undefined) {
        if (k === "array") throw new SmpError(MSG.listOfLists, 422);
        kind = k;
      } else if (k !== kind) {
        throw new SmpError(
          `list element types are not identical: ${lists.map(goString).join(" ")}`,
        );
      }
    }
  }
  return kind;
}

function extractKey(key: string, prefix: string, message: string): string {
  const slash = key.indexOf("/");
  if (slash < 0 || key.slice(0, slash) !== prefix) throw new SmpError(message);
  return key.slice(slash + 1);
}

const DROP = Symbol("drop");

/**
 * A patch value for a place the original does not have (or has with another
 * type): the patch merged into nothing, so nulls vanish and directives are
 * resolved. DROP for a map that deletes itself.
 */
function newValue(pv: unknown, schema: Schema | undefined, name: string): unknown {
  if (isJsonObject(pv)) {
    if (pv[DIRECTIVE] === "delete") return DROP;
    return mergeMap({}, pv, schema);
  }
  if (Array.isArray(pv)) return mergeList([], pv, schema, name, false);
  return pv;
}

// ---------------------------------------------------------------------------
// Maps.

function mergeMap(original: Obj, patch: Obj, schema: Schema | undefined): Obj {
  if (Object.hasOwn(patch, DIRECTIVE)) {
    const d = patch[DIRECTIVE];
    delete patch[DIRECTIVE];
    if (d === "replace") return mergeMap({}, patch, schema);
    if (d === "delete") return {};
    if (d !== "merge") {
      throw new SmpError(`unknown patch type: ${goString(d)} in map: ${goString(patch)}`);
    }
  }
  applyRetainKeys(original, patch);
  applySetElementOrder(original, patch, schema);

  const deletions: [string, unknown][] = [];
  for (const k of Object.keys(patch)) {
    const pv = patch[k];
    if (k.startsWith(DELETE_FROM_PRIMITIVE_LIST)) {
      deletions.push([extractKey(k, DELETE_FROM_PRIMITIVE_LIST, MSG.primitiveList), pv]);
      continue;
    }
    if (pv === null) {
      delete original[k];
      continue;
    }
    const sub = childSchema(schema, k);
    const has = Object.hasOwn(original, k);
    const ov = has ? original[k] : undefined;
    let next: unknown;
    if (!has || kindOf(ov) !== kindOf(pv)) {
      next = newValue(pv, sub, k);
    } else if (isJsonObject(ov)) {
      next = replacesMap(sub) ? newValue(pv, sub, k) : mergeMap(ov, pv as Obj, sub);
    } else if (Array.isArray(ov)) {
      next = mergeList(ov, pv as unknown[], sub, k, false);
    } else {
      next = pv;
    }
    if (next === DROP) delete original[k];
    else setMember(original, k, next);
  }

  for (const [k, pv] of deletions) {
    if (!Array.isArray(pv)) throw new SmpError(MSG.primitiveList);
    const ov = original[k];
    if (!Array.isArray(ov)) continue; // nothing to delete from
    setMember(original, k, mergeList(ov, pv, childSchema(schema, k), k, true));
  }
  return original;
}

function applyRetainKeys(original: Obj, patch: Obj): void {
  if (!Object.hasOwn(patch, RETAIN_KEYS)) return;
  const keep = patch[RETAIN_KEYS];
  delete patch[RETAIN_KEYS];
  if (!Array.isArray(keep)) throw new SmpError(MSG.retainKeys);
  const set = new Set(keep);
  for (const [k, v] of Object.entries(patch)) {
    if (v === null || k.startsWith(DELETE_FROM_PRIMITIVE_LIST) || k.startsWith(SET_ELEMENT_ORDER)) {
      continue;
    }
    if (!set.has(k)) throw new SmpError(MSG.retainKeys);
  }
  for (const k of Object.keys(original)) if (!set.has(k)) delete original[k];
}

// ---------------------------------------------------------------------------
// Lists.

function mergeList(
  original: unknown[],
  patch: unknown[],
  schema: Schema | undefined,
  name: string,
  isDeleteList: boolean,
): unknown[] {
  const meta = listMeta(schema);
  if (!meta.merge && !isDeleteList) {
    // Replaced whole: each item is new.
    const out: unknown[] = [];
    for (const item of patch) {
      const v = newValue(item, meta.items, name);
      if (v !== DROP) out.push(v);
    }
    return out;
  }
  if (original.length === 0 && patch.length === 0) return original;
  const kind = elementKind(original, patch);

  if (kind !== "object") {
    if (isDeleteList) {
      const gone = new Set(patch);
      return original.filter((v) => !gone.has(v));
    }
    const merged = dedupe([...original, ...patch]);
    const inPatch = new Set(patch);
    const patchItems = merged.filter((v) => inPatch.has(v));
    const serverOnly = merged.filter((v) => !inPatch.has(v));
    return normalizeOrder(patchItems, serverOnly, patch, original, "");
  }

  if (isDeleteList) throw new SmpError(MSG.primitiveList);
  const key = meta.mergeKey;
  if (!key) throw new SmpError(`cannot merge lists without merge key for ${name}`);
  const [orig, items] = applyListDirectives(original, patch, key);
  const merged = mergeByKey(orig, items, key, meta.items, name);
  const [patchItems, serverOnly] = partitionByKey(merged, items, key);
  return normalizeOrder(patchItems, serverOnly, items, orig, key);
}

// Scalars as a set: first occurrence wins.
function dedupe(list: unknown[]): unknown[] {
  const seen = new Set<unknown>();
  const out: unknown[] = [];
  for (const v of list) {
    if (seen.has(v)) continue;
    seen.add(v);
    out.push(v);
  }
  return out;
}

/**
 * Resolves `$patch` items of a keyed list: deletions remove matching items from the
 * original, `replace` makes the remaining patch items the whole list. Returns the
 * original to merge into and the patch items without directives.
 */
function applyListDirectives(
  original: unknown[],
  patch: unknown[],
  key: string,
): [unknown[], unknown[]] {
  const items: unknown[] = [];
  let replace = false;
  let orig = original;
  for (const v of patch) {
    const m = v as Obj;
    if (!Object.hasOwn(m, DIRECTIVE)) {
      items.push(v);
      continue;
    }
    const d = m[DIRECTIVE];
    if (d === "delete") {
      if (!Object.hasOwn(m, key)) throw noMergeKey(m, key);
      checkAllMaps(orig);
      orig = orig.filter((o) => !sameKey((o as Obj)[key], m[key]));
    } else if (d === "replace") {
      replace = true;
    } else if (d === "merge") {
      throw new SmpError("merging lists cannot yet be specified in the patch");
    } else {
      throw new SmpError(`unknown patch type: ${goString(d)} in map: ${goString(m)}`);
    }
  }
  if (replace) return [items, []];
  return [orig, items];
}

function checkAllMaps(list: unknown[]): void {
  list.forEach((v, i) => {
    if (!isJsonObject(v)) throw new SmpError(`value for key ${i} is not a map`);
  });
}

function findByKey(list: unknown[], key: string, value: unknown): number {
  checkAllMaps(list);
  return list.findIndex((o) => Object.hasOwn(o as Obj, key) && sameKey((o as Obj)[key], value));
}

/** Merges patch items into the original by merge key; unknown keys are appended. */
function mergeByKey(
  original: unknown[],
  patch: unknown[],
  key: string,
  itemSchema: Schema | undefined,
  name: string,
): unknown[] {
  const out = [...original];
  for (const v of patch) {
    const m = v as Obj;
    if (!Object.hasOwn(m, key)) throw noMergeKey(m, key);
    const i = findByKey(out, key, m[key]);
    if (i >= 0) {
      out[i] = mergeMap(out[i] as Obj, m, itemSchema);
    } else {
      const nv = newValue(m, itemSchema, name);
      if (nv !== DROP) out.push(nv);
    }
  }
  return out;
}

function partitionByKey(merged: unknown[], by: unknown[], key: string): [unknown[], unknown[]] {
  const inBy: unknown[] = [];
  const only: unknown[] = [];
  for (const [i, v] of merged.entries()) {
    if (!isJsonObject(v)) throw new SmpError(`value for key ${i} is not a map`);
    if (!Object.hasOwn(v, key)) throw noMergeKey(v, key);
    if (findByKey(by, key, v[key]) >= 0) inBy.push(v);
    else only.push(v);
  }
  return [inBy, only];
}

// Position of `v` in `list`, by merge key for maps, by value for scalars.
function indexIn(list: unknown[], v: unknown, key: string): number {
  if (key) {
    const kv = isJsonObject(v) ? v[key] : undefined;
    return list.findIndex((o) => isJsonObject(o) && sameKey(o[key], kv));
  }
  return list.indexOf(v);
}

// Stable sort of `items` by their position in `order`; unknown items go last.
function sortBy(items: unknown[], order: unknown[], key: string): unknown[] {
  const pos = items.map((v, i) => ({ v, i, at: indexIn(order, v, key) }));
  pos.sort((a, b) => {
    const ax = a.at < 0 ? Number.MAX_SAFE_INTEGER : a.at;
    const bx = b.at < 0 ? Number.MAX_SAFE_INTEGER : b.at;
    return ax - bx || a.i - b.i;
  });
  return pos.map((p) => p.v);
}

/**
 * Orders a merged list: patch items in `patchOrder`, server-only items in
 * `serverOrder`, then the two interleaved. A server-only item goes before a patch
 * item only when both are in `serverOrder` and it comes first there.
 */
function normalizeOrder(
  patchItems: unknown[],
  serverOnly: unknown[],
  patchOrder: unknown[],
  serverOrder: unknown[],
  key: string,
): unknown[] {
  if (key) {
    for (const list of [patchItems, serverOnly, patchOrder]) {
      for (const v of list) {
        if (!isJsonObject(v) || !Object.hasOwn(v, key)) throw noMergeKey(v, key);
      }
    }
  }
  const right = sortBy(patchItems, patchOrder, key);
  const left = sortBy(serverOnly, serverOrder, key);
  const out: unknown[] = [];
  let i = 0;
  let j = 0;
  while (i < left.length || j < right.length) {
    if (i >= left.length) out.push(right[j++]);
    else if (j >= right.length) out.push(left[i++]);
    else {
      const li = indexIn(serverOrder, left[i], key);
      const ri = indexIn(serverOrder, right[j], key);
      if (li >= 0 && ri >= 0 && li < ri) out.push(left[i++]);
      else out.push(right[j++]);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// $setElementOrder

function applySetElementOrder(original: Obj, patch: Obj, schema: Schema | undefined): void {
  for (const directiveKey of Object.keys(patch)) {
    if (!directiveKey.startsWith(SET_ELEMENT_ORDER)) continue;
    const order = patch[directiveKey];
    delete patch[directiveKey];
    if (!Array.isArray(order)) throw new SmpError(MSG.setElementOrder);
    const k = extractKey(directiveKey, SET_ELEMENT_ORDER, MSG.setElementOrder);
    const sub = childSchema(schema, k);
    const meta = listMeta(sub);
    const hasOrig = Object.hasOwn(original, k);
    const hasPatch = Object.hasOwn(patch, k);
    const origList = hasOrig ? original[k] : undefined;
    const patchList = hasPatch ? patch[k] : undefined;
    if (hasOrig && !Array.isArray(origList)) {
      throw new SmpError(`expected a []interface {}, but received a ${goKind(origList)}`);
    }
    if (hasPatch && !Array.isArray(patchList)) {
      throw new SmpError(`expected a []interface {}, but received a ${goKind(patchList)}`);
    }
    const o = (origList as unknown[] | undefined) ?? [];
    const p = (patchList as unknown[] | undefined) ?? [];
    checkOrderMatchesPatch(p, order, meta.mergeKey);

    let merged: unknown[];
    if (hasOrig && hasPatch) merged = mergeList(o, p, sub, k, false);
    else if (hasPatch) merged = newValue(p, sub, k) as unknown[];
    else if (hasOrig) merged = o;
    else continue;

    const key = meta.mergeKey;
    let patchItems: unknown[];
    let serverOnly: unknown[];
    if (key) {
      [patchItems, serverOnly] = partitionByKey(merged, order, key);
    } else {
      const inOrder = new Set(order);
      patchItems = merged.filter((v) => inOrder.has(v));
      serverOnly = merged.filter((v) => !inOrder.has(v));
    }
    const ordered =
      elementKind(o, p) === undefined
        ? merged
        : normalizeOrder(patchItems, serverOnly, order, o, key);
    setMember(original, k, ordered);
    delete patch[k];
  }
}

function goKind(v: unknown): string {
  const k = kindOf(v);
  return k === "object"
    ? "map[string]interface {}"
    : k === "number"
      ? "float64"
      : k === "boolean"
        ? "bool"
        : k;
}

/**
 * The items a patch list sets (deletions aside) must appear in `$setElementOrder`
 * in the same relative order.
 */
function checkOrderMatchesPatch(patchList: unknown[], order: unknown[], key: string): void {
  if (order.length === 0 || patchList.length === 0) return;
  const items = key
    ? patchList.filter((v) => !(isJsonObject(v) && v[DIRECTIVE] === "delete"))
    : patchList;
  let pi = 0;
  let oi = 0;
  while (pi < items.length && oi < order.length) {
    if (hasDirective(items[pi])) {
      pi++;
      continue;
    }
    if (key) {
      const a = items[pi];
      const b = order[oi];
      if (!isJsonObject(a) || !Object.hasOwn(a, key)) throw noMergeKey(a, key);
      if (!isJsonObject(b) || !Object.hasOwn(b, key)) throw noMergeKey(b, key);
      if (sameKey(a[key], b[key])) pi++;
    } else if (items[pi] === order[oi]) {
      pi++;
    }
    oi++;
  }
  if (pi < items.length && oi >= order.length) {
    throw new SmpError(
      `The order in patch list:\n${goString(patchList)}\n doesn't match ${SET_ELEMENT_ORDER} list:\n${goString(order)}\n`,
    );
  }
}
