import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  aggregatedDiscovery,
  aggregatedDiscoveryContentType,
  apiGroup,
  apiGroupList,
  apiResourceList,
  apiVersions,
  negotiateAggregatedDiscovery,
  storageVersionHash,
} from "../../src/apiserver/discovery/index.ts";
import { configMapDefinition } from "../../src/registry/builtin/index.ts";
import {
  createBuiltinRegistry,
  type Registry,
  type ResourceDefinition,
} from "../../src/registry/index.ts";
import { startTypeServer, type TypeServer } from "./type-server.ts";

// biome-ignore lint/suspicious/noExplicitAny: discovery documents are plain JSON under test
type Json = any;

const V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
const V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

function widgets(): ResourceDefinition {
  const version = (name: string, served: boolean, storage: boolean) => ({
    name,
    served,
    storage,
    schema: { type: "object" as const },
    statusSubresource: true,
    scale: { specReplicasPath: ".spec.replicas", statusReplicasPath: ".status.replicas" },
    printerColumns: [],
  });
  return {
    group: "example.com",
    names: {
      plural: "widgets",
      singular: "widget",
      kind: "Widget",
      listKind: "WidgetList",
      shortNames: ["wd"],
      categories: ["all"],
    },
    namespaced: true,
    custom: true,
    typed: false,
    strategy: { allowUnconditionalUpdate: false, tracksGeneration: true },
    versions: [
      version("v1", true, true),
      version("v1beta1", true, false),
      version("v2", false, false),
    ],
  };
}

describe("negotiateAggregatedDiscovery", () => {
  it("picks v2 or v2beta1 exactly, in preference order", () => {
    expect(negotiateAggregatedDiscovery(`${V2},application/json`)).toBe("v2");
    expect(negotiateAggregatedDiscovery(`${V2BETA1},application/json`)).toBe("v2beta1");
    expect(negotiateAggregatedDiscovery(`${V2},${V2BETA1},application/json`)).toBe("v2");
    expect(negotiateAggregatedDiscovery(`${V2BETA1},${V2}`)).toBe("v2beta1");
  });

  it("does not take v2 for a prefix of another version", () => {
    expect(
      negotiateAggregatedDiscovery(
        "application/json;g=apidiscovery.k8s.io;v=v2beta2;as=APIGroupDiscoveryList",
      ),
    ).toBeUndefined();
    expect(
      negotiateAggregatedDiscovery(
        "application/json;g=apidiscovery.k8s.io;v=v2x;as=APIGroupDiscoveryList",
      ),
    ).toBeUndefined();
    expect(
      negotiateAggregatedDiscovery(
        "application/json;g=apidiscovery.k8s.io;v=v;as=APIGroupDiscoveryList",
      ),
    ).toBeUndefined();
  });

  it("accepts parameters in any order, quoted values, spaces and extra parameters", () => {
    expect(
      negotiateAggregatedDiscovery(
        "application/json;as=APIGroupDiscoveryList;v=v2;g=apidiscovery.k8s.io",
      ),
    ).toBe("v2");
    expect(
      negotiateAggregatedDiscovery(
        'application/json ; V="v2beta1" ; g=apidiscovery.k8s.io ; as=APIGroupDiscoveryList',
      ),
    ).toBe("v2beta1");
    expect(negotiateAggregatedDiscovery(`${V2};profile=nopeer,${V2},application/json`)).toBe("v2");
  });

  it("respects q-values and skips refused (q=0) and non-JSON ranges", () => {
    expect(negotiateAggregatedDiscovery(`${V2};q=0.5,${V2BETA1};q=0.9`)).toBe("v2beta1");
    expect(negotiateAggregatedDiscovery(`${V2};q=0,application/json`)).toBeUndefined();
    expect(
      negotiateAggregatedDiscovery(
        `application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,${V2BETA1}`,
      ),
    ).toBe("v2beta1");
    expect(negotiateAggregatedDiscovery(`application/json,${V2}`)).toBe("v2");
  });

  it("answers the legacy document without an aggregated range", () => {
    expect(negotiateAggregatedDiscovery(undefined)).toBeUndefined();
    expect(negotiateAggregatedDiscovery("")).toBeUndefined();
    expect(negotiateAggregatedDiscovery("application/json")).toBeUndefined();
    expect(negotiateAggregatedDiscovery("*/*")).toBeUndefined();
    expect(
      negotiateAggregatedDiscovery("application/json;as=Table;g=meta.k8s.io;v=v1"),
    ).toBeUndefined();
    expect(
      negotiateAggregatedDiscovery("application/json;g=other.io;v=v2;as=APIGroupDiscoveryList"),
    ).toBeUndefined();
  });

  it("names the exact content type", () => {
    expect(aggregatedDiscoveryContentType("v2")).toBe(V2);
    expect(aggregatedDiscoveryContentType("v2beta1")).toBe(V2BETA1);
  });
});

