import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiServer, startApiServer } from "../../src/apiserver/server/index.ts";
import { SqliteStore } from "../../src/storage/sqlite/index.ts";

const CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const WEBAPPS = "/apis/example.com/v1/namespaces/default/webapps";

function webAppCrd(name = "webapps.example.com", names: Record<string, unknown> = {}) {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name },
    spec: {
      group: "example.com",
      scope: "Namespaced",
      names: {
        plural: "webapps",
        kind: "WebApp",
        shortNames: ["wa"],
        categories: ["all"],
        ...names,
      },
      versions: [
        {
          name: "v1",
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            { name: "Replicas", type: "integer", jsonPath: ".spec.replicas" },
          ],
          schema: {
            openAPIV3Schema: {
              type: "object",
              properties: {
                spec: {
                  type: "object",
                  required: ["image"],
                  "x-kubernetes-validations": [
                    {
                      rule: "self.replicas <= self.maxReplicas",
                      message: "replicas must be at most maxReplicas",
                    },
                  ],
                  properties: {
                    image: { type: "string" },
                    replicas: { type: "integer", default: 1 },
                    maxReplicas: { type: "integer", default: 5 },
                  },
                },
                status: { type: "object", properties: { ready: { type: "integer" } } },
              },
            },
          },
        },
      ],
    },
  };
}

interface Reply {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are read freely
  body: any;
}

