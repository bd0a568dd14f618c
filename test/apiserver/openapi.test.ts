import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import protobuf from "protobufjs";
import { afterAll, describe, expect, it } from "vitest";
import {
  openapiV2Protobuf,
  openapiV3Document,
  openapiV3DocumentJson,
  openapiV3Hash,
  openapiV3Index,
} from "../../src/apiserver/discovery/index.ts";
import {
  createBuiltinRegistry,
  Registry,
  type ResourceDefinition,
} from "../../src/registry/index.ts";
import { startTypeServer, type TypeServer } from "./type-server.ts";

// biome-ignore lint/suspicious/noExplicitAny: OpenAPI documents are plain JSON under test
type Json = any;

function widgets(): ResourceDefinition {
  return {
    group: "example.com",
    names: {
      plural: "widgets",
      singular: "widget",
      kind: "Widget",
      listKind: "WidgetList",
      shortNames: ["wd"],
      categories: [],
    },
    namespaced: true,
    custom: true,
    typed: false,
    strategy: { allowUnconditionalUpdate: false, tracksGeneration: true },
    versions: [
      {
        name: "v1",
        served: true,
        storage: true,
        statusSubresource: true,
        scale: { specReplicasPath: ".spec.replicas", statusReplicasPath: ".status.replicas" },
        printerColumns: [],
        schema: {
          type: "object",
          description: "A widget.",
          properties: {
            apiVersion: { type: "string" },
            kind: { type: "string" },
            metadata: { type: "object" },
            spec: {
              type: "object",
              description: "What the widget should be.",
              required: ["size"],
              properties: {
                size: { type: "integer", description: "How big the widget is." },
                ports: {
                  type: "array",
                  description: "Ports, keyed by name.",
                  "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["name"],
                  items: {
                    type: "object",
                    properties: { name: { type: "string" }, port: { type: "integer" } },
                  },
                },
              },
            },
            status: { type: "object", properties: { replicas: { type: "integer" } } },
          },
        },
      },
      {
        name: "v1alpha1",
        served: false,
        storage: false,
        statusSubresource: false,
        printerColumns: [],
        schema: { type: "object" },
      },
    ],
  };
}

/** Every $ref in a JSON tree. */
function refs(v: unknown, out: string[] = []): string[] {
  if (Array.isArray(v)) for (const x of v) refs(x, out);
  else if (v && typeof v === "object") {
    for (const [k, x] of Object.entries(v)) {
      if (k === "$ref" && typeof x === "string") out.push(x);
      else refs(x, out);
    }
  }
  return out;
}

const METHODS = ["get", "put", "post", "patch", "delete"];

describe("openapiV3Index", () => {
  it("lists every served group-version with a hash-pinned URL", () => {
    const reg = createBuiltinRegistry();
    reg.add(widgets());
    const index: Json = openapiV3Index(reg);
    expect(Object.keys(index.paths).sort()).toEqual(
      reg
        .groups()
        .flatMap((g) => g.versions.map((v) => (g.group ? `apis/${g.group}/${v}` : `api/${v}`)))
        .sort(),
    );
    expect(Object.keys(index.paths)).toEqual(
      expect.arrayContaining([
        "api/v1",
        "apis/coordination.k8s.io/v1",
        "apis/events.k8s.io/v1",
        "apis/example.com/v1",
      ]),
    );
    expect(index.paths["apis/example.com/v1alpha1"]).toBeUndefined();
    const hash = openapiV3Hash(reg, "", "v1");
    expect(hash).toMatch(/^[0-9A-F]{128}$/);
    expect(index.paths["api/v1"].serverRelativeURL).toBe(`/openapi/v3/api/v1?hash=${hash}`);
  });

  it("changes a document's hash when its types change, and only then", () => {
    const reg = createBuiltinRegistry();
    const before = openapiV3Hash(reg, "coordination.k8s.io", "v1");
    const coreBefore = openapiV3Hash(reg, "", "v1");
    expect(openapiV3Hash(reg, "example.com", "v1")).toBe("");
    reg.add(widgets());
    expect(openapiV3Hash(reg, "example.com", "v1")).toMatch(/^[0-9A-F]+$/);
    expect(openapiV3Hash(reg, "coordination.k8s.io", "v1")).toBe(before);
    expect(openapiV3Hash(reg, "", "v1")).toBe(coreBefore);
    const changed = widgets();
    changed.versions[0].schema.description = "Another widget.";
    const h1 = openapiV3Hash(reg, "example.com", "v1");
    reg.add(changed);
    expect(openapiV3Hash(reg, "example.com", "v1")).not.toBe(h1);
    reg.remove("example.com", "widgets");
    expect(openapiV3Document(reg, "example.com", "v1")).toBeUndefined();
  });
});

