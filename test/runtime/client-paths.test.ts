import { beforeAll, describe, expect, it } from "vitest";
import type { KubeObject } from "../../packages/api/src/meta.ts";
import { Client } from "../../packages/runtime/src/client/client.ts";
import { preferredResources } from "../../packages/runtime/src/client/discovery.ts";
import { isConflict, isNotFound } from "../../packages/runtime/src/client/errors.ts";
import { installCrd } from "../../src/testenv/testenv.ts";
import { schemalessCrd } from "../helpers/crd.ts";
import { forward, type Listening, listenHttp } from "../helpers/http-proxy.ts";
import { eventually } from "../helpers/poll.ts";
import { startForFile, startTestServer } from "../helpers/test-server.ts";

const CM = { apiVersion: "v1", kind: "ConfigMap" };
const NS = { apiVersion: "v1", kind: "Namespace" };
const WORKER = { apiVersion: "example.com/v1", kind: "Worker" };

const WORKERS_CRD = schemalessCrd("workers", "Worker", {
  shortNames: ["wk"],
  subresources: {
    status: {},
    scale: { specReplicasPath: ".spec.replicas", statusReplicasPath: ".status.replicas" },
  },
});

const env = startForFile(startTestServer);

beforeAll(async () => {
  await env.client.create({ ...NS, metadata: { name: "paths" } });
});

describe("raw requests", () => {
  it("answers any path with status, headers, text and JSON, counted as raw", async () => {
    const c = env.newClient();
    const version = await c.raw("GET", "/version");
    expect(version.status).toBe(200);
    expect(String(version.headers["content-type"])).toContain("application/json");
    expect((version.json as { gitVersion?: string }).gitVersion).toMatch(/^v1\.\d+/);

    const ready = await c.raw("GET", "/readyz?verbose", { accept: "text/plain" });
    expect(ready.status).toBe(200);
    expect(ready.text).toMatch(/ok/);
    expect(ready.json).toBeUndefined();

    // A non-2xx answer is returned, not thrown.
    const missing = await c.raw("GET", "/api/v1/namespaces/paths/configmaps/nope");
    expect(missing.status).toBe(404);
    expect(missing.json).toMatchObject({ kind: "Status", reason: "NotFound", code: 404 });

    // A query given apart is merged with the path's own.
    await c.create({ ...CM, metadata: { name: "q", namespace: "paths", labels: { a: "b" } } });
    const listed = await c.raw("GET", "/api/v1/namespaces/paths/configmaps?limit=5", {
      query: { labelSelector: "a=b" },
    });
    expect((listed.json as { items: KubeObject[] }).items.map((o) => o.metadata.name)).toEqual([
      "q",
    ]);
    expect(c.stats.byVerb.raw).toBe(4);
  });

  it("sends the client's credentials over https", async () => {
    const secure = await startTestServer({ tls: true });
    try {
      const ok = await secure.newClient().raw("GET", "/apis");
      expect(ok.status).toBe(200);
      expect((ok.json as { kind?: string }).kind).toBe("APIGroupList");
      const anon = await secure.newClient({ token: undefined }).raw("GET", "/apis");
      expect(anon.status).toBe(401);
    } finally {
      await secure.stop();
    }
  });
});

describe("deleteCollection", () => {
  it("deletes what the selectors pick in one request, and nothing else", async () => {
    await env.client.create({ ...NS, metadata: { name: "dc" } });
    for (let i = 0; i < 6; i++) {
      await env.client.create({
        ...CM,
        metadata: { name: `c${i}`, namespace: "dc", labels: { keep: i < 2 ? "yes" : "no" } },
      });
    }
    await env.client.create({ ...CM, metadata: { name: "elsewhere", namespace: "paths" } });
    const c = env.newClient();
    await c.deleteCollection(CM, { namespace: "dc", labelSelector: "keep=no" });
    expect(c.stats.byVerb).toMatchObject({ deletecollection: 1 });
    const left = await env.client.list(CM, { namespace: "dc" });
    expect(left.items.map((o) => o.metadata.name).sort()).toEqual(["c0", "c1"]);
    await c.deleteCollection(CM, { namespace: "dc", fieldSelector: "metadata.name=c0" });
    expect(
      (await env.client.list(CM, { namespace: "dc" })).items.map((o) => o.metadata.name),
    ).toEqual(["c1"]);
    await env.client.get(CM, "elsewhere", "paths");
  });
});

