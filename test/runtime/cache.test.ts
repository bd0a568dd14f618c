import { pino } from "pino";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { KubeObject } from "../../packages/api/src/meta.ts";
import { CacheNotStartedError, InformerCache } from "../../packages/runtime/src/cache/cache.ts";
import { ApiError, isBadRequest, isNotFound } from "../../packages/runtime/src/client/errors.ts";
import { addWidgetType } from "../apiserver/harness.ts";
import { eventually, sleep } from "../helpers/poll.ts";
import { startForFile, startTestServer } from "../helpers/test-server.ts";

const CM = { apiVersion: "v1", kind: "ConfigMap" };
const NS = { apiVersion: "v1", kind: "Namespace" };
const WIDGET = { apiVersion: "example.com/v1", kind: "Widget" };

function cm(name: string, namespace: string, labels?: Record<string, string>): KubeObject {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace, labels }, data: {} };
}

const FAST = { backoffInitialMs: 20, backoffMaxMs: 200 };

const env = startForFile(startTestServer);
const stops: AbortController[] = [];

function started(cache: InformerCache): AbortController {
  const ac = new AbortController();
  stops.push(ac);
  cache.start(ac.signal);
  return ac;
}

beforeAll(async () => {
  for (const name of ["a", "b"]) {
    await env.client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
  }
  await env.client.create(cm("one", "a", { app: "web" }));
  await env.client.create(cm("two", "a", { app: "db" }));
  await env.client.create(cm("three", "b", { app: "web" }));
});
afterEach(() => {
  for (const ac of stops.splice(0)) ac.abort();
});

