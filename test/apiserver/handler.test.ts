import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configMap, type Harness, startHarness } from "./harness.ts";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
  await h.namespace("ns1");
});
afterAll(async () => {
  await h.close();
});

describe("routing and ConfigMap basics", () => {
  it("creates, gets and lists a ConfigMap", async () => {
    const created = await h.post("/api/v1/namespaces/ns1/configmaps", configMap("a", { k: "v" }));
    expect(created.status).toBe(201);
    expect(created.body.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.body.metadata.namespace).toBe("ns1");
    expect(created.body.metadata.generation).toBeUndefined();
    expect(Number(created.body.metadata.resourceVersion)).toBeGreaterThan(0);
    expect(created.body.metadata.creationTimestamp).toMatch(/Z$/);

    const got = await h.get("/api/v1/namespaces/ns1/configmaps/a");
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual({ k: "v" });
    expect(got.body.metadata.resourceVersion).toBe(created.body.metadata.resourceVersion);

    const list = await h.get("/api/v1/namespaces/ns1/configmaps");
    expect(list.status).toBe(200);
    expect(list.body.kind).toBe("ConfigMapList");
    expect(list.body.items.map((i: { metadata: { name: string } }) => i.metadata.name)).toEqual([
      "a",
    ]);
    const all = await h.get("/api/v1/configmaps");
    expect(all.status).toBe(200);
    expect(all.body.items.length).toBe(1);
  });

  it("answers unknown paths and resources with a full NotFound Status", async () => {
    const r = await h.get("/api/v1/widgets");
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({
      kind: "Status",
      apiVersion: "v1",
      status: "Failure",
      reason: "NotFound",
      code: 404,
    });
    expect(r.body.details).toBeDefined();
    const missing = await h.get("/api/v1/namespaces/ns1/configmaps/nope");
    expect(missing.status).toBe(404);
    expect(missing.body.message).toBe('configmaps "nope" not found');
    expect(missing.body.details).toMatchObject({ name: "nope", kind: "configmaps" });
  });

  it("leaves paths outside /api, /apis and /openapi to the server", async () => {
    const r = await h.get("/healthz");
    expect(r.status).toBe(404);
    expect(r.text).toBe("404 page not found");
  });

  it("refuses methods a path does not serve with 405", async () => {
    const r = await h.request("POST", "/api/v1/namespaces/ns1/configmaps/a", {
      body: configMap("a"),
    });
    expect(r.status).toBe(405);
    expect(r.body.reason).toBe("MethodNotAllowed");
    const put = await h.put("/api/v1/namespaces/ns1/configmaps", configMap("a"));
    expect(put.status).toBe(405);
  });

  it("serves discovery and OpenAPI", async () => {
    const api = await h.get("/api");
    expect(api.status).toBe(200);
    expect(api.body.versions).toEqual(["v1"]);
    const v1 = await h.get("/api/v1");
    expect(v1.body.resources.some((r: { name: string }) => r.name === "configmaps")).toBe(true);
    const apis = await h.get("/apis");
    expect(apis.body.kind).toBe("APIGroupList");
    const agg = await h.get("/apis", {
      accept: "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
    });
    expect(agg.headers["content-type"]).toBe(
      "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
    );
    const index = await h.get("/openapi/v3");
    expect(index.status).toBe(200);
    const url = index.body.paths["api/v1"].serverRelativeURL as string;
    const doc = await h.get(url);
    expect(doc.status).toBe(200);
    expect(doc.body.components.schemas).toBeDefined();
    expect(doc.headers["cache-control"]).toContain("immutable");
    const missing = await h.get("/apis/nope.example.com/v1");
    expect(missing.status).toBe(404);
  });

  it("namespaced objects in a missing namespace are 404 namespace not found", async () => {
    const r = await h.post("/api/v1/namespaces/missing/configmaps", configMap("x"));
    expect(r.status).toBe(404);
    expect(r.body.message).toBe('namespaces "missing" not found');
    expect(r.body.details).toMatchObject({ name: "missing", kind: "namespaces" });
  });

  it("creates with generateName", async () => {
    const r = await h.post("/api/v1/namespaces/ns1/configmaps", {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { generateName: "gen-" },
    });
    expect(r.status).toBe(201);
    expect(r.body.metadata.name).toMatch(/^gen-[a-z0-9]{5}$/);
  });

  it("answers 409 AlreadyExists for a duplicate create", async () => {
    await h.post("/api/v1/namespaces/ns1/configmaps", configMap("dup"));
    const r = await h.post("/api/v1/namespaces/ns1/configmaps", configMap("dup"));
    expect(r.status).toBe(409);
    expect(r.body.reason).toBe("AlreadyExists");
    expect(r.body.message).toBe('configmaps "dup" already exists');
  });
});
