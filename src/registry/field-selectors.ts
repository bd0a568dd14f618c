/**
 * The fields a type's objects can be selected by (field selectors): metadata.name,
 * metadata.namespace, and the type's own selectable fields, with each object's values.
 */
import type { ResourceDefinition } from "./types.ts";

/** Fields every type can be selected by. */
export const METADATA_SELECTABLE_FIELDS = ["metadata.name", "metadata.namespace"];

/** Every field selector a type supports. */
export function selectableFields(def: ResourceDefinition): string[] {
  return [...METADATA_SELECTABLE_FIELDS, ...Object.keys(def.strategy.selectableFields ?? {})];
}

/**
 * An object's values for the selectable fields of its type beyond metadata.name and
 * metadata.namespace; undefined when the type has none.
 */
export function extraFieldValues(
  def: ResourceDefinition,
  obj: { metadata: { name?: string; namespace?: string } } & Record<string, unknown>,
): Record<string, string> | undefined {
  const extra = def.strategy.selectableFields;
  if (!extra) return undefined;
  const out: Record<string, string> = {};
  for (const [field, get] of Object.entries(extra)) {
    try {
      out[field] = get(obj as never) ?? "";
    } catch {
      out[field] = "";
    }
  }
  return out;
}

/** An object's values for every selectable field of its type. */
export function fieldValues(
  def: ResourceDefinition,
  obj: { metadata: { name?: string; namespace?: string } } & Record<string, unknown>,
): Record<string, string> {
  return {
    "metadata.name": obj.metadata.name ?? "",
    "metadata.namespace": obj.metadata.namespace ?? "",
    ...extraFieldValues(def, obj),
  };
}
