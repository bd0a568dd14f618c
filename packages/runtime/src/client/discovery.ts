/**
 * The server's discovery documents, read two ways:
 *
 * - Kind → resource mapping (`/api/v1`, `/apis/<group>/<version>`), fetched once
 *   per group-version and cached. A kind that is not in the cached document
 *   triggers one re-fetch, so a kind whose CustomResourceDefinition is created
 *   after start is found on its first use.
 * - Every served resource (`serverResources`): the aggregated documents (`/api`
 *   and `/apis` asked for APIGroupDiscoveryList, two requests in all), or, from
 *   a server without aggregated discovery, the legacy documents (one per
 *   group-version). A group-version whose document cannot be read is reported
 *   and the rest is still returned. Each group-version read refreshes the kind
 *   cache.
 */
import { parseApiVersion } from "@setpoint/api";
import { isNotFound, NoKindMatchError } from "./errors.ts";

/** A kind, as objects name their type. */
export interface TypeRef {
  apiVersion: string;
  kind: string;
}

/** Where a kind is served. */
export interface ResourceInfo {
  group: string;
  version: string;
  /** The URL segment: "configmaps". */
  plural: string;
  namespaced: boolean;
  kind: string;
  verbs: string[];
  /** Subresources the server lists for it ("status", "scale"...). */
  subresources: string[];
}

/** One resource the server serves, in one group-version (what `serverResources` lists). */
export interface ServedResource extends ResourceInfo {
  /** "v1" or "group/version". */
  apiVersion: string;
  /** The singular name ("configmap"; the lowercased kind when discovery gives none). */
  singular: string;
  shortNames: string[];
}

/** Every resource the server serves, as one discovery pass found them. */
export interface ServerResources {
  /**
   * One entry per group, version and resource; within a group the preferred
   * version comes first (`preferredResources` keeps one version of each).
   */
  resources: ServedResource[];
  /** Group-versions whose document could not be read (or is stale), with why. */
  failed: Map<string, string>;
  /** Group-versions whose names do not parse. */
  unparsed: string[];
}

/**
 * Fetches a discovery path (with an Accept header, when given) and returns its
 * parsed JSON; throws ApiError on non-2xx.
 */
export type DiscoveryFetch = (
  path: string,
  opts?: { accept?: string | undefined; signal?: AbortSignal | undefined },
) => Promise<unknown>;

/** Accept header asking for aggregated discovery (v2, then v2beta1), else the legacy document. */
export const AGGREGATED_DISCOVERY_ACCEPT =
  "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList," +
  "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList," +
  "application/json";

/** APIResourceList entries (legacy discovery). */
interface ApiResource {
  name?: string | undefined;
  singularName?: string | undefined;
  namespaced?: boolean | undefined;
  kind?: string | undefined;
  verbs?: string[] | undefined;
  shortNames?: string[] | undefined;
}

/** APIGroupDiscoveryList items (aggregated discovery). */
interface AggregatedGroup {
  metadata?: { name?: string | undefined } | undefined;
  versions?:
    | {
        version?: string | undefined;
        freshness?: string | undefined;
        resources?:
          | {
              resource?: string | undefined;
              responseKind?: { kind?: string | undefined } | undefined;
              scope?: string | undefined;
              singularResource?: string | undefined;
              verbs?: string[] | undefined;
              shortNames?: string[] | undefined;
              subresources?: { subresource?: string | undefined }[] | undefined;
            }[]
          | undefined;
      }[]
    | undefined;
}

/** What `/api` and `/apis` answer: aggregated, or APIVersions / APIGroupList. */
interface RootDoc {
  kind?: string | undefined;
  items?: AggregatedGroup[] | undefined;
  versions?: string[] | undefined;
  groups?:
    | {
        name?: string | undefined;
        versions?: { version?: string | undefined }[] | undefined;
        preferredVersion?: { version?: string | undefined } | undefined;
      }[]
    | undefined;
}

interface GroupVersionDoc {
  byKind: Map<string, ResourceInfo>;
}

/** The discovery path of a group-version. */
export function discoveryPath(apiVersion: string): string {
  const { group, version } = parseApiVersion(apiVersion);
  return group === "" ? `/api/${version}` : `/apis/${group}/${version}`;
}

