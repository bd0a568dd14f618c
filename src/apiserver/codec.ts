/**
 * Objects in storage and on the wire. Storage holds each object's JSON in its
 * type's storage version without `metadata.resourceVersion` (the store's
 * modRevision is the resourceVersion); reading sets it back. Versions of one type
 * share a schema shape here (conversion "None"): converting rewrites apiVersion.
 */
import { apiVersionOf, type KubeObject } from "../api/meta.ts";
import { errors } from "../api/status.ts";
import type { ResourceDefinition } from "../registry/types.ts";
import { storageVersion } from "../registry/types.ts";
import type { KeyValue } from "../storage/store.ts";

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
   * its bytes into the cache's slabs, src/apiserver/watchslabs.ts) encode it once.
   */
  withRevision(revision: number): string;
}

/**
 * Encodes an object for storage. Only the stored JSON and where its metadata ends
 * are kept for adding a resourceVersion later (nothing else of the encoding lives
 * on while the write waits for storage).
 */
export function encodeObject(obj: KubeObject): EncodedObject {
  let metadata: Omit<KubeObject["metadata"], "resourceVersion"> = obj.metadata;
  if (obj.metadata.resourceVersion !== undefined) {
    const { resourceVersion: _rv, ...rest } = obj.metadata;
    metadata = rest;
  }
  const { apiVersion, kind, metadata: _m, ...rest } = obj;
  let head = "{";
  if (apiVersion !== undefined) head += `"apiVersion":${JSON.stringify(apiVersion)},`;
  if (kind !== undefined) head += `"kind":${JSON.stringify(kind)},`;
  head += '"metadata":';
  const meta = JSON.stringify(metadata);
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
 * A stored object's JSON with metadata.resourceVersion set to `revision`, made by
 * inserting it into the text (no parse, no new serialization): what decodeStored
 * then JSON.stringify would give, up to member order. Only for JSON laid out as
 * encodeObject writes it (string members, then metadata, an object without a
 * resourceVersion); undefined for anything else, which the caller decodes instead.
 */
export function storedWithRevision(stored: string, revision: number): string | undefined {
  if (stored.charCodeAt(0) !== 0x7b) return undefined; // {
  let i = 1;
  for (;;) {
    if (stored.charCodeAt(i) !== 0x22) return undefined;
    const keyEnd = skipString(stored, i);
    if (keyEnd < 0 || stored.charCodeAt(keyEnd) !== 0x3a) return undefined; // :
    const key = stored.slice(i, keyEnd);
    i = keyEnd + 1;
    if (key === '"metadata"') break;
    // apiVersion and kind: a string, then a comma.
    if (stored.charCodeAt(i) !== 0x22) return undefined;
    i = skipString(stored, i);
    if (i < 0 || stored.charCodeAt(i) !== 0x2c) return undefined;
    i++;
  }
  if (stored.charCodeAt(i) !== 0x7b) return undefined;
  const open = i;
  let depth = 0;
  for (; i < stored.length; i++) {
    const c = stored.charCodeAt(i);
    if (c === 0x22) {
      const end = skipString(stored, i);
      if (end < 0) return undefined;
      if (depth === 1 && stored.startsWith('"resourceVersion"', i)) return undefined;
      i = end - 1;
    } else if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) {
      depth--;
      if (depth === 0) break;
    }
  }
  if (depth !== 0) return undefined;
  const rv = `"resourceVersion":${JSON.stringify(String(revision))}`;
  const empty = i === open + 1;
  return [stored.slice(0, i), empty ? rv : `,${rv}`, stored.slice(i)].join("");
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
