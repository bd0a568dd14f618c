/**
 * Bad input around custom resources and server-side apply, over HTTP: invalid
 * CRDs are refused whole (422 with causes, nothing served), CEL rules are bounded
 * by cost (statically when the CRD is written, at run time per object), and
 * objects or apply configurations that are too deep or too big are refused before
 * the per-field work (field management, validation) runs, with 400/422, never a
 * 500 or a crash.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiServer, startApiServer } from "../../src/apiserver/server/index.ts";
import { MAX_OBJECT_DEPTH, MAX_OBJECT_NODES } from "../../src/registry/index.ts";
import { SqliteStore } from "../../src/storage/sqlite/index.ts";

const CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const BLOBS = "/apis/example.com/v1/namespaces/default/blobs";
const APPLY = "application/apply-patch+yaml";

interface Reply {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are read freely
  body: any;
}

function crd(
  plural: string,
  kind: string,
  spec: Record<string, unknown>,
  name = `${plural}.example.com`,
) {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name },
    spec: {
      group: "example.com",
      scope: "Namespaced",
      names: { plural, kind },
      versions: [
        {
          name: "v1",
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: "object", properties: { spec } } },
        },
      ],
    },
  };
}

/** `{x: {x: ... {x: 1}}}`, `depth` objects deep. */
function nest(depth: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = { x: v };
  return v;
}

