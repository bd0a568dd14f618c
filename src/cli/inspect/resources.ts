/**
 * Resources and objects as the inspection commands name them: the resolution
 * of a resource name a person types (`widget`, `widgets`, `wd`, `Widget`,
 * `widgets.example.com`) to one of the resources the server serves (the
 * runtime's discovery), as kubectl resolves resource names; and how an object
 * is identified in reports (`ObjectRef`, "Widget.example.com ns/name").
 */
import type { KubeObject } from "@setpoint/api";
import { groupResource, type ServedResource } from "@setpoint/runtime";
import { UsageError } from "../usage-error.ts";

export type { ServedResource } from "@setpoint/runtime";

/** An object as reports identify it. */
export interface ObjectRef {
  apiVersion: string;
  kind: string;
  /** "configmaps" or "widgets.example.com". */
  resource: string;
  namespace?: string;
  name: string;
}

/** The ObjectRef of `obj`, read from `resource`. */
export function objectRef(resource: ServedResource, obj: Pick<KubeObject, "metadata">): ObjectRef {
  return {
    apiVersion: resource.apiVersion,
    kind: resource.kind,
    resource: groupResource(resource),
    ...(obj.metadata.namespace ? { namespace: obj.metadata.namespace } : {}),
    name: obj.metadata.name ?? "",
  };
}

/** "Widget.example.com" for a kind in a group, "ConfigMap" for a core one. */
export function kindLabel(o: { kind: string; apiVersion: string }): string {
  const slash = o.apiVersion.indexOf("/");
  return slash < 0 ? o.kind : `${o.kind}.${o.apiVersion.slice(0, slash)}`;
}

/** "Widget.example.com ns/name", or "Namespace name" for a cluster-scoped object. */
export function objectLabel(o: {
  kind: string;
  apiVersion: string;
  namespace?: string;
  name: string;
}): string {
  return `${kindLabel(o)} ${o.namespace ? `${o.namespace}/` : ""}${o.name}`;
}

/**
 * Resolves a typed resource name. `text` is a kind, plural, singular or short
 * name, case-insensitive, optionally followed by `.<group>` (e.g.
 * `widgets.example.com`, `Widget.example.com`). Several matches in different
 * groups are ambiguous unless exactly one is in the core group (kubectl's
 * preference). Throws UsageError when nothing or more than one matches.
 */
export function resolveResource(resources: ServedResource[], text: string): ServedResource {
  const wanted = text.toLowerCase();
  const names = (r: ServedResource) => [
    r.kind.toLowerCase(),
    r.plural,
    r.singular,
    ...r.shortNames.map((s) => s.toLowerCase()),
  ];
  const matches = resources.filter((r) => {
    const ns = names(r);
    if (ns.includes(wanted)) return true;
    if (r.group === "") return false;
    // "<name>.<group>" and "<name>.<version>.<group>"
    return ns.some(
      (n) => wanted === `${n}.${r.group}` || wanted === `${n}.${r.version}.${r.group}`,
    );
  });
  if (matches.length === 1) return matches[0];
  if (matches.length === 0) {
    throw new UsageError(
      `the server does not serve a resource named ${JSON.stringify(text)} (try a kind, plural or short name, e.g. "configmaps" or "widgets.example.com")`,
    );
  }
  const core = matches.filter((r) => r.group === "");
  if (core.length === 1) return core[0];
  throw new UsageError(
    `${JSON.stringify(text)} is ambiguous: ${matches.map(groupResource).join(", ")}; name the group, e.g. ${groupResource(matches[0])}`,
  );
}
