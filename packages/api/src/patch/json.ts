/**
 * JSON patch (RFC 6902), the `application/json-patch+json` patch type: a list of
 * add / remove / replace / move / copy / test operations addressed by JSON
 * pointers (RFC 6901). The patch applies whole or not at all.
 *
 * Errors follow Kubernetes: a document that is not a list of objects is 400; more
 * than MAX_JSON_PATCH_OPERATIONS operations is 413; an operation that does not
 * apply (failed test, missing path, bad index, unknown op), and `copy` operations
 * that together copy more than MAX_JSON_PATCH_COPY_BYTES (measured as the JSON of
 * each copied value, as Kubernetes' JSON patch library measures it), are 422 Invalid with
 * Kubernetes' sentence "the server rejected our request due to an error in our
 * request" followed by the reason worded as Kubernetes' JSON patch library words it.
 * As there, negative array indices count from the end.
 *
 * A `copy` shares the copied value instead of copying it, and a container on the path
 * of a later write is copied first (copy on write); the JSON size of a shared value is
 * worked out once. So a patch that copies a value into itself again and again costs
 * next to nothing until the bound refuses it, and the result is made whole (no value
 * shared between two places) only once, at the end.
 */
import { deepClone, deepEqual, isJsonObject, setMember } from "../deep-copy.ts";
import { errors } from "../status.ts";
import { patchMalformed, patchNotApplicable } from "./errors.ts";

/** Most operations one JSON patch may hold (Kubernetes' limit). */
export const MAX_JSON_PATCH_OPERATIONS = 10_000;

/**
 * Most bytes the `copy` operations of one JSON patch may add together (Kubernetes'
 * JSONPatchMaxCopyBytes, 3 MiB): without it, a copy of a value into itself doubles
 * it, and a few dozen such operations in a small patch outgrow any memory.
 */
export const MAX_JSON_PATCH_COPY_BYTES = 3 * 1024 * 1024;

/** Bounds of one application of a JSON patch. */
export interface JsonPatchLimits {
  /** Most bytes all `copy` operations may add (default MAX_JSON_PATCH_COPY_BYTES). */
  maxCopyBytes?: number;
}

/** One RFC 6902 operation. */
export interface JsonPatchOperation {
  op: "add" | "remove" | "replace" | "move" | "copy" | "test";
  path: string;
  from?: string | undefined;
  value?: unknown | undefined;
}

class PointerError extends Error {}

/** Splits a JSON pointer into unescaped tokens ("" is the whole document). */
export function parseJsonPointer(pointer: string): string[] {
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) {
    throw new PointerError(
      `JSON pointer must be empty or start with "/": ${JSON.stringify(pointer)}`,
    );
  }
  return pointer
    .slice(1)
    .split("/")
    .map((t) => {
      if (/~[^01]|~$/.test(t)) {
        throw new PointerError(`invalid escape in JSON pointer: ${JSON.stringify(pointer)}`);
      }
      return t.replace(/~1/g, "/").replace(/~0/g, "~");
    });
}

/** Builds a JSON pointer from tokens, escaping `~` as `~0` and `/` as `~1`. */
export function formatJsonPointer(tokens: readonly (string | number)[]): string {
  return tokens.map((t) => `/${String(t).replace(/~/g, "~0").replace(/\//g, "~1")}`).join("");
}

// The document lives in a box so that the root ("") is addressed like any member.
// `shared` holds the containers that may be reachable from more than one place (a
// copied value, and the members of a container copied on write): they are never
// changed in place, so the JSON size worked out for them holds.
interface Box {
  v: unknown;
  shared: WeakSet<object>;
  sizes: WeakMap<object, number>;
  copied: boolean;
}

interface Location {
  parent: Record<string, unknown> | unknown[];
  key: string;
}

class ApplyError extends Error {}

// The container holding the value `tokens` points at, or undefined if a step on
// the way is missing.
function locate(box: Box, tokens: string[]): Location | undefined {
  let parent: Record<string, unknown> | unknown[] = box as unknown as Record<string, unknown>;
  let key = "v";
  for (const t of tokens) {
    const cur = childOf(parent, key);
    if (cur === undefined) return undefined;
    if (Array.isArray(cur)) {
      parent = cur;
      key = t;
    } else if (isJsonObject(cur)) {
      parent = cur;
      key = t;
    } else {
      return undefined;
    }
  }
  return { parent, key };
}

