/**
 * Every resource the server serves, from its discovery documents: the
 * aggregated form (`/api` and `/apis` asked for APIGroupDiscoveryList, two
 * requests in all), or the legacy documents when the server has no aggregated
 * discovery. Built-in kinds and custom resources look the same here, so the
 * loops that must see "every kind" (garbage collection, namespace deletion)
 * follow CRDs as they come and go.
 *
 * Like client-go's ServerPreferredResources, each group's resources are taken
 * from its preferred version, plus those only served in another version. A
 * group whose document cannot be read is reported in `failedGroups`, and a
 * group-version that does not parse in `unparsedGroupVersions`; the rest is
 * still returned.
 */
import type { RawClient } from "./rawclient.ts";

/** One served resource, in the version it is read in. */
export interface ServedResource {
  group: string;
  version: string;
  /** "group/version", or "version" for the core group. */
  apiVersion: string;
  /** The URL segment ("configmaps"). */
  resource: string;
  kind: string;
  namespaced: boolean;
  verbs: ReadonlySet<string>;
}

/** What one discovery pass found. */
export interface DiscoveryResult {
  resources: ServedResource[];
  /** Group (or group-version) → why its document could not be read. */
  failedGroups: Map<string, string>;
  /** Group-versions whose names do not parse. */
  unparsedGroupVersions: string[];
}

/** Accept header asking for aggregated discovery (v2, then v2beta1), else the legacy document. */
export const AGGREGATED_DISCOVERY_ACCEPT =
  "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList," +
  "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList," +
  "application/json";

/** "group/resource": how a resource is named across versions. */
export function groupResource(r: { group: string; resource: string }): string {
  return r.group ? `${r.resource}.${r.group}` : r.resource;
}

/** "group/Kind": how a kind is named across versions. */
export function groupKind(group: string, kind: string): string {
  return `${group}/${kind}`;
}

/** Group and version of an apiVersion, or undefined when it does not parse. */
export function parseGroupVersion(gv: string): { group: string; version: string } | undefined {
  const parts = gv.split("/");
  if (parts.length === 1 && /^[a-z0-9]+$/.test(parts[0])) return { group: "", version: parts[0] };
  if (parts.length === 2 && parts[0] && /^[a-z0-9]+$/.test(parts[1])) {
    return { group: parts[0], version: parts[1] };
  }
  return undefined;
}

interface AggregatedResource {
  resource?: string;
  responseKind?: { kind?: string };
  scope?: string;
  verbs?: string[];
}

interface AggregatedGroup {
  metadata?: { name?: string };
  versions?: { version?: string; resources?: AggregatedResource[]; freshness?: string }[];
}

interface LegacyResource {
  name?: string;
  kind?: string;
  namespaced?: boolean;
  verbs?: string[];
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

class Collector {
  readonly result: DiscoveryResult = {
    resources: [],
    failedGroups: new Map(),
    unparsedGroupVersions: [],
  };
  private readonly seen = new Set<string>();

  add(group: string, version: string, r: Omit<ServedResource, "group" | "version" | "apiVersion">) {
    if (!r.resource || r.resource.includes("/") || !r.kind) return;
    const key = groupResource({ group, resource: r.resource });
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.result.resources.push({
      group,
      version,
      apiVersion: group ? `${group}/${version}` : version,
      ...r,
    });
  }
}

function addAggregated(c: Collector, items: AggregatedGroup[]): void {
  for (const g of items) {
    const group = g.metadata?.name ?? "";
    for (const v of g.versions ?? []) {
      const version = v.version ?? "";
      const gv = group ? `${group}/${version}` : version;
      if (!parseGroupVersion(gv)) {
        c.result.unparsedGroupVersions.push(gv);
        continue;
      }
      if (v.freshness === "Stale") {
        c.result.failedGroups.set(gv, "the server's discovery document for it is stale");
        continue;
      }
      for (const r of v.resources ?? []) {
        c.add(group, version, {
          resource: r.resource ?? "",
          kind: r.responseKind?.kind ?? "",
          namespaced: r.scope === "Namespaced",
          verbs: new Set(r.verbs ?? []),
        });
      }
    }
  }
}

async function addLegacyGroupVersion(
  raw: RawClient,
  c: Collector,
  group: string,
  version: string,
  signal?: AbortSignal,
): Promise<void> {
  const gv = group ? `${group}/${version}` : version;
  if (!parseGroupVersion(gv)) {
    c.result.unparsedGroupVersions.push(gv);
    return;
  }
  const path = group ? `/apis/${group}/${version}` : `/api/${version}`;
  try {
    const doc = await raw.getJson<{ resources?: LegacyResource[] }>(path, undefined, signal);
    for (const r of doc.body?.resources ?? []) {
      c.add(group, version, {
        resource: r.name ?? "",
        kind: r.kind ?? "",
        namespaced: r.namespaced === true,
        verbs: new Set(r.verbs ?? []),
      });
    }
  } catch (e) {
    c.result.failedGroups.set(gv, message(e));
  }
}

/**
 * Reads the server's discovery. Throws only when neither `/api` nor `/apis` can
 * be read at all; partial failures are in the result.
 */
export async function discoverResources(
  raw: RawClient,
  signal?: AbortSignal,
): Promise<DiscoveryResult> {
  const c = new Collector();
  for (const root of ["/api", "/apis"]) {
    const doc = await raw.getJson<{
      kind?: string;
      items?: AggregatedGroup[];
      versions?: string[];
      groups?: {
        name?: string;
        versions?: { version?: string }[];
        preferredVersion?: { version?: string };
      }[];
    }>(root, AGGREGATED_DISCOVERY_ACCEPT, signal);
    const body = doc.body ?? {};
    if (body.kind === "APIGroupDiscoveryList") {
      addAggregated(c, body.items ?? []);
    } else if (root === "/api") {
      for (const v of body.versions ?? []) await addLegacyGroupVersion(raw, c, "", v, signal);
    } else {
      for (const g of body.groups ?? []) {
        const name = g.name ?? "";
        const preferred = g.preferredVersion?.version;
        const versions = (g.versions ?? []).map((v) => v.version ?? "").filter(Boolean);
        const ordered = preferred
          ? [preferred, ...versions.filter((v) => v !== preferred)]
          : versions;
        for (const v of ordered) await addLegacyGroupVersion(raw, c, name, v, signal);
      }
    }
  }
  return c.result;
}