describe("aggregated discovery", () => {
  const reg = createBuiltinRegistry();
  reg.add(widgets());

  it("lists the core group alone under /api", () => {
    const doc: Json = aggregatedDiscovery(reg, "api", "v2");
    expect(doc.kind).toBe("APIGroupDiscoveryList");
    expect(doc.apiVersion).toBe("apidiscovery.k8s.io/v2");
    expect(doc.items).toHaveLength(1);
    const [core] = doc.items;
    expect(core.metadata.name).toBeUndefined();
    expect(core.versions.map((v: Json) => v.version)).toEqual(["v1"]);
    const resources = core.versions[0].resources;
    expect(resources.map((r: Json) => r.resource).sort()).toEqual([
      "configmaps",
      "endpoints",
      "events",
      "namespaces",
      "nodes",
      "persistentvolumeclaims",
      "persistentvolumes",
      "pods",
      "podtemplates",
      "replicationcontrollers",
      "secrets",
      "serviceaccounts",
      "services",
    ]);
    const cm = resources.find((r: Json) => r.resource === "configmaps");
    expect(cm).toMatchObject({
      responseKind: { group: "", version: "v1", kind: "ConfigMap" },
      scope: "Namespaced",
      singularResource: "configmap",
      shortNames: ["cm"],
      verbs: ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
    });
    const ns = resources.find((r: Json) => r.resource === "namespaces");
    expect(ns.scope).toBe("Cluster");
    expect(ns.shortNames).toEqual(["ns"]);
    expect(ns.verbs).not.toContain("deletecollection");
    expect(ns.subresources).toEqual([
      {
        subresource: "finalize",
        responseKind: { group: "", version: "v1", kind: "Namespace" },
        verbs: ["update"],
      },
      {
        subresource: "status",
        responseKind: { group: "", version: "v1", kind: "Namespace" },
        verbs: ["get", "patch", "update"],
      },
    ]);
    expect(core.versions[0].freshness).toBe("Current");
  });

  it("lists every other group under /apis, served versions by priority, with subresources", () => {
    const doc: Json = aggregatedDiscovery(reg, "apis", "v2beta1");
    expect(doc.apiVersion).toBe("apidiscovery.k8s.io/v2beta1");
    expect(doc.items.map((g: Json) => g.metadata.name)).toEqual([
      "apps",
      "events.k8s.io",
      "authentication.k8s.io",
      "authorization.k8s.io",
      "batch",
      "networking.k8s.io",
      "policy",
      "rbac.authorization.k8s.io",
      "admissionregistration.k8s.io",
      "coordination.k8s.io",
      "discovery.k8s.io",
      "example.com",
    ]);
    const ex = doc.items[11];
    expect(ex.versions.map((v: Json) => v.version)).toEqual(["v1", "v1beta1"]);
    const w = ex.versions[0].resources[0];
    expect(w.categories).toEqual(["all"]);
    expect(w.subresources.map((s: Json) => s.subresource)).toEqual(["scale", "status"]);
    expect(w.subresources[0].responseKind).toEqual({
      group: "autoscaling",
      version: "v1",
      kind: "Scale",
    });
    const ev = doc.items[1].versions[0].resources[0];
    expect(ev).toMatchObject({ resource: "events", shortNames: ["ev"], singularResource: "event" });
  });
});

