/**
 * Kind → resource mapping from the server's discovery documents (`/api/v1`,
 * `/apis/<group>/<version>`), fetched once per group-version and cached. A kind
 * that is not in the cached document triggers one re-fetch, so a kind whose
 * CustomResourceDefinition is created after start is found on its first use.
 */
import { parseApiVersion } from "../api/meta.ts";
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

interface ApiResource {
  name?: string;
  namespaced?: boolean;
  kind?: string;
  verbs?: string[];
}

interface GroupVersionDoc {
  byKind: Map<string, ResourceInfo>;
}

/** Fetches a discovery path and returns its parsed JSON (throws ApiError on non-2xx). */
export type DiscoveryFetch = (path: string) => Promise<unknown>;

/** The discovery path of a group-version. */
export function discoveryPath(apiVersion: string): string {
  const { group, version } = parseApiVersion(apiVersion);
  return group === "" ? `/api/${version}` : `/apis/${group}/${version}`;
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
    const doc = parseResourceList(apiVersion, body);
    this.docs.set(apiVersion, doc);
    return doc;
  }
}

function parseResourceList(apiVersion: string, body: unknown): GroupVersionDoc {
  const { group, version } = parseApiVersion(apiVersion);
  const resources = ((body as { resources?: unknown })?.resources ?? []) as ApiResource[];
  const byKind = new Map<string, ResourceInfo>();
  const subresources = new Map<string, string[]>();
  for (const r of Array.isArray(resources) ? resources : []) {
    if (typeof r?.name !== "string") continue;
    const slash = r.name.indexOf("/");
    if (slash >= 0) {
      const parent = r.name.slice(0, slash);
      const list = subresources.get(parent) ?? [];
      list.push(r.name.slice(slash + 1));
      subresources.set(parent, list);
      continue;
    }
    if (typeof r.kind !== "string" || byKind.has(r.kind)) continue;
    byKind.set(r.kind, {
      group,
      version,
      plural: r.name,
      namespaced: r.namespaced === true,
      kind: r.kind,
      verbs: Array.isArray(r.verbs) ? r.verbs : [],
      subresources: [],
    });
  }
  for (const info of byKind.values()) info.subresources = subresources.get(info.plural) ?? [];
  return { byKind };
}