// As `locate`, for a write: every container on the way that may be reachable from
// elsewhere is replaced by a copy of its own first, so the write changes this place only.
function locateForWrite(box: Box, tokens: string[]): Location | undefined {
  let parent: Record<string, unknown> | unknown[] = box as unknown as Record<string, unknown>;
  let key = "v";
  for (const t of tokens) {
    let cur = childOf(parent, key);
    if (cur === undefined) return undefined;
    if (!Array.isArray(cur) && !isJsonObject(cur)) return undefined;
    if (box.shared.has(cur)) {
      cur = unshare(box, cur);
      if (Array.isArray(parent)) parent[arrayIndex(parent, key, false)!] = cur;
      else setMember(parent, key, cur);
    }
    parent = cur as Record<string, unknown> | unknown[];
    key = t;
  }
  return { parent, key };
}

// A copy of one level of a shared container; its members become shared in turn.
function unshare(box: Box, c: Record<string, unknown> | unknown[]): object {
  const copy: Record<string, unknown> | unknown[] = Array.isArray(c) ? c.slice() : { ...c };
  for (const v of Array.isArray(copy) ? copy : Object.values(copy)) {
    if (typeof v === "object" && v !== null) box.shared.add(v);
  }
  return copy;
}

// The size of `v`'s JSON in bytes (JSON.stringify's), remembered for shared containers.
function jsonSize(box: Box, v: unknown): number {
  if (typeof v !== "object" || v === null) {
    const json = JSON.stringify(v);
    return json === undefined ? 0 : Buffer.byteLength(json);
  }
  const known = box.sizes.get(v);
  if (known !== undefined) return known;
  let size = 2;
  if (Array.isArray(v)) {
    for (const item of v) size += (item === undefined ? 4 : jsonSize(box, item)) + 1;
    if (v.length > 0) size -= 1;
  } else {
    let n = 0;
    for (const [k, item] of Object.entries(v)) {
      if (item === undefined) continue;
      size += Buffer.byteLength(JSON.stringify(k)) + 1 + jsonSize(box, item) + 1;
      n++;
    }
    if (n > 0) size -= 1;
  }
  if (box.shared.has(v)) box.sizes.set(v, size);
  return size;
}

function childOf(parent: Record<string, unknown> | unknown[], key: string): unknown {
  if (Array.isArray(parent)) {
    const i = arrayIndex(parent, key, false);
    return i === undefined || i >= parent.length ? undefined : parent[i];
  }
  return Object.hasOwn(parent, key) ? parent[key] : undefined;
}

// An array index: digits, or a negative number counting from the end. With
// `forAdd`, the index may equal the length (insert at the end).
function arrayIndex(arr: unknown[], key: string, forAdd: boolean): number | undefined {
  if (!/^-?\d+$/.test(key)) return undefined;
  let i = Number(key);
  const size = forAdd ? arr.length + 1 : arr.length;
  if (i < 0) i += size;
  if (i < 0 || i >= size) return undefined;
  return i;
}

function indexError(key: string): string {
  if (!/^-?\d+$/.test(key)) return `value was not a proper array index: '${key}'`;
  return `Unable to access invalid index: ${key}: invalid index referenced`;
}

function has(loc: Location): boolean {
  if (Array.isArray(loc.parent)) return arrayIndex(loc.parent, loc.key, false) !== undefined;
  return Object.hasOwn(loc.parent, loc.key);
}

function get(loc: Location): unknown {
  if (Array.isArray(loc.parent)) return loc.parent[arrayIndex(loc.parent, loc.key, false) ?? -1];
  return loc.parent[loc.key];
}

function addAt(loc: Location, value: unknown, path: string): void {
  if (Array.isArray(loc.parent)) {
    if (loc.key === "-") {
      loc.parent.push(value);
      return;
    }
    const i = arrayIndex(loc.parent, loc.key, true);
    if (i === undefined) {
      throw new ApplyError(`error in add for path: '${path}': ${indexError(loc.key)}`);
    }
    loc.parent.splice(i, 0, value);
    return;
  }
  setMember(loc.parent, loc.key, value);
}

function removeAt(loc: Location, op: string, path: string): unknown {
  if (Array.isArray(loc.parent)) {
    const i = arrayIndex(loc.parent, loc.key, false);
    if (i === undefined) {
      throw new ApplyError(`error in ${op} for path: '${path}': ${indexError(loc.key)}`);
    }
    return loc.parent.splice(i, 1)[0];
  }
  if (!Object.hasOwn(loc.parent, loc.key)) {
    throw new ApplyError(
      `error in ${op} for path: '${path}': Unable to remove nonexistent key: ${loc.key}: missing value`,
    );
  }
  const v = loc.parent[loc.key];
  delete loc.parent[loc.key];
  return v;
}