describe("subresources", () => {
  it("reads and replaces status, and finalizes a Namespace through /finalize", async () => {
    await env.client.create({ ...NS, metadata: { name: "fin" } });
    const status = await env.client.get<KubeObject>(NS, "fin", undefined, {
      subresource: "status",
    });
    expect(status.metadata.name).toBe("fin");
    await env.client.delete(NS, "fin");
    const terminating = await env.client.get<KubeObject>(NS, "fin");
    expect(terminating.metadata.deletionTimestamp).toBeTruthy();
    expect((terminating.spec as { finalizers?: string[] }).finalizers).toEqual(["kubernetes"]);
    // A stale resourceVersion is refused as on any update.
    const stale = await env.client
      .update(
        { ...terminating, metadata: { ...terminating.metadata, resourceVersion: "1" }, spec: {} },
        { subresource: "finalize" },
      )
      .catch((e: unknown) => e);
    expect(isConflict(stale)).toBe(true);
    await env.client.update(
      { ...terminating, spec: { finalizers: [] } },
      { subresource: "finalize" },
    );
    await eventually(
      async () => isNotFound(await env.client.get(NS, "fin").catch((e: unknown) => e)),
      "namespace gone once finalized",
    );
  });

  it("reads, replaces and patches a Scale on a custom resource's scale subresource", async () => {
    await installCrd(env.client, WORKERS_CRD);
    await env.client.create({
      ...WORKER,
      metadata: { name: "w", namespace: "paths" },
      spec: { replicas: 2 },
    });
    const scale = await env.client.get<KubeObject & { spec: { replicas: number } }>(
      WORKER,
      "w",
      "paths",
      { subresource: "scale" },
    );
    expect(scale).toMatchObject({
      apiVersion: "autoscaling/v1",
      kind: "Scale",
      spec: { replicas: 2 },
    });
    const put = await env.client.update(
      { ...scale, spec: { replicas: 5 } },
      { subresource: "scale", parentType: WORKER },
    );
    expect(put.kind).toBe("Scale");
    expect((await env.client.get<KubeObject>(WORKER, "w", "paths")).spec).toEqual({ replicas: 5 });
    await env.client.patch(
      WORKER,
      "w",
      "paths",
      { spec: { replicas: 3 } },
      {
        type: "merge",
        subresource: "scale",
      },
    );
    expect((await env.client.get<KubeObject>(WORKER, "w", "paths")).spec).toEqual({ replicas: 3 });
  });
});

describe("serverResources", () => {
  it("lists every served resource with verbs, scope and subresources, custom ones included", async () => {
    await installCrd(env.client, WORKERS_CRD).catch(() => undefined); // installed by the test above, or now
    const c = env.newClient();
    const found = await c.serverResources();
    // Aggregated discovery: two requests for everything.
    expect(c.stats.byVerb).toEqual({ discovery: 2 });
    expect(found.failed.size).toBe(0);
    expect(found.unparsed).toEqual([]);
    const byName = new Map(found.resources.map((r) => [`${r.plural}.${r.apiVersion}`, r]));
    expect(byName.get("configmaps.v1")).toMatchObject({
      group: "",
      version: "v1",
      kind: "ConfigMap",
      namespaced: true,
      singular: "configmap",
    });
    expect(byName.get("configmaps.v1")?.verbs).toEqual(
      expect.arrayContaining(["get", "list", "watch", "delete", "deletecollection"]),
    );
    expect(byName.get("namespaces.v1")).toMatchObject({ namespaced: false });
    expect(byName.get("namespaces.v1")?.subresources).toEqual(
      expect.arrayContaining(["finalize", "status"]),
    );
    expect(byName.get("workers.example.com/v1")).toMatchObject({
      kind: "Worker",
      shortNames: ["wk"],
      subresources: ["scale", "status"],
    });
    // One entry per group and resource once reduced to the preferred versions.
    const preferred = preferredResources(found.resources);
    const names = preferred.map((r) => `${r.plural}.${r.group}`);
    expect(new Set(names).size).toBe(names.length);
    // The pass primed the kind cache: typed calls need no further discovery.
    await c.get(WORKER, "w", "paths").catch(() => undefined);
    await c.list({ apiVersion: "coordination.k8s.io/v1", kind: "Lease" });
    expect(c.stats.byVerb.discovery).toBe(2);
  });
});

/**
 * A proxy that makes the server look like one without aggregated discovery (it
 * asks upstream for the legacy documents only) and whose `failing`
 * group-version answers 503, as an unavailable aggregated API does.
 */
async function legacyDiscoveryProxy(target: string, failing: string): Promise<Listening> {
  const upstream = new URL(target);
  return listenHttp((req, res) => {
    if (req.url === failing) {
      res.writeHead(503, { "content-type": "text/plain" }).end("service unavailable");
      return;
    }
    forward(req, res, upstream, { headers: { ...req.headers, accept: "application/json" } });
  });
}

describe("serverResources from legacy discovery", () => {
  it("reads each group-version, reports the ones that fail and keeps the rest", async () => {
    await installCrd(env.client, WORKERS_CRD).catch(() => undefined);
    const proxy = await legacyDiscoveryProxy(env.url, "/apis/example.com/v1");
    const c = new Client({ server: proxy.url });
    try {
      const found = await c.serverResources();
      expect([...found.failed.keys()]).toEqual(["example.com/v1"]);
      expect(found.failed.get("example.com/v1")).toMatch(/503/);
      const names = found.resources.map((r) => `${r.plural}.${r.apiVersion}`);
      expect(names).toContain("configmaps.v1");
      expect(names).toContain("leases.coordination.k8s.io/v1");
      expect(names.some((n) => n.startsWith("workers."))).toBe(false);
      // Subresources ("namespaces/status") are attached to their resource, not listed apart.
      expect(found.resources.filter((r) => r.plural.includes("/"))).toEqual([]);
      const ns = found.resources.find((r) => r.plural === "namespaces");
      expect(ns?.subresources).toEqual(expect.arrayContaining(["finalize", "status"]));
      // /api, /apis and one request per group-version.
      expect(c.stats.byVerb.discovery).toBeGreaterThan(3);
    } finally {
      c.close();
      await proxy.close();
    }
  });
});
