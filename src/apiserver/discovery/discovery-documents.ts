/**
 * Discovery documents, as pure functions of a Registry: the aggregated form
 * (apidiscovery.k8s.io APIGroupDiscoveryList, v2 and v2beta1) and the legacy
 * /api, /api/v1, /apis, /apis/<g>, /apis/<g>/<v> documents.
 */
import { createHash } from "node:crypto";
import { apiVersionOf } from "@setpoint/api";
import type { Registry } from "../../registry/registry.ts";
import {
  type ResourceDefinition,
  resourceVerbs,
  storageVersion,
  type VersionDefinition,
} from "../../registry/types.ts";
import { coversJson, parseAcceptRanges } from "../wire/media-range.ts";

export type DiscoveryVersion = "v2" | "v2beta1";

/** The group, kind and media type of aggregated discovery. */
const DISCOVERY_GROUP = "apidiscovery.k8s.io";
const DISCOVERY_KIND = "APIGroupDiscoveryList";

/** Verbs of the status and scale subresources. */
const SUBRESOURCE_VERBS = ["get", "patch", "update"];

/**
 * Which aggregated discovery version the Accept header asks for, if any: the
 * first range (by q, then order) covering `application/json` with
 * g=apidiscovery.k8s.io, as=APIGroupDiscoveryList and v=v2 or v=v2beta1 (compared
 * exactly), other parameters (profile=nopeer, ...) ignored. As in Kubernetes,
 * ranges that do not ask for aggregated discovery are skipped, so
 * "application/json, <aggregated>" still gets it. undefined means: answer with the
 * legacy document.
 */
export function negotiateAggregatedDiscovery(
  accept: string | undefined,
): DiscoveryVersion | undefined {
  for (const range of parseAcceptRanges(accept)) {
    if (!coversJson(range)) continue;
    const p = range.params;
    if (p.g !== DISCOVERY_GROUP || p.as !== DISCOVERY_KIND) continue;
    if (p.v === "v2" || p.v === "v2beta1") return p.v;
  }
  return undefined;
}

/** The exact Content-Type of an aggregated discovery response. */
export function aggregatedDiscoveryContentType(v: DiscoveryVersion): string {
  return `application/json;g=${DISCOVERY_GROUP};v=${v};as=${DISCOVERY_KIND}`;
}

/** Kubernetes' storageVersionHash: base64 of the first 8 bytes of sha256("group/version/Kind"). */
export function storageVersionHash(def: ResourceDefinition): string {
  const v = storageVersion(def);
  const gvk = `${def.group}/${v.name}/${def.names.kind}`;
  return createHash("sha256").update(gvk).digest().subarray(0, 8).toString("base64");
}

interface Subresource {
  name: string;
  verbs: string[];
  responseKind: { group: string; version: string; kind: string };
}