function readOp(raw: unknown, index: number): JsonPatchOperation {
  if (!isJsonObject(raw)) {
    throw patchMalformed(
      `json: cannot unmarshal ${jsonKind(raw)} into Go value of type jsonpatch.Operation (operation ${index})`,
    );
  }
  return raw as unknown as JsonPatchOperation;
}

function jsonKind(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v === "object" ? "object" : typeof v;
}

function pointerOf(op: JsonPatchOperation, member: "path" | "from"): [string, string[]] {
  const p = op[member];
  if (typeof p !== "string") {
    const what = member === "path" ? "path" : "from";
    throw new ApplyError(`${op.op} operation failed to decode ${what}: missing value`);
  }
  try {
    return [p, parseJsonPointer(p)];
  } catch (e) {
    if (e instanceof PointerError) {
      throw new ApplyError(`${op.op} operation failed to decode ${member}: ${e.message}`);
    }
    throw e;
  }
}

function opValue(op: JsonPatchOperation): unknown {
  if (!Object.hasOwn(op, "value")) {
    throw new ApplyError(`${op.op} operation, missing value field: missing value`);
  }
  return op.value;
}

/** What the copies of one patch have added so far, against their bound. */
interface CopyBudget {
  used: number;
  limit: number;
}

/**
 * `value` to be placed a second time, charged to `budget` by the size of its JSON;
 * ApplyError once the copies together pass the limit. A container is shared, not
 * copied (see `locateForWrite`).
 */
function chargedCopy(box: Box, value: unknown, budget: CopyBudget): unknown {
  budget.used += jsonSize(box, value);
  if (budget.used > budget.limit) {
    throw new ApplyError(
      `Unable to complete the copy, the accumulated size increase of copy is ${budget.used}, exceeding the limit ${budget.limit}`,
    );
  }
  if (typeof value === "object" && value !== null) {
    box.shared.add(value);
    box.copied = true;
  }
  return value;
}

function applyOne(box: Box, op: JsonPatchOperation, budget: CopyBudget): void {
  switch (op.op) {
    case "add": {
      const [path, tokens] = pointerOf(op, "path");
      const value = deepClone(opValue(op));
      const loc = locateForWrite(box, tokens);
      if (!loc) {
        throw new ApplyError(
          `add operation does not apply: doc is missing path: ${JSON.stringify(path)}: missing value`,
        );
      }
      addAt(loc, value, path);
      return;
    }
    case "remove": {
      const [path, tokens] = pointerOf(op, "path");
      if (tokens.length === 0)
        throw new ApplyError("remove operation does not apply: cannot remove the whole document");
      const loc = locateForWrite(box, tokens);
      if (!loc) {
        throw new ApplyError(
          `remove operation does not apply: doc is missing path: ${JSON.stringify(path)}: missing value`,
        );
      }
      removeAt(loc, "remove", path);
      return;
    }
    case "replace": {
      const [path, tokens] = pointerOf(op, "path");
      const value = deepClone(opValue(op));
      const loc = locateForWrite(box, tokens);
      if (!loc) {
        throw new ApplyError(
          `replace operation does not apply: doc is missing path: ${path}: missing value`,
        );
      }
      if (!has(loc)) {
        throw new ApplyError(
          `replace operation does not apply: doc is missing key: ${path}: missing value`,
        );
      }
      if (Array.isArray(loc.parent)) loc.parent[arrayIndex(loc.parent, loc.key, false)!] = value;
      else setMember(loc.parent, loc.key, value);
      return;
    }
    case "move": {
      const [from, fromTokens] = pointerOf(op, "from");
      const [path, tokens] = pointerOf(op, "path");
      if (from === path) return;
      if (path.startsWith(`${from}/`)) {
        throw new ApplyError(
          `move operation does not apply: from ${from} is a prefix of path ${path}`,
        );
      }
      const src = locateForWrite(box, fromTokens);
      if (!src || !has(src) || fromTokens.length === 0) {
        throw new ApplyError(
          `move operation does not apply: doc is missing from path: ${from}: missing value`,
        );
      }
      const value = removeAt(src, "move", from);
      const dst = locateForWrite(box, tokens);
      if (!dst) {
        throw new ApplyError(
          `move operation does not apply: doc is missing destination path: ${path}: missing value`,
        );
      }
      addAt(dst, value, path);
      return;
    }
    case "copy": {
      const [from, fromTokens] = pointerOf(op, "from");
      const [path, tokens] = pointerOf(op, "path");
      const src = locate(box, fromTokens);
      if (!src || !has(src)) {
        throw new ApplyError(
          `copy operation does not apply: doc is missing from path: ${from}: missing value`,
        );
      }
      const value = chargedCopy(box, get(src), budget);
      const dst = locateForWrite(box, tokens);
      if (!dst) {
        throw new ApplyError(
          `copy operation does not apply: doc is missing destination path: ${path}: missing value`,
        );
      }
      addAt(dst, value, path);
      return;
    }
    case "test": {
      const [path, tokens] = pointerOf(op, "path");
      const expected = opValue(op);
      const loc = locate(box, tokens);
      if (!loc || !has(loc)) {
        throw new ApplyError(
          `test operation does not apply: is missing path: ${path}: missing value`,
        );
      }
      if (!deepEqual(get(loc), expected)) {
        throw new ApplyError(`testing value ${path} failed: test failed`);
      }
      return;
    }
    default:
      throw new ApplyError(
        `Unexpected kind: ${String((op as { op?: unknown | undefined }).op ?? "unknown")}`,
      );
  }
}

