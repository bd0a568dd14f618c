/**
 * Small constructors for the built-in types' schemas, so each type file reads like
 * the Kubernetes type it describes.
 */
import type { Schema } from "@setpoint/api";

/** A string property. */
export function str(description: string, extra: Partial<Schema> = {}): Schema {
  return { type: "string", description, ...extra };
}

/** A 32-bit integer property. */
export function int32(description: string): Schema {
  return { type: "integer", format: "int32", description };
}

/** A 64-bit integer property. */
export function int64(description: string): Schema {
  return { type: "integer", format: "int64", description };
}

/** A boolean property. */
export function bool(description: string): Schema {
  return { type: "boolean", description };
}

/** A map from string keys to string values. */
export function stringMap(description: string): Schema {
  return { type: "object", description, additionalProperties: { type: "string" } };
}

/** A map from string keys to base64-encoded bytes. */
export function bytesMap(description: string): Schema {
  return {
    type: "object",
    description,
    additionalProperties: { type: "string", format: "byte" },
  };
}

/** An object with the given properties. */
export function object(
  properties: Record<string, Schema>,
  description?: string,
  required?: string[],
): Schema {
  const s: Schema = { type: "object" };
  if (description !== undefined) s.description = description;
  if (required?.length) s.required = required;
  s.properties = properties;
  return s;
}

/** List markers as Kubernetes publishes them (list type, map keys, patch merge key/strategy). */
export interface ListMarkers {
  listType?: "atomic" | "set" | "map";
  mapKeys?: string[];
  patchMergeKey?: string;
  patchStrategy?: string;
}

/** An array property with its list markers. */
export function array(items: Schema, description: string, markers: ListMarkers = {}): Schema {
  const s: Schema = { type: "array", description, items };
  if (markers.listType) s["x-kubernetes-list-type"] = markers.listType;
  if (markers.mapKeys) s["x-kubernetes-list-map-keys"] = markers.mapKeys;
  if (markers.patchMergeKey) s["x-kubernetes-patch-merge-key"] = markers.patchMergeKey;
  if (markers.patchStrategy) s["x-kubernetes-patch-strategy"] = markers.patchStrategy;
  return s;
}

/** Reads a nested field of a plain JSON object; undefined if any step is missing. */
export function field(obj: unknown, ...path: string[]): unknown {
  let cur: unknown = obj;
  for (const p of path) {
    if (typeof cur !== "object" || cur === null || Array.isArray(cur)) return undefined;
    cur = (cur as Record<string, unknown>)[p];
  }
  return cur;
}

/** A nested field as a string ("" when absent or not a string), as field selectors read it. */
export function fieldString(obj: unknown, ...path: string[]): string {
  const v = field(obj, ...path);
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return "";
}

/** A nested field as a plain object, or undefined. */
export function fieldObject(obj: unknown, ...path: string[]): Record<string, unknown> | undefined {
  const v = field(obj, ...path);
  return typeof v === "object" && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}