describe("legacy discovery", () => {
  const reg = createBuiltinRegistry();
  reg.add(widgets());

  it("serves /api, /apis and /apis/<g>", () => {
    expect(apiVersions()).toMatchObject({ kind: "APIVersions", versions: ["v1"] });
    const list: Json = apiGroupList(reg);
    expect(list.kind).toBe("APIGroupList");
    expect(list.groups.map((g: Json) => g.name)).toEqual([
      "apps",
      "events.k8s.io",
      "authentication.k8s.io",
      "authorization.k8s.io",
      "batch",
      "networking.k8s.io",
      "policy",
      "rbac.authorization.k8s.io",
      "admissionregistration.k8s.io",
      "coordination.k8s.io",
      "discovery.k8s.io",
      "example.com",
    ]);
    const ex = list.groups[11];
    expect(ex.versions).toEqual([
      { groupVersion: "example.com/v1", version: "v1" },
      { groupVersion: "example.com/v1beta1", version: "v1beta1" },
    ]);
    expect(ex.preferredVersion).toEqual({ groupVersion: "example.com/v1", version: "v1" });
    expect(apiGroup(reg, "coordination.k8s.io")).toMatchObject({
      kind: "APIGroup",
      name: "coordination.k8s.io",
    });
    expect(apiGroup(reg, "nope.io")).toBeUndefined();
    expect(apiGroup(reg, "")).toBeUndefined();
  });

  it("serves resource lists with subresources and storage version hashes", () => {
    const core: Json = apiResourceList(reg, "", "v1");
    expect(core.groupVersion).toBe("v1");
    const names = core.resources.map((r: Json) => r.name);
    expect(names).toEqual(
      expect.arrayContaining([
        "namespaces",
        "namespaces/status",
        "namespaces/finalize",
        "configmaps",
      ]),
    );
    const cm = core.resources.find((r: Json) => r.name === "configmaps");
    // Kubernetes' published hash for configmaps (sha256 of "/v1/ConfigMap").
    expect(cm.storageVersionHash).toBe("qFsyl6wFWjQ=");
    expect(storageVersionHash(configMapDefinition)).toBe("qFsyl6wFWjQ=");
    expect(cm).toMatchObject({
      singularName: "configmap",
      namespaced: true,
      kind: "ConfigMap",
      shortNames: ["cm"],
    });
    const scale = (apiResourceList(reg, "example.com", "v1") as Json).resources.find(
      (r: Json) => r.name === "widgets/scale",
    );
    expect(scale).toMatchObject({
      group: "autoscaling",
      version: "v1",
      kind: "Scale",
      verbs: ["get", "patch", "update"],
    });
    expect(apiResourceList(reg, "example.com", "v2")).toBeUndefined();
    expect(apiResourceList(reg, "", "v2")).toBeUndefined();
  });
});

describe("kubectl reads discovery", () => {
  let reg: Registry;
  const servers: TypeServer[] = [];
  beforeAll(() => {
    reg = createBuiltinRegistry();
    reg.add(widgets());
  });
  afterAll(async () => {
    for (const s of servers) await s.close();
  });

  for (const minor of [28, 33]) {
    it(`kubectl 1.${minor} api-resources lists every resource with its short names`, async () => {
      const s = await startTypeServer(reg, { minor });
      servers.push(s);
      const r = await s.kubectl(["api-resources", "--no-headers"]);
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      const lines = r.stdout
        .trim()
        .split("\n")
        .map((l) => l.split(/\s+/));
      const find = (name: string, group: string) =>
        lines.find((l) => l[0] === name && l.some((c) => c === group));
      expect(find("configmaps", "v1")).toEqual(["configmaps", "cm", "v1", "true", "ConfigMap"]);
      expect(find("namespaces", "v1")).toEqual(["namespaces", "ns", "v1", "false", "Namespace"]);
      expect(find("leases", "coordination.k8s.io/v1")).toEqual([
        "leases",
        "coordination.k8s.io/v1",
        "true",
        "Lease",
      ]);
      expect(find("widgets", "example.com/v1")).toEqual([
        "widgets",
        "wd",
        "example.com/v1",
        "true",
        "Widget",
      ]);
      const discovery = s.reads.filter((x) => x.path === "/api" || x.path === "/apis");
      expect(discovery.length).toBeGreaterThan(0);
      for (const d of discovery) expect(d.contentType).toMatch(/as=APIGroupDiscoveryList/);
    });
  }
});