describe("CustomResourceDefinitions over HTTP", () => {
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

  const until = async (what: string, check: () => Promise<boolean>, ms = 3000): Promise<void> => {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      if (await check()) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`timed out waiting for ${what}`);
  };

  const start = async () => {
    store = SqliteStore.open(join(dir, "data.db"), { durable: false });
    server = await startApiServer({ store, port: 0 });
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "setpoint-crds-"));
    await start();
    const ns = await call("POST", "/api/v1/namespaces", {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "default" },
    });
    expect([201, 409]).toContain(ns.status);
  });

  afterAll(async () => {
    await server?.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("serves a new CRD within a second and sets its conditions", async () => {
    const created = await call("POST", CRDS, webAppCrd());
    expect(created.status).toBe(201);
    expect(created.body.metadata.finalizers).toContain(
      "customresourcecleanup.apiextensions.k8s.io",
    );
    const t0 = Date.now();
    await until("webapps served", async () => (await call("GET", WEBAPPS)).status === 200);
    expect(Date.now() - t0).toBeLessThan(1000);
    await until("Established", async () => {
      const got = await call("GET", `${CRDS}/webapps.example.com`);
      return (got.body.status?.conditions ?? []).some(
        (c: { type: string; status: string }) => c.type === "Established" && c.status === "True",
      );
    });
    const got = await call("GET", `${CRDS}/webapps.example.com`);
    expect(got.body.status.acceptedNames).toMatchObject({
      plural: "webapps",
      kind: "WebApp",
      singular: "webapp",
      listKind: "WebAppList",
    });
    expect(
      got.body.status.conditions.find((c: { type: string }) => c.type === "NamesAccepted"),
    ).toMatchObject({
      status: "True",
      reason: "NoConflicts",
    });
    const discovery = await call("GET", "/apis/example.com/v1");
    expect(discovery.body.resources.map((r: { name: string }) => r.name)).toEqual(
      expect.arrayContaining(["webapps", "webapps/status"]),
    );
  });

  it("creates objects with defaults, and refuses schema and CEL violations with the field named", async () => {
    const ok = await call("POST", WEBAPPS, {
      apiVersion: "example.com/v1",
      kind: "WebApp",
      metadata: { name: "a" },
      spec: { image: "nginx" },
    });
    expect(ok.status).toBe(201);
    expect(ok.body.spec).toEqual({ image: "nginx", replicas: 1, maxReplicas: 5 });
    expect(ok.body.metadata.generation).toBe(1);

    const badType = await call("POST", WEBAPPS, {
      apiVersion: "example.com/v1",
      kind: "WebApp",
      metadata: { name: "b" },
      spec: { image: "x", replicas: "two" },
    });
    expect(badType.status).toBe(422);
    expect(badType.body.message).toContain(
      'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"',
    );

    const badRule = await call("POST", WEBAPPS, {
      apiVersion: "example.com/v1",
      kind: "WebApp",
      metadata: { name: "c" },
      spec: { image: "x", replicas: 9 },
    });
    expect(badRule.status).toBe(422);
    expect(badRule.body.message).toBe(
      'WebApp.example.com "c" is invalid: spec: Invalid value: "object": replicas must be at most maxReplicas',
    );
    expect(badRule.body.details.causes).toEqual([
      {
        reason: "FieldValueInvalid",
        message: 'Invalid value: "object": replicas must be at most maxReplicas',
        field: "spec",
      },
    ]);
  });

  it("patches status through /status, refuses strategic merge patch and unconditional updates", async () => {
    const got = await call("GET", `${WEBAPPS}/a`);
    const status = await call("PUT", `${WEBAPPS}/a/status`, { ...got.body, status: { ready: 1 } });
    expect(status.status).toBe(200);
    expect(status.body.status).toEqual({ ready: 1 });
    expect(status.body.metadata.generation).toBe(1);

    const smp = await call(
      "PATCH",
      `${WEBAPPS}/a`,
      { spec: { replicas: 2 } },
      "application/strategic-merge-patch+json",
    );
    expect(smp.status).toBe(415);

    const merge = await call(
      "PATCH",
      `${WEBAPPS}/a`,
      { spec: { replicas: 2 } },
      "application/merge-patch+json",
    );
    expect(merge.status).toBe(200);
    expect(merge.body.metadata.generation).toBe(2);

    const { resourceVersion: _rv, ...meta } = merge.body.metadata;
    const put = await call("PUT", `${WEBAPPS}/a`, { ...merge.body, metadata: meta });
    expect(put.status).toBe(422);
  });

  it("refuses an invalid CRD with causes and serves nothing", async () => {
    const bad = webAppCrd("things.example.com", {
      plural: "things",
      kind: "Thing",
      shortNames: [],
    });
    const schema = bad.spec.versions[0].schema.openAPIV3Schema as {
      properties: Record<string, Record<string, unknown>>;
    };
    delete schema.properties.spec.type;
    (schema.properties.spec["x-kubernetes-validations"] as { rule: string }[])[0].rule =
      "self.replicas <=";
    const res = await call("POST", CRDS, bad);
    expect(res.status).toBe(422);
    expect(res.body.details.causes.map((c: { field: string }) => c.field)).toContain(
      "spec.validation.openAPIV3Schema.properties[spec].type",
    );
    expect((await call("GET", "/apis/example.com/v1/namespaces/default/things")).status).toBe(404);
  });

  it("does not serve a CRD whose names clash, and says which name", async () => {
    const clash = webAppCrd("webapplications.example.com", {
      plural: "webapplications",
      kind: "WebApp",
      shortNames: [],
    });
    expect((await call("POST", CRDS, clash)).status).toBe(201);
    await until("NamesAccepted=False", async () => {
      const got = await call("GET", `${CRDS}/webapplications.example.com`);
      return (got.body.status?.conditions ?? []).some(
        (c: { type: string; status: string }) => c.type === "NamesAccepted" && c.status === "False",
      );
    });
    const got = await call("GET", `${CRDS}/webapplications.example.com`);
    expect(
      got.body.status.conditions.find((c: { type: string }) => c.type === "NamesAccepted"),
    ).toMatchObject({
      // Kind and list kind both clash: as in Kubernetes, the last checked names the reason.
      reason: "ListKindConflict",
      message: '"WebAppList" is already in use',
    });
    expect(
      (await call("GET", "/apis/example.com/v1/namespaces/default/webapplications")).status,
    ).toBe(404);
    expect((await call("DELETE", `${CRDS}/webapplications.example.com`)).status).toBe(200);
  });

  it("keeps serving after a restart", async () => {
    await server.close();
    await store.close();
    await start();
    const got = await call("GET", `${WEBAPPS}/a`);
    expect(got.status).toBe(200);
    expect(got.body.spec.image).toBe("nginx");
  });

  it("applies an updated schema to later writes", async () => {
    const crd = (await call("GET", `${CRDS}/webapps.example.com`)).body;
    const spec = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec;
    spec.properties.image.maxLength = 3;
    expect((await call("PUT", `${CRDS}/webapps.example.com`, crd)).status).toBe(200);
    await until("new schema served", async () => {
      const r = await call("POST", WEBAPPS, {
        apiVersion: "example.com/v1",
        kind: "WebApp",
        metadata: { name: "long" },
        spec: { image: "nginx" },
      });
      return (
        r.status === 422 &&
        r.body.message.includes("spec.image: Too long: may not be more than 3 bytes")
      );
    });
  });

  it("serves several versions from one storage version and hides unserved ones", async () => {
    const crd = (await call("GET", `${CRDS}/webapps.example.com`)).body;
    const v1 = crd.spec.versions[0];
    crd.spec.versions = [
      v1,
      { ...structuredClone(v1), name: "v2", storage: false },
      { ...structuredClone(v1), name: "v0", served: false, storage: false },
    ];
    expect((await call("PUT", `${CRDS}/webapps.example.com`, crd)).status).toBe(200);
    await until(
      "v2 served",
      async () =>
        (await call("GET", "/apis/example.com/v2/namespaces/default/webapps/a")).status === 200,
    );
    const viaV2 = await call("GET", "/apis/example.com/v2/namespaces/default/webapps/a");
    expect(viaV2.body.apiVersion).toBe("example.com/v2");
    const group = await call("GET", "/apis/example.com");
    expect(group.body.versions.map((v: { version: string }) => v.version).sort()).toEqual([
      "v1",
      "v2",
    ]);
    expect((await call("GET", "/apis/example.com/v0/namespaces/default/webapps")).status).toBe(404);
  });

  it("deletes a CRD's objects, then the CRD, then stops serving", async () => {
    const del = await call("DELETE", `${CRDS}/webapps.example.com`);
    expect(del.status).toBe(200);
    await until(
      "CRD gone",
      async () => (await call("GET", `${CRDS}/webapps.example.com`)).status === 404,
      5000,
    );
    expect((await call("GET", WEBAPPS)).status).toBe(404);
    const left = await store.list("/registry/example.com/webapps/", {});
    expect(left.items).toEqual([]);
  });
});
