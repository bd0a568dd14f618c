/**
 * Objects in storage and on the wire. Storage holds each object's JSON in its
 * type's storage version without `metadata.resourceVersion` (the store's
 * modRevision is the resourceVersion); reading sets it back. Versions of one type
 * share a schema shape here (conversion "None"): converting rewrites apiVersion.
 */
import { randomBytes } from "node:crypto";
import { apiVersionOf, errors, type KubeObject } from "@setpoint/api";
import type { ResourceDefinition } from "../../registry/types.ts";
import { storageVersion } from "../../registry/types.ts";
import type { KeyValue } from "../../storage/store.ts";

/**
 * An object read from storage, with its resourceVersion set to the item's
 * modRevision, completed by its type's read hook (a custom resource's schema
 * defaults) when `def` is given.
 */
export function decodeStored(
  kv: Pick<KeyValue, "value" | "modRevision">,
  def?: Pick<ResourceDefinition, "strategy">,
): KubeObject {
  const obj = withResourceVersion(parseStored(kv.value), kv.modRevision);
  def?.strategy.onRead?.(obj);
  return obj;
}

/** Parses a stored value; a value that is not an object is an internal error. */
export function parseStored(value: string): KubeObject {
  const obj = JSON.parse(value) as KubeObject;
  if (typeof obj !== "object" || obj === null || Array.isArray(obj)) {
    throw errors.internal("stored value is not an object");
  }
  if (typeof obj.metadata !== "object" || obj.metadata === null) obj.metadata = {};
  return obj;
}

/** Sets metadata.resourceVersion (in place) and returns the object. */
export function withResourceVersion(obj: KubeObject, revision: number): KubeObject {
  obj.metadata.resourceVersion = String(revision);
  return obj;
}

/** The JSON stored for an object: apiVersion, kind, metadata first; no resourceVersion. */
export function encodeForStorage(obj: KubeObject): string {
  return encodeObject(obj).stored;
}

/** An object encoded for storage, and the same JSON with a resourceVersion. */
export interface EncodedObject {
  /** What storage holds: apiVersion, kind, metadata first; no resourceVersion. */
  stored: string;
  /**
   * The stored JSON with metadata.resourceVersion set to `revision` (no new
   * serialization). The string is flat (one piece of memory, not a chain of the
   * parts it was made of), and asking again for the same revision returns the same
   * string, so the answer to a write and the watch cache's event for it (which copies
   * its bytes into the cache's slabs, src/apiserver/watchcache/watch-slabs.ts) encode it once.
   */
  withRevision(revision: number): string;
}

/**
 * Encodes an object for storage. Only the stored JSON and where its metadata ends
 * are kept for adding a resourceVersion later (nothing else of the encoding lives
 * on while the write waits for storage).
 */
export function encodeObject(obj: KubeObject): EncodedObject {
  const { apiVersion, kind, metadata: _m, ...rest } = obj;
  let head = "{";
  if (apiVersion !== undefined) head += `"apiVersion":${JSON.stringify(apiVersion)},`;
  if (kind !== undefined) head += `"kind":${JSON.stringify(kind)},`;
  head += '"metadata":';
  const meta = metadataJson(obj.metadata);
  const restJson = JSON.stringify(rest);
  // Array.join makes a flat string; `+` would make a tree of the parts.
  const stored = [head, meta, restJson === "{}" ? "}" : `,${restJson.slice(1)}`].join("");
  /** Where the metadata's closing brace is in `stored`. */
  const metaEnd = head.length + meta.length - 1;
  const metaEmpty = meta === "{}";
  let lastRevision = -1;
  let lastJson = "";
  return {
    stored,
    withRevision(revision: number): string {
      if (revision === lastRevision) return lastJson;
      const rv = `"resourceVersion":${JSON.stringify(String(revision))}`;
      lastJson = [stored.slice(0, metaEnd), metaEmpty ? rv : `,${rv}`, stored.slice(metaEnd)].join(
        "",
      );
      lastRevision = revision;
      return lastJson;
    },
  };
}

