/**
 * The URL paths of the API: a collection (in a namespace or across all) and
 * an object or one of its subresources, from where discovery says a kind is
 * served; and the name and namespace an object's path takes.
 */
import type { KubeObject } from "@setpoint/api";
import type { ResourceInfo } from "./discovery.ts";

export function nameOf(obj: KubeObject): string {
  const name = obj.metadata?.name;
  if (!name) throw new Error(`${obj.kind ?? "object"} has no metadata.name`);
  return name;
}

export function namespaceOf(info: ResourceInfo, obj: KubeObject): string | undefined {
  if (!info.namespaced) return undefined;
  const ns = obj.metadata?.namespace;
  if (!ns)
    throw new Error(
      `${info.kind} ${obj.metadata?.name ?? ""} is namespaced but has no metadata.namespace`,
    );
  return ns;
}

/** The URL path of a collection: all namespaces when `namespace` is unset. */
export function collectionPath(info: ResourceInfo, namespace?: string): string {
  const prefix = info.group === "" ? `/api/${info.version}` : `/apis/${info.group}/${info.version}`;
  const ns = info.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : "";
  return `${prefix}${ns}/${info.plural}`;
}

/** The URL path of one object (and optionally one of its subresources). */
export function objectPath(
  info: ResourceInfo,
  namespace: string | undefined,
  name: string,
  subresource?: string,
): string {
  if (!name) throw new Error(`${info.kind}: a name is required`);
  if (info.namespaced && !namespace) {
    throw new Error(`${info.kind} "${name}" is namespaced: a namespace is required`);
  }
  const sub = subresource ? `/${subresource}` : "";
  return `${collectionPath(info, namespace)}/${encodeURIComponent(name)}${sub}`;
}
