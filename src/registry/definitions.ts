/**
 * Named schemas. Every consumer of a type's schema (validation, pruning,
 * strategic merge patch, server-side apply) reads it inline, as one tree. Only the
 * published OpenAPI document splits it into named definitions referenced with
 * `$ref`. This module remembers, per schema object, which definition it is (or
 * refers to), without putting anything into the schema itself.
 *
 * Schemas handed out here are shared: treat them as read-only.
 */
import type { Schema } from "@setpoint/api";

interface NameEntry {
  /** Definition name in `components.schemas`, e.g. "io.k8s.api.core.v1.ConfigMap". */
  name: string;
  /** The definition itself (true) or a property that refers to it (false). */
  canonical: boolean;
  /** For references: the definition referred to. */
  target: Schema;
}

const names = new WeakMap<Schema, NameEntry>();

/** Registers `schema` as the definition `name` and returns it. */
export function defineSchema(name: string, schema: Schema): Schema {
  names.set(schema, { name, canonical: true, target: schema });
  return schema;
}

/**
 * A property schema that is the named definition `def`, with a description of its
 * own: inline it is `def` with that description; published it is a `$ref`.
 */
export function refSchema(def: Schema, description?: string): Schema {
  const entry = names.get(def);
  if (!entry) throw new Error("refSchema: schema is not a named definition");
  const copy: Schema = { ...entry.target };
  if (description !== undefined) copy.description = description;
  else delete copy.description;
  names.set(copy, { name: entry.name, canonical: false, target: entry.target });
  return copy;
}

/** The definition a schema is or refers to, if any. */
export function schemaDefinition(
  schema: Schema,
): { name: string; canonical: boolean; target: Schema } | undefined {
  return names.get(schema);
}