/**
 * Applies an RFC 6902 patch (`ops`, the parsed request body) to `target` and
 * returns the result. Neither input is changed and the result shares no objects
 * with them. Throws StatusError: 400 if `ops` is not a list of objects, 413 past
 * MAX_JSON_PATCH_OPERATIONS, 422 if an operation does not apply or the copies
 * together pass `limits.maxCopyBytes`.
 */
export function applyJsonPatch(
  target: unknown,
  ops: unknown,
  limits: JsonPatchLimits = {},
): unknown {
  if (!Array.isArray(ops)) {
    throw patchMalformed(
      `json: cannot unmarshal ${jsonKind(ops)} into Go value of type jsonpatch.Patch`,
    );
  }
  if (ops.length > MAX_JSON_PATCH_OPERATIONS) {
    throw errors.tooLarge(
      `The allowed maximum operations in a JSON patch is ${MAX_JSON_PATCH_OPERATIONS}, got ${ops.length}`,
    );
  }
  const list = ops.map(readOp);
  const box: Box = {
    v: deepClone(target),
    shared: new WeakSet(),
    sizes: new WeakMap(),
    copied: false,
  };
  const budget: CopyBudget = { used: 0, limit: limits.maxCopyBytes ?? MAX_JSON_PATCH_COPY_BYTES };
  for (const op of list) {
    try {
      applyOne(box, op, budget);
    } catch (e) {
      if (e instanceof ApplyError) throw patchNotApplicable(e.message);
      throw e;
    }
  }
  // Values placed twice become two values, as a copy makes them.
  return box.copied ? deepClone(box.v) : box.v;
}

/**
 * The JSON patch that turns `original` into `modified`: members added, removed
 * and replaced by path, arrays of the same length compared item by item and
 * others replaced whole. Applying it to `original` gives a value equal to
 * `modified` (what a mutating admission webhook answers).
 */
export function createJsonPatch(original: unknown, modified: unknown): JsonPatchOperation[] {
  const ops: JsonPatchOperation[] = [];
  diffInto(ops, [], original, modified);
  return ops;
}

function diffInto(
  ops: JsonPatchOperation[],
  at: (string | number)[],
  a: unknown,
  b: unknown,
): void {
  if (deepEqual(a, b)) return;
  const path = formatJsonPointer(at);
  if (isJsonObject(a) && isJsonObject(b)) {
    for (const k of Object.keys(a)) {
      if (!Object.hasOwn(b, k)) ops.push({ op: "remove", path: formatJsonPointer([...at, k]) });
    }
    for (const [k, v] of Object.entries(b)) {
      if (!Object.hasOwn(a, k)) {
        ops.push({ op: "add", path: formatJsonPointer([...at, k]), value: deepClone(v) });
      } else diffInto(ops, [...at, k], a[k], v);
    }
    return;
  }
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
    for (let i = 0; i < a.length; i++) diffInto(ops, [...at, i], a[i], b[i]);
    return;
  }
  ops.push({ op: "replace", path, value: deepClone(b) });
}
