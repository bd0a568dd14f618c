/**
 * Every kind the server serves (built-in and custom), read from discovery, and
 * the resolution of a name a person types (`widget`, `widgets`, `wd`, `Widget`,
 * `widgets.example.com`) to one of them, as kubectl resolves resource names.
 */
import { UsageError } from "../storage.ts";

/** One served resource, at its group's preferred version. */
export interface ServedResource {
  group: string;
  version: string;
  /** "v1" or "group/version". */
  apiVersion: string;
  kind: string;
  /** The URL segment, e.g. "configmaps". */
  plural: string;
  singular: string;
  shortNames: string[];
  namespaced: boolean;
  verbs: string[];
  /** Subresources discovery lists for it ("status", "scale", "finalize"...). */
  subresources: string[];
}

/** The JSON answered by /api. */
export interface ApiVersionsDoc {
  versions?: string[];
}

/** The JSON answered by /apis. */
export interface ApiGroupListDoc {
  groups?: {
    name?: string;
    versions?: { groupVersion?: string; version?: string }[];
    preferredVersion?: { groupVersion?: string; version?: string };
  }[];
}

/** The JSON answered by /api/v1 or /apis/<group>/<version>. */
export interface ApiResourceListDoc {
  resources?: {
    name?: string;
    singularName?: string;
    namespaced?: boolean;
    kind?: string;
    verbs?: string[];
    shortNames?: string[];
  }[];
}

/** The group-versions to read resources from: the core version and each group's preferred one. */
export function preferredGroupVersions(core: ApiVersionsDoc, groups: ApiGroupListDoc): string[] {
  const out: string[] = [];
  const coreVersion = core.versions?.includes("v1") ? "v1" : core.versions?.[0];
  if (coreVersion) out.push(coreVersion);
  for (const g of groups.groups ?? []) {
    const gv = g.preferredVersion?.groupVersion ?? g.versions?.[0]?.groupVersion;
    if (gv) out.push(gv);
  }
  return out;
}

/** The resources of one group-version's APIResourceList (subresources left out). */
export function resourcesOf(groupVersion: string, doc: ApiResourceListDoc): ServedResource[] {
  const slash = groupVersion.indexOf("/");
  const group = slash < 0 ? "" : groupVersion.slice(0, slash);
  const version = slash < 0 ? groupVersion : groupVersion.slice(slash + 1);
  const out: ServedResource[] = [];
  const subresources = new Map<string, string[]>();
  for (const r of doc.resources ?? []) {
    const slash = typeof r.name === "string" ? r.name.indexOf("/") : -1;
    if (slash > 0) {
      const parent = (r.name as string).slice(0, slash);
      subresources.set(parent, [
        ...(subresources.get(parent) ?? []),
        (r.name as string).slice(slash + 1),
      ]);
    }
  }
  for (const r of doc.resources ?? []) {
    if (typeof r.name !== "string" || r.name.includes("/") || typeof r.kind !== "string") continue;
    out.push({
      group,
      version,
      apiVersion: groupVersion,
      kind: r.kind,
      plural: r.name,
      singular: r.singularName || r.kind.toLowerCase(),
      shortNames: r.shortNames ?? [],
      namespaced: r.namespaced === true,
      verbs: r.verbs ?? [],
      subresources: subresources.get(r.name) ?? [],
    });
  }
  return out;
}

/** "configmaps" or "widgets.example.com": how a resource is named unambiguously. */
export function qualifiedName(r: ServedResource): string {
  return r.group === "" ? r.plural : `${r.plural}.${r.group}`;
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
    `${JSON.stringify(text)} is ambiguous: ${matches.map(qualifiedName).join(", ")}; name the group, e.g. ${qualifiedName(matches[0])}`,
  );
}