describe("openapiV3Document", () => {
  const reg = createBuiltinRegistry();
  reg.add(widgets());

  it("has paths for every resource and verb, each with its action and GVK", () => {
    for (const def of reg.all()) {
      if (def.review) continue; // create only: below
      for (const version of def.versions.filter((v) => v.served)) {
        const doc: Json = openapiV3Document(reg, def.group, version.name);
        const prefix = def.group ? `/apis/${def.group}/${version.name}` : `/api/${version.name}`;
        const coll = def.namespaced
          ? `${prefix}/namespaces/{namespace}/${def.names.plural}`
          : `${prefix}/${def.names.plural}`;
        const gvk = { group: def.group, version: version.name, kind: def.names.kind };
        expect(doc.paths[coll].get["x-kubernetes-action"]).toBe("list");
        expect(doc.paths[coll].post["x-kubernetes-action"]).toBe("post");
        expect(doc.paths[`${coll}/{name}`].get["x-kubernetes-action"]).toBe("get");
        expect(doc.paths[`${coll}/{name}`].put["x-kubernetes-action"]).toBe("put");
        expect(doc.paths[`${coll}/{name}`].patch["x-kubernetes-action"]).toBe("patch");
        expect(doc.paths[`${coll}/{name}`].delete["x-kubernetes-action"]).toBe("delete");
        expect(Boolean(doc.paths[coll].delete)).toBe(def.names.plural !== "namespaces");
        let checked = 0;
        for (const [path, item] of Object.entries<Json>(doc.paths)) {
          const own = new RegExp(`/${def.names.plural}(/\\{name\\}(/(status|finalize))?)?$`);
          if (!own.test(path)) continue;
          for (const m of METHODS) {
            if (!item[m]) continue;
            expect(item[m]["x-kubernetes-group-version-kind"], `${m} ${path}`).toEqual(gvk);
            expect(item[m].operationId).toMatch(/^[a-z][A-Za-z0-9]+$/);
            checked++;
          }
        }
        expect(checked).toBeGreaterThanOrEqual(def.names.plural === "namespaces" ? 8 : 7);
        const patch = doc.paths[`${coll}/{name}`].patch;
        const params = patch.parameters.map((p: Json) => `${p.in}:${p.name}`);
        expect(params).toEqual(
          expect.arrayContaining([
            "query:fieldValidation",
            "query:fieldManager",
            "query:dryRun",
            "query:force",
          ]),
        );
        const types = Object.keys(patch.requestBody.content);
        expect(types.includes("application/strategic-merge-patch+json")).toBe(!def.custom);
        expect(types).toEqual(
          expect.arrayContaining([
            "application/apply-patch+yaml",
            "application/merge-patch+json",
            "application/json-patch+json",
          ]),
        );
      }
    }
  });

  it("gives a review type only its create path", () => {
    const doc: Json = openapiV3Document(reg, "authorization.k8s.io", "v1");
    const coll = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    expect(Object.keys(doc.paths).filter((p) => p.includes("selfsubjectaccessreviews"))).toEqual([
      coll,
    ]);
    expect(Object.keys(doc.paths[coll]).filter((k) => METHODS.includes(k))).toEqual(["post"]);
    expect(doc.paths[coll].post["x-kubernetes-group-version-kind"]).toEqual({
      group: "authorization.k8s.io",
      version: "v1",
      kind: "SelfSubjectAccessReview",
    });
  });

  it("names schemas like Kubernetes, tags kinds with their GVK, and resolves every $ref", () => {
    const core: Json = openapiV3Document(reg, "", "v1");
    const schemas = core.components.schemas;
    for (const kind of ["ConfigMap", "Secret", "Namespace", "Event", "ServiceAccount"]) {
      expect(schemas[`io.k8s.api.core.v1.${kind}`]["x-kubernetes-group-version-kind"]).toEqual([
        { group: "", kind, version: "v1" },
      ]);
      expect(schemas[`io.k8s.api.core.v1.${kind}List`]["x-kubernetes-group-version-kind"]).toEqual([
        { group: "", kind: `${kind}List`, version: "v1" },
      ]);
    }
    const meta = schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"];
    expect(meta.properties.ownerReferences).toMatchObject({
      "x-kubernetes-patch-merge-key": "uid",
      "x-kubernetes-patch-strategy": "merge",
      "x-kubernetes-list-type": "map",
      "x-kubernetes-list-map-keys": ["uid"],
      items: {
        allOf: [
          { $ref: "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference" },
        ],
      },
    });
    expect(meta.properties.creationTimestamp.allOf[0].$ref).toBe(
      "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Time",
    );
    expect(schemas["io.k8s.api.core.v1.ConfigMap"].properties.metadata).toEqual({
      allOf: [{ $ref: "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" }],
      description: "Standard object's metadata.",
    });
    for (const [g, v] of [
      ["", "v1"],
      ["coordination.k8s.io", "v1"],
      ["events.k8s.io", "v1"],
      ["example.com", "v1"],
    ]) {
      const doc: Json = openapiV3Document(reg, g, v);
      for (const r of refs(doc)) {
        expect(r.startsWith("#/components/schemas/")).toBe(true);
        expect(doc.components.schemas[r.slice("#/components/schemas/".length)], r).toBeDefined();
      }
    }
    expect(
      Object.keys((openapiV3Document(reg, "coordination.k8s.io", "v1") as Json).components.schemas),
    ).toContain("io.k8s.api.coordination.v1.Lease");
    expect(
      Object.keys((openapiV3Document(reg, "events.k8s.io", "v1") as Json).components.schemas),
    ).toContain("io.k8s.api.events.v1.Event");
  });

  it("publishes custom resources under the reversed group with ObjectMeta and scale", () => {
    const doc: Json = openapiV3Document(reg, "example.com", "v1");
    const w = doc.components.schemas["com.example.v1.Widget"];
    expect(w["x-kubernetes-group-version-kind"]).toEqual([
      { group: "example.com", kind: "Widget", version: "v1" },
    ]);
    expect(w.properties.metadata.allOf[0].$ref).toBe(
      "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
    );
    expect(w.properties.spec.properties.ports["x-kubernetes-list-map-keys"]).toEqual(["name"]);
    expect(w.properties.kind.description).toMatch(/REST resource/);
    expect(doc.components.schemas["com.example.v1.WidgetList"]).toBeDefined();
    const scale = doc.paths["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/scale"];
    expect(scale.get["x-kubernetes-group-version-kind"]).toEqual({
      group: "autoscaling",
      version: "v1",
      kind: "Scale",
    });
    expect(
      doc.paths["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/status"].put,
    ).toBeDefined();
    expect(openapiV3DocumentJson(reg, "example.com", "v1")).toBe(JSON.stringify(doc));
  });

  it("serves a minimal protobuf OpenAPI v2 document", () => {
    const r = protobuf.Reader.create(openapiV2Protobuf());
    const fields: Record<number, string> = {};
    while (r.pos < r.len) {
      const tag = r.uint32();
      const bytes = r.bytes();
      fields[tag >>> 3] = Buffer.from(bytes).toString("latin1");
    }
    expect(fields[1]).toBe("2.0");
    expect(fields[2]).toContain("Kubernetes");
    expect(fields[8]).toBe("");
  });

  it("costs nothing to ask again: documents are cached per registry generation", () => {
    const r2 = new Registry();
    r2.add(widgets());
    const a = openapiV3Document(r2, "example.com", "v1");
    expect(openapiV3Document(r2, "example.com", "v1")).toBe(a);
  });
});