/**
 * The JSON of deeply frozen values (the FieldsV1 that new objects of one shape
 * share, src/api/managedfields/created.ts), made once per value: a frozen value
 * whose members are all deeply frozen (data, no getters) can never change.
 * False: not deeply frozen when looked at (stringified each time from then on).
 */
const frozenJson = new WeakMap<object, string | false>();

/**
 * Most values of a frozen object looked at to tell whether it is deeply frozen,
 * once per object; the JSON of larger ones is not remembered.
 */
const MAX_FROZEN_CHECK_NODES = 10_000;

/** Whether `v` and everything below it are frozen plain objects, arrays or primitives. */
function deeplyFrozen(v: unknown, budget: { left: number }): boolean {
  if (typeof v !== "object" || v === null) return typeof v !== "function";
  if (--budget.left < 0 || !Object.isFrozen(v)) return false;
  const proto = Object.getPrototypeOf(v);
  if (Array.isArray(v)) {
    if (proto !== Array.prototype) return false;
    for (let i = 0; i < v.length; i++) {
      if (Object.getOwnPropertyDescriptor(v, i)?.get !== undefined) return false;
      if (!deeplyFrozen(v[i], budget)) return false;
    }
    return true;
  }
  if (proto !== Object.prototype && proto !== null) return false;
  const o = v as Record<string, unknown>;
  for (const k in o) {
    if (!Object.hasOwn(o, k)) continue;
    // A getter may answer differently each time.
    if (Object.getOwnPropertyDescriptor(o, k)?.get !== undefined) return false;
    if (!deeplyFrozen(o[k], budget)) return false;
  }
  return true;
}

/**
 * The JSON of `v` when it is a deeply frozen object, remembered (made on first
 * sight); undefined for anything else.
 */
function frozenJsonOf(v: unknown): string | undefined {
  if (typeof v !== "object" || v === null || !Object.isFrozen(v)) return undefined;
  const known = frozenJson.get(v);
  if (known !== undefined) return known === false ? undefined : known;
  if (!deeplyFrozen(v, { left: MAX_FROZEN_CHECK_NODES })) {
    frozenJson.set(v, false);
    return undefined;
  }
  const json = JSON.stringify(v);
  frozenJson.set(v, json);
  return json;
}

/**
 * Shortest remembered FieldsV1 JSON worth splicing into the metadata's: splicing
 * costs about as much as stringifying some 300 characters of FieldsV1 (its keys
 * are mostly escaped quotes), so shorter ones (a ConfigMap's) are stringified
 * with the rest of the metadata, as before.
 */
export const MIN_SPLICED_FIELDS_JSON = 512;

/** A remembered FieldsV1 JSON of `entry` long enough to splice, if it has one. */
function splicedFieldsJson(entry: unknown): string | undefined {
  if (typeof entry !== "object" || entry === null) return undefined;
  const json = frozenJsonOf((entry as { fieldsV1?: unknown }).fieldsV1);
  return json !== undefined && json.length >= MIN_SPLICED_FIELDS_JSON ? json : undefined;
}

/**
 * Stands for a member's value while the rest of its object is stringified (a
 * string no one sends: random per process); the member's JSON is spliced in its
 * place. Found more than once, the object is stringified whole instead.
 */
const SPLICE_MARK = JSON.stringify(`setpoint-json-splice-${randomBytes(12).toString("hex")}`);
const SPLICE_VALUE = JSON.parse(SPLICE_MARK) as string;

/** A plain object (or array): no toJSON of its own, JSON.stringify writes its members. */
function isPlain(v: object): boolean {
  const proto = Object.getPrototypeOf(v);
  return (
    (proto === Object.prototype || proto === null || proto === Array.prototype) &&
    typeof (v as { toJSON?: unknown }).toJSON !== "function"
  );
}