describe("InformerCache", () => {
  it("shares one informer per kind and scope, started lazily: one list and one watch per kind", async () => {
    const client = env.newClient();
    const cache = new InformerCache(client, { informerOptions: FAST });
    const first = cache.informerFor(CM);
    expect(cache.informerFor(CM)).toBe(first);
    expect(cache.informerFor(CM, { namespace: "a" })).not.toBe(first);
    expect(first.started).toBe(false);
    expect(client.stats.requests).toBe(0);

    started(cache);
    expect(first.started).toBe(true);
    // Two controllers reading the same kinds through the cache.
    const [a, b] = await Promise.all([cache.list(CM), cache.list(CM)]);
    expect(a.items.length).toBe(b.items.length);
    await cache.get(NS, "a");
    await cache.get(CM, "one", "a");
    const late = cache.informerFor(NS);
    expect(late.started).toBe(true);
    await cache.waitForSync();
    await eventually(() => cache.health().every((h) => h.watching), "every informer watching");
    // ConfigMap (all), ConfigMap (namespace a), Namespace: three lists, three watches.
    expect(client.stats.byVerb.list).toBe(3);
    expect(client.stats.byVerb.watch).toBe(3);
    expect(client.stats.byVerb.get).toBeUndefined();
    const health = cache.health();
    expect(health.map((h) => `${h.kind}:${h.scope.namespace ?? "*"}`).sort()).toEqual([
      "ConfigMap:*",
      "ConfigMap:a",
      "Namespace:*",
    ]);
    expect(health.every((h) => h.synced)).toBe(true);
  });

  it("reads through its informers like the client does: NotFound errors, selectors, frozen items", async () => {
    const cache = new InformerCache(env.newClient(), { informerOptions: FAST });
    await expect(cache.get(CM, "one", "a")).rejects.toBeInstanceOf(CacheNotStartedError);
    started(cache);
    const one = await cache.get(CM, "one", "a");
    expect(one.metadata.labels).toEqual({ app: "web" });
    expect(Object.isFrozen(one)).toBe(true);
    const missing = await cache.get(CM, "nope", "a").catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ApiError);
    expect(isNotFound(missing)).toBe(true);
    expect((missing as ApiError).message).toBe('configmaps "nope" not found');

    const web = await cache.list(CM, { labelSelector: "app=web" });
    expect(web.items.map((o) => `${o.metadata.namespace}/${o.metadata.name}`).sort()).toEqual([
      "a/one",
      "b/three",
    ]);
    const inA = await cache.list(CM, { namespace: "a" });
    expect(inA.items.map((o) => o.metadata.name).sort()).toEqual(["one", "two"]);
    const named = await cache.list(CM, { fieldSelector: "metadata.name=two" });
    expect(named.items.map((o) => o.metadata.name)).toEqual(["two"]);
    expect(Number(named.metadata.resourceVersion)).toBeGreaterThan(0);
    const unsupported = await cache
      .list(CM, { fieldSelector: "data.x=y" })
      .catch((e: unknown) => e);
    expect(isBadRequest(unsupported)).toBe(true);
    expect(cache.peek(CM, "two", "a")?.metadata.name).toBe("two");

    const meta = await cache.list(CM, { namespace: "b", metadataOnly: true });
    expect(meta.items.map((o) => Object.keys(o).sort().join())).toEqual([
      "apiVersion,kind,metadata",
    ]);
  });

  it("uses a kind's default scope, and waits for its own writes", async () => {
    const client = env.newClient();
    const cache = new InformerCache(client, {
      informerOptions: FAST,
      defaultScopes: { "v1/ConfigMap": { labelSelector: "app=web" } },
    });
    started(cache);
    const all = await cache.list(CM);
    expect(all.items.map((o) => o.metadata.name).sort()).toEqual(["one", "three"]);
    expect(cache.informerFor(CM)).toBe(cache.informerFor(CM, { labelSelector: "app=web" }));

    const written = await env.client.create(cm("fresh", "b", { app: "web" }));
    const rv = written.metadata.resourceVersion ?? "";
    expect(
      await cache.waitForResourceVersion(CM, { name: "fresh", namespace: "b" }, rv, 5_000),
    ).toBe(true);
    expect(cache.peek(CM, "fresh", "b")?.metadata.resourceVersion).toBe(rv);
  });

  it("lists from the informer of the scope it is given, metadata-only included", async () => {
    const client = env.newClient();
    const cache = new InformerCache(client, { informerOptions: FAST });
    started(cache);
    const inA = await cache.list(CM, { scope: { namespace: "a" } });
    expect(inA.items.map((o) => o.metadata.name).sort()).toEqual(["one", "two"]);
    // The namespace filter applies within what the scope holds.
    expect((await cache.list(CM, { scope: { namespace: "a" }, namespace: "b" })).items).toEqual([]);
    const meta = await cache.list(CM, {
      scope: { namespace: "a" },
      metadataOnly: true,
      labelSelector: "app=db",
    });
    expect(meta.items.map((o) => [o.metadata.name, Object.keys(o).sort().join()])).toEqual([
      ["two", "apiVersion,kind,metadata"],
    ]);
    expect(cache.health().map((h) => JSON.stringify(h.scope))).toEqual([
      '{"namespace":"a"}',
      '{"namespace":"a","metadataOnly":true}',
    ]);
    expect(client.stats.byVerb.list).toBe(2);
    // A scope object changed after use names the informer of what it now says.
    const scope: { namespace: string } = { namespace: "a" };
    expect(cache.informerFor(CM, scope)).toBe(cache.informerFor(CM, { namespace: "a" }));
    scope.namespace = "b";
    const inB = (await cache.list(CM, { scope })).items;
    expect(new Set(inB.map((o) => o.metadata.namespace))).toEqual(new Set(["b"]));
    expect(inB.map((o) => o.metadata.name)).toContain("three");
  });

  it("picks up a kind that the server starts serving after the cache started", async () => {
    const client = env.newClient();
    // Any pino logger will do.
    const cache = new InformerCache(client, {
      informerOptions: FAST,
      logger: pino({ level: "silent" }),
    });
    started(cache);
    const widgets = cache.informerFor(WIDGET);
    await eventually(
      () => widgets.health().failures >= 2,
      "the informer to retry the unknown kind",
    );
    expect(widgets.hasSynced()).toBe(false);
    expect(widgets.health().lastError).toMatch(/no matches for kind "Widget"/);

    addWidgetType(env.server.registry);
    await widgets.waitForSync();
    await env.client.create({
      apiVersion: "example.com/v1",
      kind: "Widget",
      metadata: { name: "w1", namespace: "a" },
      spec: { replicas: 1 },
    });
    const w = await eventually(() => widgets.get("w1", "a"), "the new widget in the cache");
    expect((w.spec as { color?: string }).color).toBe("blue");
    expect(widgets.health()).toMatchObject({ synced: true, failures: 0 });
  });
  it("stops and removes one informer, leaving the others; a later request starts afresh", async () => {
    const client = env.newClient();
    const cache = new InformerCache(client, { informerOptions: FAST });
    started(cache);
    const slim = (o: KubeObject): KubeObject => ({
      apiVersion: o.apiVersion,
      kind: o.kind,
      metadata: { name: o.metadata.name, namespace: o.metadata.namespace },
    });
    const full = cache.informerFor(CM);
    const reduced = cache.informerFor(CM, { transform: slim });
    // A different transform function is a different informer; the same one shares it.
    expect(reduced).not.toBe(full);
    expect(cache.informerFor(CM, { transform: slim })).toBe(reduced);
    await cache.waitForSync();
    expect(reduced.get("one", "a")?.metadata.labels).toBeUndefined();
    expect(full.get("one", "a")?.metadata.labels).toEqual({ app: "web" });

    await eventually(
      () => full.health().watching && reduced.health().watching,
      "both informers to watch",
    );
    const watchesBefore = client.stats.byVerb.watch ?? 0;
    const seen: string[] = [];
    reduced.addEventHandler({
      onAdd: (o, initial) => !initial && seen.push(o.metadata.name ?? ""),
    });
    expect(cache.removeInformer(CM, { transform: slim })).toBe(true);
    expect(cache.removeInformer(CM, { transform: slim })).toBe(false);
    expect(cache.health().map((h) => h.scope.transform)).toEqual([undefined]);
    await env.client.create(cm("after-removal", "a"));
    await eventually(
      () => full.get("after-removal", "a"),
      "the remaining informer to see the new object",
    );
    expect(seen).toEqual([]);
    expect(reduced.get("after-removal", "a")).toBeUndefined();
    // The removed informer's watch ended and was not resumed.
    await sleep(100);
    expect(reduced.health().watching).toBe(false);
    expect(client.stats.byVerb.watch ?? 0).toBe(watchesBefore);

    const again = cache.informerFor(CM, { transform: slim });
    expect(again).not.toBe(reduced);
    await again.waitForSync();
    expect(again.get("after-removal", "a")?.metadata.name).toBe("after-removal");
  });
});
