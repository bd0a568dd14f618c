/**
 * Where objects live in storage:
 *
 *   /registry/<group, or "core">/<plural>/<namespace>/<name>   namespaced types
 *   /registry/<group, or "core">/<plural>/<name>               cluster-scoped types
 *
 * A type's objects all sit under one prefix, so one storage watch per type feeds
 * its watch cache, and a namespace's objects under a longer one.
 */
import type { ResourceDefinition } from "./types.ts";

/** Root of every object key. */
export const REGISTRY_ROOT = "/registry/";

/** The prefix holding every object of a type, ending in "/". */
export function resourcePrefix(def: Pick<ResourceDefinition, "group" | "names">): string {
  return `${REGISTRY_ROOT}${def.group || "core"}/${def.names.plural}/`;
}

/**
 * The prefix of a collection: one namespace of a namespaced type, or (namespace
 * absent) every object of the type.
 */
export function collectionPrefix(
  def: Pick<ResourceDefinition, "group" | "names" | "namespaced">,
  namespace?: string,
): string {
  const base = resourcePrefix(def);
  return def.namespaced && namespace ? `${base}${namespace}/` : base;
}

/** The key of one object. */
export function objectKey(
  def: Pick<ResourceDefinition, "group" | "names" | "namespaced">,
  namespace: string | undefined,
  name: string,
): string {
  const base = resourcePrefix(def);
  return def.namespaced ? `${base}${namespace ?? ""}/${name}` : `${base}${name}`;
}