/** "configmaps" or "widgets.example.com": how a resource is named across versions. */
export function groupResource(r: { group: string; plural: string }): string {
  return r.group === "" ? r.plural : `${r.plural}.${r.group}`;
}

/**
 * Group and version of an apiVersion, or undefined when it does not parse as
 * one ("v1", "group/v1"; versions are lowercase alphanumeric).
 */
export function parseGroupVersion(gv: string): { group: string; version: string } | undefined {
  const parts = gv.split("/");
  if (parts.length === 1 && /^[a-z0-9]+$/.test(parts[0])) return { group: "", version: parts[0] };
  if (parts.length === 2 && parts[0] && /^[a-z0-9]+$/.test(parts[1])) {
    return { group: parts[0], version: parts[1] };
  }
  return undefined;
}

/**
 * One entry per group and resource: its preferred version's, or for a resource
 * the preferred version does not serve, the first other version's (as
 * client-go's ServerPreferredResources).
 */
export function preferredResources(resources: readonly ServedResource[]): ServedResource[] {
  const seen = new Set<string>();
  return resources.filter((r) => {
    const key = groupResource(r);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Caches the server's APIResourceList per group-version. */
export class Discovery {
  private readonly docs = new Map<string, GroupVersionDoc>();
  private readonly inflight = new Map<string, Promise<GroupVersionDoc | undefined>>();

  constructor(private readonly fetch: DiscoveryFetch) {}

  /** Where `type` is served; re-reads discovery once on a miss. Throws NoKindMatchError. */
  async resourceFor(type: TypeRef): Promise<ResourceInfo> {
    const cached = this.docs.get(type.apiVersion)?.byKind.get(type.kind);
    if (cached) return cached;
    const doc = await this.refresh(type.apiVersion);
    const info = doc?.byKind.get(type.kind);
    if (!info) throw new NoKindMatchError(type.apiVersion, type.kind);
    return info;
  }

  /** The cached answer, without asking the server. */
  cached(type: TypeRef): ResourceInfo | undefined {
    return this.docs.get(type.apiVersion)?.byKind.get(type.kind);
  }

  /** Forgets everything (or one group-version). */
  invalidate(apiVersion?: string): void {
    if (apiVersion === undefined) this.docs.clear();
    else this.docs.delete(apiVersion);
  }

  /**
   * Every resource the server serves (see the module doc). Throws only when
   * `/api` or `/apis` cannot be read; partial failures are in the result.
   */
  async serverResources(signal?: AbortSignal): Promise<ServerResources> {
    const found: ServerResources = { resources: [], failed: new Map(), unparsed: [] };
    const aggregated = { accept: AGGREGATED_DISCOVERY_ACCEPT, signal };
    const roots = (await Promise.all([
      this.fetch("/api", aggregated),
      this.fetch("/apis", aggregated),
    ])) as (RootDoc | undefined)[];
    const legacy: string[] = [];
    const read: { apiVersion: string; resources: ServedResource[] }[] = [];
    for (const root of roots) {
      if (root?.kind === "APIGroupDiscoveryList") {
        read.push(...aggregatedGroupVersions(root.items ?? [], found));
      } else {
        legacy.push(...legacyGroupVersions(root ?? {}));
      }
    }
    const docs = await Promise.all(
      legacy.map(async (gv) => {
        if (!parseGroupVersion(gv)) {
          found.unparsed.push(gv);
          return undefined;
        }
        try {
          return {
            apiVersion: gv,
            resources: legacyResources(gv, await this.fetch(discoveryPath(gv), { signal })),
          };
        } catch (e) {
          found.failed.set(gv, e instanceof Error ? e.message : String(e));
          return undefined;
        }
      }),
    );
    for (const d of docs) if (d) read.push(d);
    for (const gv of read) {
      found.resources.push(...gv.resources);
      this.docs.set(gv.apiVersion, docOf(gv.resources));
    }
    return found;
  }

  /** Fetches one group-version's document; concurrent callers share one request. */
  private refresh(apiVersion: string): Promise<GroupVersionDoc | undefined> {
    let p = this.inflight.get(apiVersion);
    if (!p) {
      p = this.load(apiVersion).finally(() => this.inflight.delete(apiVersion));
      this.inflight.set(apiVersion, p);
    }
    return p;
  }

  private async load(apiVersion: string): Promise<GroupVersionDoc | undefined> {
    let body: unknown;
    try {
      body = await this.fetch(discoveryPath(apiVersion));
    } catch (e) {
      if (isNotFound(e)) {
        this.docs.delete(apiVersion);
        return undefined;
      }
      throw e;
    }
    const doc = docOf(legacyResources(apiVersion, body));
    this.docs.set(apiVersion, doc);
    return doc;
  }
}

/** The kind map of a group-version (the first resource of each kind). */
function docOf(resources: readonly ResourceInfo[]): GroupVersionDoc {
  const byKind = new Map<string, ResourceInfo>();
  for (const r of resources) {
    if (byKind.has(r.kind)) continue;
    const { group, version, plural, namespaced, kind, verbs, subresources } = r;
    byKind.set(kind, { group, version, plural, namespaced, kind, verbs, subresources });
  }
  return { byKind };
}

/** The group-versions a legacy `/api` (APIVersions) or `/apis` (APIGroupList) names, preferred first. */
function legacyGroupVersions(root: RootDoc): string[] {
  const out = [...(root.versions ?? [])];
  for (const g of root.groups ?? []) {
    const name = g.name ?? "";
    const preferred = g.preferredVersion?.version;
    const versions = (g.versions ?? []).map((v) => v.version ?? "").filter(Boolean);
    const ordered = preferred ? [preferred, ...versions.filter((v) => v !== preferred)] : versions;
    for (const v of ordered) out.push(`${name}/${v}`);
  }
  return out;
}

/** The resources of one group-version's APIResourceList (subresources attached to their parent). */
export function legacyResources(apiVersion: string, body: unknown): ServedResource[] {
  const { group, version } = parseApiVersion(apiVersion);
  const list = (body as { resources?: unknown | undefined })?.resources;
  const entries = (Array.isArray(list) ? list : []) as ApiResource[];
  const subresources = new Map<string, string[]>();
  const out: ServedResource[] = [];
  for (const r of entries) {
    if (typeof r?.name !== "string") continue;
    const slash = r.name.indexOf("/");
    if (slash >= 0) {
      const parent = r.name.slice(0, slash);
      subresources.set(parent, [...(subresources.get(parent) ?? []), r.name.slice(slash + 1)]);
      continue;
    }
    if (!r.name || typeof r.kind !== "string" || !r.kind) continue;
    out.push({
      group,
      version,
      apiVersion,
      plural: r.name,
      singular: r.singularName || r.kind.toLowerCase(),
      shortNames: Array.isArray(r.shortNames) ? r.shortNames : [],
      namespaced: r.namespaced === true,
      kind: r.kind,
      verbs: Array.isArray(r.verbs) ? r.verbs : [],
      subresources: [],
    });
  }
  for (const r of out) r.subresources = subresources.get(r.plural) ?? [];
  return out;
}

/** The group-versions of an APIGroupDiscoveryList, each with its resources; stale and unparsable ones reported. */
function aggregatedGroupVersions(
  items: AggregatedGroup[],
  found: ServerResources,
): { apiVersion: string; resources: ServedResource[] }[] {
  const out: { apiVersion: string; resources: ServedResource[] }[] = [];
  for (const g of items) {
    const group = g.metadata?.name ?? "";
    for (const v of g.versions ?? []) {
      const version = v.version ?? "";
      const apiVersion = group ? `${group}/${version}` : version;
      if (!parseGroupVersion(apiVersion)) {
        found.unparsed.push(apiVersion);
        continue;
      }
      if (v.freshness === "Stale") {
        found.failed.set(apiVersion, "the server's discovery document for it is stale");
        continue;
      }
      const resources: ServedResource[] = [];
      for (const r of v.resources ?? []) {
        const kind = r.responseKind?.kind;
        if (!r.resource || r.resource.includes("/") || !kind) continue;
        resources.push({
          group,
          version,
          apiVersion,
          plural: r.resource,
          singular: r.singularResource || kind.toLowerCase(),
          shortNames: Array.isArray(r.shortNames) ? r.shortNames : [],
          namespaced: r.scope === "Namespaced",
          kind,
          verbs: Array.isArray(r.verbs) ? r.verbs : [],
          subresources: (r.subresources ?? [])
            .map((s) => s.subresource ?? "")
            .filter((s) => s !== ""),
        });
      }
      out.push({ apiVersion, resources });
    }
  }
  return out;
}