function subresources(def: ResourceDefinition, version: VersionDefinition): Subresource[] {
  const self = { group: def.group, version: version.name, kind: def.names.kind };
  const out: Subresource[] = [];
  for (const extra of def.subresources ?? []) {
    out.push({ name: extra.name, verbs: [...extra.verbs], responseKind: self });
  }
  for (const streamed of def.nodeStreamSubresources ?? []) {
    out.push({ name: streamed.name, verbs: ["get"], responseKind: self });
  }
  for (const connect of def.nodeConnectSubresources ?? []) {
    out.push({
      name: connect.name,
      verbs: ["create", "get"],
      responseKind: { group: def.group, version: version.name, kind: connect.optionsKind },
    });
  }
  for (const creates of def.createSubresources ?? []) {
    const kind = creates.kind;
    out.push({
      name: creates.name,
      verbs: ["create"],
      responseKind: {
        group: kind.group,
        version: storageVersion(kind).name,
        kind: kind.names.kind,
      },
    });
  }
  if (version.scale) {
    out.push({
      name: "scale",
      verbs: [...SUBRESOURCE_VERBS],
      responseKind: { group: "autoscaling", version: "v1", kind: "Scale" },
    });
  }
  if (version.statusSubresource) {
    out.push({ name: "status", verbs: [...SUBRESOURCE_VERBS], responseKind: self });
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

function resourceEntry(def: ResourceDefinition, version: VersionDefinition): object {
  const r: Record<string, unknown> = {
    resource: def.names.plural,
    responseKind: { group: def.group, version: version.name, kind: def.names.kind },
    scope: def.namespaced ? "Namespaced" : "Cluster",
    singularResource: def.names.singular,
    verbs: [...resourceVerbs(def)],
  };
  if (def.names.shortNames.length) r.shortNames = [...def.names.shortNames];
  if (def.names.categories.length) r.categories = [...def.names.categories];
  const subs = subresources(def, version);
  if (subs.length) {
    r.subresources = subs.map((s) => ({
      subresource: s.name,
      responseKind: s.responseKind,
      verbs: s.verbs,
    }));
  }
  return r;
}

function groupDiscovery(reg: Registry, group: string, versions: string[]): object {
  const metadata: Record<string, unknown> = { creationTimestamp: null };
  if (group !== "") metadata.name = group;
  return {
    metadata,
    versions: versions.map((v) => ({
      version: v,
      resources: reg
        .inGroupVersion(group, v)
        .map(({ def, version }) => resourceEntry(def, version)),
      freshness: "Current",
    })),
  };
}

/** APIGroupDiscoveryList for /api (the core group) or /apis (every other group). */
export function aggregatedDiscovery(
  reg: Registry,
  scope: "api" | "apis",
  v: DiscoveryVersion,
): object {
  const items = reg
    .groups()
    .filter((g) => (scope === "api" ? g.group === "" : g.group !== ""))
    .map((g) => groupDiscovery(reg, g.group, g.versions));
  return {
    kind: DISCOVERY_KIND,
    apiVersion: `${DISCOVERY_GROUP}/${v}`,
    metadata: {},
    items,
  };
}

/** GET /api: the core group's versions. */
export function apiVersions(): object {
  return {
    kind: "APIVersions",
    versions: ["v1"],
    serverAddressByClientCIDRs: [],
  };
}

function groupVersionForDiscovery(group: string, version: string) {
  return { groupVersion: apiVersionOf(group, version), version };
}

function apiGroupDocument(g: { group: string; versions: string[]; preferred: string }): object {
  return {
    name: g.group,
    versions: g.versions.map((v) => groupVersionForDiscovery(g.group, v)),
    preferredVersion: groupVersionForDiscovery(g.group, g.preferred),
  };
}

/** GET /apis: every named group with its versions and preferred version. */
export function apiGroupList(reg: Registry): object {
  return {
    kind: "APIGroupList",
    apiVersion: "v1",
    groups: reg
      .groups()
      .filter((g) => g.group !== "")
      .map(apiGroupDocument),
  };
}

/** GET /apis/<group>; undefined if the group is not served. */
export function apiGroup(reg: Registry, group: string): object | undefined {
  if (group === "") return undefined;
  const g = reg.groups().find((x) => x.group === group);
  if (!g) return undefined;
  return { kind: "APIGroup", apiVersion: "v1", ...apiGroupDocument(g) };
}

/** GET /api/v1 or /apis/<g>/<v>; undefined if that group-version is not served. */
export function apiResourceList(reg: Registry, group: string, version: string): object | undefined {
  const served = reg.inGroupVersion(group, version);
  if (served.length === 0) return undefined;
  const resources: object[] = [];
  for (const { def, version: v } of served) {
    const entry: Record<string, unknown> = {
      name: def.names.plural,
      singularName: def.names.singular,
      namespaced: def.namespaced,
      kind: def.names.kind,
      verbs: [...resourceVerbs(def)],
    };
    if (def.names.shortNames.length) entry.shortNames = [...def.names.shortNames];
    if (def.names.categories.length) entry.categories = [...def.names.categories];
    entry.storageVersionHash = storageVersionHash(def);
    resources.push(entry);
    for (const s of subresources(def, v)) {
      const sub: Record<string, unknown> = {
        name: `${def.names.plural}/${s.name}`,
        singularName: "",
        namespaced: def.namespaced,
        kind: s.responseKind.kind,
        verbs: s.verbs,
      };
      if (s.responseKind.group !== def.group || s.responseKind.version !== v.name) {
        sub.group = s.responseKind.group;
        sub.version = s.responseKind.version;
      }
      resources.push(sub);
    }
  }
  return {
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: apiVersionOf(group, version),
    resources,
  };
}