/**
 * JSON.stringify(`o`) with member `key` (present) written as `json` and member
 * `omit` left out, byte for byte; undefined when `o` or the member is not plain
 * or the mark occurs elsewhere, for the caller to stringify it whole.
 */
function spliceMember(
  o: Record<string, unknown>,
  key: string,
  json: string,
  omit?: string,
): string | undefined {
  const copy: Record<string, unknown> = { ...o, [key]: SPLICE_VALUE };
  if (omit !== undefined && copy[omit] !== undefined) copy[omit] = undefined;
  const text = JSON.stringify(copy);
  const at = text.indexOf(SPLICE_MARK);
  if (at < 0 || text.indexOf(SPLICE_MARK, at + SPLICE_MARK.length) >= 0) return undefined;
  return [text.slice(0, at), json, text.slice(at + SPLICE_MARK.length)].join("");
}

/**
 * What JSON.stringify writes for `entry` as an item of a managed fields list, its
 * FieldsV1 spliced in when remembered and long enough; undefined for an object
 * with a toJSON of its own (JSON.stringify calls it with the item's index: the
 * caller stringifies the whole list instead).
 */
function entryJson(entry: unknown): string | undefined {
  if (typeof entry !== "object" || entry === null) {
    // As in JSON.stringify, what has no JSON is null in a list.
    return JSON.stringify(entry) ?? "null";
  }
  if (!isPlain(entry)) return undefined;
  const json = splicedFieldsJson(entry);
  if (json !== undefined && !Array.isArray(entry)) {
    const out = spliceMember(entry as Record<string, unknown>, "fieldsV1", json);
    if (out !== undefined) return out;
  }
  return JSON.stringify(entry);
}

/**
 * JSON.stringify of `metadata` without its resourceVersion, byte for byte, with
 * the long FieldsV1 of its managed fields written once per shared frozen object
 * (most of a new object's metadata JSON otherwise).
 */
function metadataJson(metadata: KubeObject["metadata"]): string {
  const list: unknown = metadata.managedFields;
  if (
    Array.isArray(list) &&
    list.some((e) => splicedFieldsJson(e) !== undefined) &&
    isPlain(metadata) &&
    isPlain(list)
  ) {
    const parts: string[] = [];
    for (let i = 0; i < list.length; i++) {
      const json = entryJson(list[i]);
      if (json === undefined) break;
      parts.push(`${i === 0 ? "[" : ","}${json}`);
    }
    if (parts.length === list.length) {
      const json = parts.length === 0 ? "[]" : `${parts.join("")}]`;
      const meta = metadata as Record<string, unknown>;
      const out = spliceMember(meta, "managedFields", json, "resourceVersion");
      if (out !== undefined) return out;
    }
  }
  if (metadata.resourceVersion === undefined) return JSON.stringify(metadata);
  const { resourceVersion: _rv, ...rest } = metadata;
  return JSON.stringify(rest);
}

/** Index just past the JSON string starting at `i` (a quote), or -1 if it does not end. */
function skipString(json: string, i: number): number {
  for (let j = i + 1; j < json.length; j++) {
    const c = json.charCodeAt(j);
    if (c === 0x5c)
      j++; // backslash: the next character is escaped
    else if (c === 0x22) return j + 1;
  }
  return -1;
}

/**
 * Where the metadata object is in JSON laid out as encodeObject writes it (string
 * members, then metadata, an object): the index of its opening brace, of its
 * closing brace, and whether it has a resourceVersion member. Undefined for JSON
 * laid out otherwise.
 */