describe("bad input for custom resources and apply", () => {
  let dir: string;
  let store: SqliteStore;
  let server: ApiServer;

  const call = async (
    method: string,
    path: string,
    body?: unknown,
    contentType = "application/json",
  ): Promise<Reply> => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": contentType },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON
    }
    return { status: res.status, body: parsed };
  };

  const until = async (what: string, check: () => Promise<boolean>, ms = 5000) => {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      if (await check()) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`timed out waiting for ${what}`);
  };

  /** 422 with causes; the CRD is neither stored nor served. */
  const refused = async (body: ReturnType<typeof crd>, plural: string) => {
    const res = await call("POST", CRDS, body);
    expect(res.status).toBe(422);
    expect(res.body.reason).toBe("Invalid");
    expect(res.body.details.causes.length).toBeGreaterThan(0);
    expect((await call("GET", `${CRDS}/${body.metadata.name}`)).status).toBe(404);
    expect((await call("GET", `/apis/example.com/v1/namespaces/default/${plural}`)).status).toBe(
      404,
    );
    return res.body as {
      message: string;
      details: { causes: { field: string; message: string }[] };
    };
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "setpoint-crd-badinput-"));
    store = SqliteStore.open(join(dir, "data.db"), { durable: false });
    server = await startApiServer({ store, port: 0 });
    const ns = await call("POST", "/api/v1/namespaces", {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "default" },
    });
    expect(ns.status).toBe(201);
    const blobs = crd("blobs", "Blob", {
      type: "object",
      "x-kubernetes-preserve-unknown-fields": true,
    });
    expect((await call("POST", CRDS, blobs)).status).toBe(201);
    await until("blobs served", async () => (await call("GET", BLOBS)).status === 200);
  });

  afterAll(async () => {
    await server?.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("refuses a non-structural schema with the field named", async () => {
    const body = await refused(
      crd("shapes", "Shape", { properties: { size: { type: "integer" } } }),
      "shapes",
    );
    expect(body.details.causes.map((c) => c.field)).toContain(
      "spec.validation.openAPIV3Schema.properties[spec].type",
    );
  });

  it("refuses a CEL rule that does not compile, with the compile error", async () => {
    const body = await refused(
      crd("rules", "Rule", {
        type: "object",
        properties: { size: { type: "integer" } },
        "x-kubernetes-validations": [{ rule: "self.size >" }],
      }),
      "rules",
    );
    const cause = body.details.causes.find((c) =>
      c.field.endsWith("x-kubernetes-validations[0].rule"),
    );
    expect(cause?.field).toBe(
      "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule",
    );
    expect(cause?.message).toMatch(/compilation failed/);
  });

  it("refuses names that do not fit together", async () => {
    const body = await refused(
      crd("tools", "Tool", { type: "object" }, "gadgets.example.com"),
      "tools",
    );
    expect(body.details.causes.map((c) => c.field)).toContain("metadata.name");
  });

  it("refuses a CEL rule whose estimated cost is over the limit", async () => {
    const body = await refused(
      crd("lists", "List", {
        type: "object",
        properties: { l: { type: "array", items: { type: "string" } } },
        "x-kubernetes-validations": [
          { rule: "self.l.all(x, self.l.all(y, self.l.all(z, x + y + z != '')))" },
        ],
      }),
      "lists",
    );
    expect(body.message).toMatch(/estimated rule cost exceeds budget/);
  });

  it("cuts off a rule that runs past its cost limit with a clear error", async () => {
    // Within the static estimate (maxItems bounds it), past the per-call limit at run time.
    const grids = crd("grids", "Grid", {
      type: "object",
      properties: { l: { type: "array", maxItems: 100, items: { type: "integer" } } },
      "x-kubernetes-validations": [
        { rule: "self.l.all(x, self.l.all(y, self.l.all(z, x + y + z >= 0)))" },
      ],
    });
    expect((await call("POST", CRDS, grids)).status).toBe(201);
    const path = "/apis/example.com/v1/namespaces/default/grids";
    await until("grids served", async () => (await call("GET", path)).status === 200);
    const small = await call("POST", path, {
      apiVersion: "example.com/v1",
      kind: "Grid",
      metadata: { name: "small" },
      spec: { l: [1, 2, 3] },
    });
    expect(small.status).toBe(201);
    const t0 = Date.now();
    const big = await call("POST", path, {
      apiVersion: "example.com/v1",
      kind: "Grid",
      metadata: { name: "big" },
      spec: { l: Array.from({ length: 100 }, (_, i) => i) },
    });
    expect(big.status).toBe(422);
    expect(big.body.message).toContain("validation rule exceeded its cost budget");
    expect(big.body.details.causes[0].field).toBe("spec");
    // Cut off, not run to the end (a full run is 100^3 evaluations of the body).
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it("refuses a body nested too deeply with 400", async () => {
    const deep = await call("POST", BLOBS, {
      apiVersion: "example.com/v1",
      kind: "Blob",
      metadata: { name: "deep" },
      spec: nest(150),
    });
    expect(deep.status).toBe(400);
    expect(deep.body.message).toMatch(/nested deeper than/);
    const applied = await call(
      "PATCH",
      `${BLOBS}/deep?fieldManager=m`,
      { apiVersion: "example.com/v1", kind: "Blob", metadata: { name: "deep" }, spec: nest(150) },
      APPLY,
    );
    expect(applied.status).toBe(400);
    // YAML nested by indentation, and in flow style, deep enough to exhaust a recursive parser.
    const lines = ["apiVersion: example.com/v1", "kind: Blob", "metadata: {name: deep}", "spec:"];
    for (let i = 1; i <= 1500; i++) lines.push(`${" ".repeat(i)}x:`);
    const head = "apiVersion: example.com/v1\nkind: Blob\nmetadata: {name: deep}\n";
    for (const text of [
      `${lines.join("\n")} 1\n`,
      `${head}spec: ${"{x: ".repeat(20000)}1${"}".repeat(20000)}\n`,
    ]) {
      const yaml = await call("PATCH", `${BLOBS}/deep?fieldManager=m`, text, APPLY);
      expect(yaml.status).toBe(400);
      expect(yaml.body.message).toMatch(/nested deeper than/);
    }
    expect((await call("GET", `${BLOBS}/deep`)).status).toBe(404);
  });

  it("refuses a patch that makes an object too deep before tracking its fields (422, not 500)", async () => {
    const created = await call("POST", BLOBS, {
      apiVersion: "example.com/v1",
      kind: "Blob",
      metadata: { name: "growing" },
      spec: { a: nest(90) },
    });
    expect(created.status).toBe(201);
    // Each copy puts the whole tree under its own deepest object: the depth doubles.
    const ops: unknown[] = [];
    let rel = "/x".repeat(89);
    for (let i = 0; i < 6; i++) {
      ops.push({ op: "copy", from: "/spec/a", path: `/spec/a${rel}/b` });
      rel = `${rel}/b${rel}`;
    }
    const res = await call("PATCH", `${BLOBS}/growing`, ops, "application/json-patch+json");
    expect(res.status).toBe(422);
    expect(res.body.message).toContain(
      `the object is nested deeper than ${MAX_OBJECT_DEPTH} levels, the most the server validates`,
    );
    const got = await call("GET", `${BLOBS}/growing`);
    expect(got.body.metadata.resourceVersion).toBe(created.body.metadata.resourceVersion);
  });

  it("refuses apply configurations with too many values before applying them", async () => {
    const values = Array.from({ length: MAX_OBJECT_NODES + 10 }, () => 0);
    const t0 = Date.now();
    const json = await call(
      "PATCH",
      `${BLOBS}/huge?fieldManager=m`,
      { apiVersion: "example.com/v1", kind: "Blob", metadata: { name: "huge" }, spec: { values } },
      APPLY,
    );
    expect(json.status).toBe(422);
    expect(json.body.message).toContain(`more than ${MAX_OBJECT_NODES} values`);
    const created = await call("POST", BLOBS, {
      apiVersion: "example.com/v1",
      kind: "Blob",
      metadata: { name: "huge" },
      spec: { values },
    });
    expect(created.status).toBe(422);
    expect(created.body.message).toContain(`more than ${MAX_OBJECT_NODES} values`);
    const cm = await call(
      "PATCH",
      "/api/v1/namespaces/default/configmaps/huge?fieldManager=m",
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "huge" }, binaryData: { values } },
      APPLY,
    );
    expect(cm.status).toBe(422);
    const yaml = await call(
      "PATCH",
      `${BLOBS}/huge?fieldManager=m`,
      `apiVersion: example.com/v1\nkind: Blob\nmetadata: {name: huge}\nspec:\n  values:\n${"  - 0\n".repeat(MAX_OBJECT_NODES + 10)}`,
      APPLY,
    );
    expect(yaml.status).toBe(400);
    expect(yaml.body.message).toContain("values, the most the server decodes");
    // Refused on counting, not after parsing and walking everything.
    expect(Date.now() - t0).toBeLessThan(5000);
    expect((await call("GET", `${BLOBS}/huge`)).status).toBe(404);
    expect((await call("GET", BLOBS)).status).toBe(200);
  });
});