describe("kubectl reads OpenAPI v3", () => {
  const servers: TypeServer[] = [];
  const dir = mkdtempSync(join(tmpdir(), "setpoint-openapi-"));
  afterAll(async () => {
    for (const s of servers) await s.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const reg = createBuiltinRegistry();
  reg.add(widgets());
  const file = (name: string, text: string) => {
    const p = join(dir, name);
    writeFileSync(p, text);
    return p;
  };
  const cm1 = file(
    "cm1.yaml",
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c1\n  finalizers: [a.io/x]\ndata:\n  a: b\n",
  );
  const cm2 = file(
    "cm2.yaml",
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c1\n  finalizers: [a.io/y]\ndata:\n  a: c\n",
  );
  const w1 = file(
    "w1.yaml",
    "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 1\n",
  );
  const w2 = file(
    "w2.yaml",
    "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 2\n",
  );
  const bogus = file(
    "bogus.yaml",
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c2\nbogus: 1\n",
  );

  for (const minor of [28, 33]) {
    it(`kubectl 1.${minor}: explain, create -f and apply work from the documents`, async () => {
      const s = await startTypeServer(reg, {
        minor,
        onWrite: (r) => (r.method === "POST" ? { ...JSON.parse(r.body.toString()) } : undefined),
      });
      servers.push(s);
      const explain = await s.kubectl(["explain", "configmap"]);
      expect(explain.stderr).toBe("");
      expect(explain.stdout).toMatch(/^KIND:\s+ConfigMap/m);
      expect(explain.stdout).toMatch(/binaryData\s+<map\[string\]string>/);
      expect(explain.stdout).toMatch(/metadata\s+<ObjectMeta>/);
      const field = await s.kubectl(["explain", "namespace.metadata.ownerReferences"]);
      expect(field.stdout).toMatch(/FIELD: ownerReferences <\[\]OwnerReference>/);
      expect(field.stdout).toMatch(/uid\s+<string> -required-/);
      const lease = await s.kubectl(["explain", "leases.spec.renewTime"]);
      expect(lease.stdout).toMatch(/GROUP:\s+coordination\.k8s\.io/);
      expect(lease.stdout).toMatch(/renewTime <string>/);
      const widget = await s.kubectl(["explain", "widget.spec"]);
      expect(widget.stdout).toMatch(/size\s+<integer> -required-/);
      expect(widget.stdout).toMatch(/ports\s+<\[\]Object>/);

      const created = await s.kubectl(["create", "-f", bogus]);
      expect(created.code).toBe(0);
      expect(s.requests.at(-1)?.url).toContain("fieldValidation=Strict");

      for (const f of [cm1, cm2, w1, w2]) {
        const r = await s.kubectl(["apply", "-f", f]);
        expect(r.stderr, f).toBe("");
        expect(r.code).toBe(0);
      }
      const patches = s.requests.filter((r) => r.method === "PATCH");
      expect(patches.map((p) => p.contentType)).toEqual([
        "application/strategic-merge-patch+json",
        "application/merge-patch+json",
      ]);
      // The ConfigMap patch follows the schema: finalizers merge as a set ($setElementOrder/$deleteFromPrimitiveList).
      const smp = JSON.parse(patches[0].body.toString());
      expect(
        smp.metadata.$deleteFromPrimitiveList$finalizers ??
          smp.metadata["$deleteFromPrimitiveList/finalizers"],
      ).toEqual(["a.io/x"]);
    });
  }
});
