/**
 * Field paths as Kubernetes prints them in field errors: `spec.items[0].name`,
 * map keys of additionalProperties joined with a dot (`spec.labels.app`), and the
 * CRD schema paths with keys in brackets (`properties[spec]`).
 */
import type { Schema } from "@setpoint/api";

/** `parent.child`, or `child` at the root. */
export function childPath(parent: string, key: string): string {
  return parent === "" ? key : `${parent}.${key}`;
}

/** `parent[i]`. */
export function indexPath(parent: string, index: number): string {
  return `${parent}[${index}]`;
}

/** `parent[key]`, as field.Path.Key renders a map key. */
export function keyPath(parent: string, key: string): string {
  return `${parent}[${key}]`;
}

/** Whether `v` is a plain JSON object (not an array, not null). */
export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * The schema a structural schema declares for property `key`: own properties only,
 * so that a field named like an Object.prototype member (`constructor`,
 * `toString`) is not taken for a declared one.
 */
export function declaredProperty(
  s: { properties?: Record<string, Schema> } | undefined,
  key: string,
): Schema | undefined {
  const props = s?.properties;
  return props !== undefined && Object.hasOwn(props, key) ? props[key] : undefined;
}

/** The JSON type name of a value, as OpenAPI validation names it. */
export function jsonTypeName(v: unknown): string {
  if (v === null || v === undefined) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  if (typeof v === "bigint") return "integer";
  if (typeof v === "object") return "object";
  return typeof v;
}
