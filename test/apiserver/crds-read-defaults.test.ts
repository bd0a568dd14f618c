/**
 * Defaults a CRD's schema gains after objects were stored are applied when the
 * objects are read (get, list from storage and from the watch cache, watch), as
 * Kubernetes applies them when decoding from storage, without being written back.
 */
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiServer, startApiServer } from "../../src/apiserver/server/index.ts";
import { SqliteStore } from "../../src/storage/sqlite/index.ts";

const CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const GADGETS = "/apis/example.com/v1/namespaces/default/gadgets";

interface Reply {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are read freely
  body: any;
}

function gadgetCrd(specProps: Record<string, unknown>) {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "gadgets.example.com" },
    spec: {
      group: "example.com",
      scope: "Namespaced",
      names: { plural: "gadgets", kind: "Gadget" },
      versions: [
        {
          name: "v1",
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: "object",
              properties: { spec: { type: "object", properties: specProps } },
            },
          },
        },
      ],
    },
  };
}

/** Reads watch events from a streaming response until `count` arrived or `ms` passed. */
function watchEvents(
  url: string,
  count: number,
  ms = 3000,
): Promise<{ type: string; object: Record<string, unknown> }[]> {
  return new Promise((resolve, reject) => {
    const events: { type: string; object: Record<string, unknown> }[] = [];
    let buf = "";
    const req = http.get(url, (res) => {
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        buf += chunk;
        let nl = buf.indexOf("\n");
        while (nl >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          if (line.trim()) events.push(JSON.parse(line));
          nl = buf.indexOf("\n");
        }
        if (events.length >= count) {
          req.destroy();
          resolve(events);
        }
      });
      res.on("end", () => resolve(events));
    });
    req.on("error", (err) => {
      if (events.length >= count) return;
      reject(err);
    });
    setTimeout(() => {
      req.destroy();
      resolve(events);
    }, ms).unref();
  });
}

describe("custom resources read with their current defaults", () => {
  let dir: string;
  let store: SqliteStore;
  let server: ApiServer;

  const call = async (method: string, path: string, body?: unknown): Promise<Reply> => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
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

  const stored = async (name: string) => {
    const kv = await store.get(`/registry/example.com/gadgets/default/${name}`);
    return JSON.parse(kv!.value);
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "setpoint-read-defaults-"));
    store = SqliteStore.open(join(dir, "data.db"), { durable: false });
    server = await startApiServer({ store, port: 0 });
    expect(
      (
        await call("POST", "/api/v1/namespaces", {
          apiVersion: "v1",
          kind: "Namespace",
          metadata: { name: "default" },
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await call(
          "POST",
          CRDS,
          gadgetCrd({ size: { type: "integer" }, color: { type: "string" } }),
        )
      ).status,
    ).toBe(201);
    await until("gadgets served", async () => (await call("GET", GADGETS)).status === 200);
    for (const [name, spec] of [
      ["plain", { size: 1 }],
      ["colored", { size: 2, color: "red" }],
    ] as const) {
      const r = await call("POST", GADGETS, {
        apiVersion: "example.com/v1",
        kind: "Gadget",
        metadata: { name },
        spec,
      });
      expect(r.status).toBe(201);
    }
  });

  afterAll(async () => {
    await server?.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("applies a default added later on get, list, list rv=0 and watch", async () => {
    const before = await call("GET", `${GADGETS}/plain`);
    expect(before.body.spec).toEqual({ size: 1 });
    const rvBefore = before.body.metadata.resourceVersion;

    const crd = (await call("GET", `${CRDS}/gadgets.example.com`)).body;
    const spec = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec;
    spec.properties.color.default = "blue";
    spec.properties.shape = {
      type: "object",
      default: {},
      properties: { sides: { type: "integer", default: 4 } },
    };
    expect((await call("PUT", `${CRDS}/gadgets.example.com`, crd)).status).toBe(200);

    const want = { size: 1, color: "blue", shape: { sides: 4 } };
    await until("get from storage defaulted", async () => {
      const r = await call("GET", `${GADGETS}/plain`);
      return r.body.spec?.color === "blue";
    });
    const got = await call("GET", `${GADGETS}/plain`);
    expect(got.body.spec).toEqual(want);
    // Read, not written back: same resourceVersion, and storage still holds the old object.
    expect(got.body.metadata.resourceVersion).toBe(rvBefore);
    expect((await stored("plain")).spec).toEqual({ size: 1 });
    // A value set by the client is kept.
    expect((await call("GET", `${GADGETS}/colored`)).body.spec).toEqual({
      size: 2,
      color: "red",
      shape: { sides: 4 },
    });

    const list = await call("GET", GADGETS);
    expect(list.body.items.map((o: { spec: unknown }) => o.spec)).toEqual([
      { size: 2, color: "red", shape: { sides: 4 } },
      want,
    ]);

    // The watch cache reads its objects again once the definition changed.
    await until("list rv=0 defaulted", async () => {
      const r = await call("GET", `${GADGETS}?resourceVersion=0`);
      return r.body.items?.every((o: { spec: { color?: string } }) => o.spec.color !== undefined);
    });
    const cached = await call("GET", `${GADGETS}?resourceVersion=0`);
    expect(cached.body.items.map((o: { spec: unknown }) => o.spec)).toEqual(
      list.body.items.map((o: { spec: unknown }) => o.spec),
    );
    const cachedOne = await call("GET", `${GADGETS}/plain?resourceVersion=0`);
    expect(cachedOne.body.spec).toEqual(want);

    // Watch: initial events, then a change event, all defaulted.
    const events = watchEvents(`${server.url}${GADGETS}?watch=true`, 3);
    await new Promise((r) => setTimeout(r, 200));
    // A write through the storage alone (as an older server would have left it).
    const kv = await store.get("/registry/example.com/gadgets/default/plain");
    const raw = JSON.parse(kv!.value);
    raw.metadata.labels = { touched: "yes" };
    await store.update(kv!.key, JSON.stringify(raw), kv!.modRevision);
    const seen = await events;
    expect(seen.map((e) => e.type)).toEqual(["ADDED", "ADDED", "MODIFIED"]);
    for (const e of seen) expect((e.object.spec as { color?: string }).color).toBeDefined();
    expect(seen[2].object.spec).toEqual(want);
    expect((seen[2].object.metadata as { labels: unknown }).labels).toEqual({ touched: "yes" });
  });

  it("keeps a stored object unwritten when an update changes nothing but defaults", async () => {
    const got = await call("GET", `${GADGETS}/colored`);
    const put = await call("PUT", `${GADGETS}/colored`, got.body);
    expect(put.status).toBe(200);
    expect(put.body.metadata.resourceVersion).toBe(got.body.metadata.resourceVersion);
    expect(put.body.metadata.generation).toBe(got.body.metadata.generation);
  });

  it("stops defaulting what the schema no longer defaults", async () => {
    const crd = (await call("GET", `${CRDS}/gadgets.example.com`)).body;
    const spec = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec;
    delete spec.properties.color.default;
    expect((await call("PUT", `${CRDS}/gadgets.example.com`, crd)).status).toBe(200);
    await until("default gone from get", async () => {
      const r = await call("GET", `${GADGETS}/plain`);
      return r.body.spec.color === undefined;
    });
    await until("default gone from the watch cache", async () => {
      const r = await call("GET", `${GADGETS}/plain?resourceVersion=0`);
      return r.body.spec.color === undefined;
    });
    expect((await call("GET", `${GADGETS}/plain?resourceVersion=0`)).body.spec).toEqual({
      size: 1,
      shape: { sides: 4 },
    });
  });
});
