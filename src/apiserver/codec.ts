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
  const { resourceVersion: _rv, ...metadata } = obj.metadata;
  const { apiVersion, kind, metadata: _m, ...rest } = obj;
  return JSON.stringify({ apiVersion, kind, metadata, ...rest });
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