function metadataSpan(
  json: string,
): { open: number; close: number; hasResourceVersion: boolean } | undefined {
  if (json.charCodeAt(0) !== 0x7b) return undefined; // {
  let i = 1;
  for (;;) {
    if (json.charCodeAt(i) !== 0x22) return undefined;
    const keyEnd = skipString(json, i);
    if (keyEnd < 0 || json.charCodeAt(keyEnd) !== 0x3a) return undefined; // :
    const key = json.slice(i, keyEnd);
    i = keyEnd + 1;
    if (key === '"metadata"') break;
    // apiVersion and kind: a string, then a comma.
    if (json.charCodeAt(i) !== 0x22) return undefined;
    i = skipString(json, i);
    if (i < 0 || json.charCodeAt(i) !== 0x2c) return undefined;
    i++;
  }
  if (json.charCodeAt(i) !== 0x7b) return undefined;
  const open = i;
  let depth = 0;
  let hasResourceVersion = false;
  for (; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (c === 0x22) {
      const end = skipString(json, i);
      if (end < 0) return undefined;
      if (depth === 1 && json.startsWith('"resourceVersion"', i)) hasResourceVersion = true;
      i = end - 1;
    } else if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) {
      depth--;
      if (depth === 0) break;
    }
  }
  if (depth !== 0) return undefined;
  return { open, close: i, hasResourceVersion };
}

/**
 * A stored object's JSON with metadata.resourceVersion set to `revision`, made by
 * inserting it into the text (no parse, no new serialization): what decodeStored
 * then JSON.stringify would give, up to member order. Only for JSON laid out as
 * encodeObject writes it (string members, then metadata, an object without a
 * resourceVersion); undefined for anything else, which the caller decodes instead.
 */
export function storedWithRevision(stored: string, revision: number): string | undefined {
  const span = metadataSpan(stored);
  if (span === undefined || span.hasResourceVersion) return undefined;
  const rv = `"resourceVersion":${JSON.stringify(String(revision))}`;
  const empty = span.close === span.open + 1;
  return [stored.slice(0, span.close), empty ? rv : `,${rv}`, stored.slice(span.close)].join("");
}

/**
 * The text of an object's metadata in its JSON, when the JSON is laid out as
 * encodeObject writes it (string members, then metadata): the metadata's own
 * text, without parsing the rest of the object. Undefined for anything else.
 */
export function metadataText(json: string): string | undefined {
  const span = metadataSpan(json);
  return span === undefined ? undefined : json.slice(span.open, span.close + 1);
}

/**
 * The JSON of objects just written, by object: the answer to a write is this JSON
 * when it is asked for as stored (JSON, storage version), instead of a new
 * serialization. Set only on objects nothing modifies afterwards.
 */
const writtenJson = new WeakMap<KubeObject, string>();

/** Remembers `json` as the JSON of `obj` (resourceVersion included). */
export function rememberJson(obj: KubeObject, json: string): void {
  writtenJson.set(obj, json);
}

/** The JSON remembered for `obj`, if any. */
export function rememberedJson(obj: KubeObject): string | undefined {
  return writtenJson.get(obj);
}

/** A copy of `obj` in another version of its type (conversion None: apiVersion only). */
export function convertToVersion(
  obj: KubeObject,
  def: ResourceDefinition,
  version: string,
): KubeObject {
  const apiVersion = apiVersionOf(def.group, version);
  if (obj.apiVersion === apiVersion && obj.kind === def.names.kind) return obj;
  return { ...obj, apiVersion, kind: def.names.kind };
}

/** A copy of `obj` in its type's storage version. */
export function convertToStorage(obj: KubeObject, def: ResourceDefinition): KubeObject {
  return convertToVersion(obj, def, storageVersion(def).name);
}

/** Parses a resourceVersion string as a revision; undefined for "" or absent; 400 otherwise. */
export function parseResourceVersion(rv: string | undefined): number | undefined {
  if (rv === undefined || rv === "") return undefined;
  if (!/^\d+$/.test(rv) || !Number.isSafeInteger(Number(rv))) {
    throw errors.badRequest(`invalid resource version: ${JSON.stringify(rv)}`);
  }
  return Number(rv);
}
