/**
 * The scale subresource of custom resources over HTTP: GET, PUT and patches of an
 * autoscaling/v1 Scale mapped onto the CRD's replicas paths, with preconditions,
 * validation, dry runs and field ownership.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiServer, startApiServer } from "../../src/apiserver/server/index.ts";
import { SqliteStore } from "../../src/storage/sqlite/index.ts";

const CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const WORKERS = "/apis/example.com/v1/namespaces/default/workers";

interface Reply {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are read freely
  body: any;
}

describe("the scale subresource", () => {
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
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };

  const until = async (what: string, check: () => Promise<boolean>, ms = 5000) => {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      if (await check()) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`timed out waiting for ${what}`);
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "setpoint-scale-"));
    store = SqliteStore.open(join(dir, "data.db"), { durable: false });
    server = await startApiServer({ store, port: 0 });
    await call("POST", "/api/v1/namespaces", {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "default" },
    });
    const crd = {
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "CustomResourceDefinition",
      metadata: { name: "workers.example.com" },
      spec: {
        group: "example.com",
        scope: "Namespaced",
        names: { plural: "workers", kind: "Worker" },
        versions: [
          {
            name: "v1",
            served: true,
            storage: true,
            subresources: {
              status: {},
              scale: {
                specReplicasPath: ".spec.replicas",
                statusReplicasPath: ".status.replicas",
                labelSelectorPath: ".status.selector",
              },
            },
            schema: {
              openAPIV3Schema: {
                type: "object",
                properties: {
                  spec: {
                    type: "object",
                    properties: { replicas: { type: "integer", maximum: 10 } },
                  },
                  status: {
                    type: "object",
                    properties: {
                      replicas: { type: "integer" },
                      selector: { type: "string" },
                    },
                  },
                },
              },
            },
          },
        ],
      },
    };
    expect((await call("POST", CRDS, crd)).status).toBe(201);
    await until("workers served", async () => (await call("GET", WORKERS)).status === 200);
    for (const [name, spec] of [
      ["w", { replicas: 2 }],
      ["empty", {}],
    ] as const) {
      const r = await call("POST", WORKERS, {
        apiVersion: "example.com/v1",
        kind: "Worker",
        metadata: { name },
        spec,
      });
      expect(r.status).toBe(201);
    }
    const st = await call(
      "PATCH",
      `${WORKERS}/w/status`,
      { status: { replicas: 2, selector: "app=w" } },
      "application/merge-patch+json",
    );
    expect(st.status).toBe(200);
  });

  afterAll(async () => {
    await server?.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("reads the Scale from the object's paths", async () => {
    const obj = (await call("GET", `${WORKERS}/w`)).body;
    const got = await call("GET", `${WORKERS}/w/scale`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual({
      kind: "Scale",
      apiVersion: "autoscaling/v1",
      metadata: {
        name: "w",
        namespace: "default",
        uid: obj.metadata.uid,
        resourceVersion: obj.metadata.resourceVersion,
        creationTimestamp: obj.metadata.creationTimestamp,
      },
      spec: { replicas: 2 },
      status: { replicas: 2, selector: "app=w" },
    });
    const missing = await call("GET", `${WORKERS}/empty/scale`);
    expect(missing.status).toBe(500);
    expect(missing.body.message).toContain(
      'the spec replicas field ".spec.replicas" does not exist',
    );
    expect((await call("GET", `${WORKERS}/nothere/scale`)).status).toBe(404);
  });

  it("writes replicas through PUT, merge and JSON patches", async () => {
    const scale = (await call("GET", `${WORKERS}/w/scale`)).body;
    const put = await call("PUT", `${WORKERS}/w/scale`, { ...scale, spec: { replicas: 3 } });
    expect(put.status).toBe(200);
    expect(put.body.spec.replicas).toBe(3);
    expect(put.body.metadata.resourceVersion).not.toBe(scale.metadata.resourceVersion);
    const merged = await call(
      "PATCH",
      `${WORKERS}/w/scale`,
      { spec: { replicas: 4 } },
      "application/merge-patch+json",
    );
    expect(merged.status).toBe(200);
    const json = await call(
      "PATCH",
      `${WORKERS}/w/scale`,
      [{ op: "replace", path: "/spec/replicas", value: 5 }],
      "application/json-patch+json",
    );
    expect(json.status).toBe(200);
    const obj = (await call("GET", `${WORKERS}/w`)).body;
    expect(obj.spec.replicas).toBe(5);
    expect(obj.metadata.generation).toBe(4);
    const owner = obj.metadata.managedFields.find(
      (e: { subresource?: string }) => e.subresource === "scale",
    );
    expect(owner).toMatchObject({
      operation: "Update",
      fieldsV1: { "f:spec": { "f:replicas": {} } },
    });
    // An object without replicas gets them.
    const set = await call(
      "PATCH",
      `${WORKERS}/empty/scale`,
      { spec: { replicas: 1 } },
      "application/merge-patch+json",
    );
    expect(set.status).toBe(200);
    expect((await call("GET", `${WORKERS}/empty`)).body.spec).toEqual({ replicas: 1 });
  });

  it("refuses stale preconditions, bad replicas and what the object's schema refuses", async () => {
    const scale = (await call("GET", `${WORKERS}/w/scale`)).body;
    const stale = await call("PUT", `${WORKERS}/w/scale`, {
      ...scale,
      metadata: { ...scale.metadata, resourceVersion: "1" },
      spec: { replicas: 1 },
    });
    expect(stale.status).toBe(409);
    const negative = await call("PUT", `${WORKERS}/w/scale`, { ...scale, spec: { replicas: -1 } });
    expect(negative.status).toBe(422);
    expect(negative.body.message).toContain(
      "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
    );
    const tooMany = await call(
      "PATCH",
      `${WORKERS}/w/scale`,
      { spec: { replicas: 11 } },
      "application/merge-patch+json",
    );
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.message).toContain(
      "spec.replicas in body should be less than or equal to 10",
    );
    const dry = await call("PUT", `${WORKERS}/w/scale?dryRun=All`, {
      ...scale,
      spec: { replicas: 7 },
    });
    expect(dry.status).toBe(200);
    expect(dry.body.spec.replicas).toBe(7);
    expect((await call("GET", `${WORKERS}/w/scale`)).body).toEqual(scale);
    const apply = await call(
      "PATCH",
      `${WORKERS}/w/scale?fieldManager=x`,
      { spec: { replicas: 1 } },
      "application/apply-patch+yaml",
    );
    expect(apply.status).toBe(415);
  });
});
