import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configMap, type Harness, openWatch, startHarness } from "./harness.ts";

let h: Harness;
const P = "/api/v1/namespaces/w/configmaps";

beforeAll(async () => {
  h = await startHarness({ limits: { bookmarkIntervalMs: 200 } });
  await h.namespace("w");
});
afterAll(async () => {
  await h.close();
});

describe("watch", () => {
  it("starts with the current state as ADDED, then streams changes, with headers flushed at once", async () => {
    await h.post(P, configMap("pre1"));
    const w = await openWatch(h, `${P}?watch=true`);
    expect(w.status).toBe(200);
    expect(w.headers["content-type"]).toBe("application/json");
    expect(w.headers["transfer-encoding"]).toBe("chunked");
    await w.waitForCount(1);
    expect(w.events[0]).toMatchObject({ type: "ADDED", object: { metadata: { name: "pre1" } } });
    const c = await h.post(P, configMap("live1", { a: "1" }));
    const u = await h.put(`${P}/live1`, { ...c.body, data: { a: "2" } });
    await h.del(`${P}/live1`);
    await w.waitForCount(4);
    expect(w.events.slice(1).map((e) => e.type)).toEqual(["ADDED", "MODIFIED", "DELETED"]);
    expect(w.events[2].object.metadata.resourceVersion).toBe(u.body.metadata.resourceVersion);
    expect(Number(w.events[3].object.metadata.resourceVersion)).toBeGreaterThan(
      Number(u.body.metadata.resourceVersion),
    );
    expect(w.events[3].object.data).toEqual({ a: "2" });
    w.close();
  });

  it("replays exactly the changes after a resourceVersion", async () => {
    await h.namespace("rv");
    const R = "/api/v1/namespaces/rv/configmaps";
    const a = await h.post(R, configMap("a"));
    const b = await h.post(R, configMap("b"));
    await h.put(`${R}/a`, { ...a.body, data: { x: "1" } });
    const w = await openWatch(h, `${R}?watch=1&resourceVersion=${b.body.metadata.resourceVersion}`);
    await w.waitForCount(1);
    await new Promise((r) => setTimeout(r, 100));
    expect(w.events.map((e) => [e.type, e.object.metadata.name])).toEqual([["MODIFIED", "a"]]);
    w.close();
    const all = await openWatch(
      h,
      `${R}?watch=1&resourceVersion=${a.body.metadata.resourceVersion}`,
    );
    await all.waitForCount(2);
    expect(all.events.map((e) => [e.type, e.object.metadata.name])).toEqual([
      ["ADDED", "b"],
      ["MODIFIED", "a"],
    ]);
    all.close();
  });

  it("follows selectors: objects leaving are DELETED, objects entering are ADDED", async () => {
    await h.namespace("sel");
    const S = "/api/v1/namespaces/sel/configmaps";
    const w = await openWatch(h, `${S}?watch=1&labelSelector=app%3Dweb`);
    const c = await h.post(S, configMap("x", {}, { labels: { app: "db" } }));
    const in1 = await h.put(`${S}/x`, {
      ...c.body,
      metadata: { ...c.body.metadata, labels: { app: "web" } },
    });
    const out = await h.put(`${S}/x`, {
      ...in1.body,
      metadata: { ...in1.body.metadata, labels: { app: "db" } },
    });
    await w.waitForCount(2);
    expect(w.events[0]).toMatchObject({
      type: "ADDED",
      object: { metadata: { labels: { app: "web" } } },
    });
    expect(w.events[1].type).toBe("DELETED");
    expect(w.events[1].object.metadata.labels).toEqual({ app: "web" });
    expect(w.events[1].object.metadata.resourceVersion).toBe(out.body.metadata.resourceVersion);
    w.close();
  });

  it("watches one object by name, and by fieldSelector", async () => {
    await h.namespace("one");
    const O = "/api/v1/namespaces/one/configmaps";
    await h.post(O, configMap("mine"));
    await h.post(O, configMap("yours"));
    const w = await openWatch(h, `${O}/mine?watch=true`);
    const f = await openWatch(h, `${O}?watch=true&fieldSelector=metadata.name%3Dyours`);
    await w.waitForCount(1);
    await f.waitForCount(1);
    await h.patch(`${O}/yours`, { data: { a: "1" } }, "application/merge-patch+json");
    await h.patch(`${O}/mine`, { data: { a: "1" } }, "application/merge-patch+json");
    await w.waitForCount(2);
    await f.waitForCount(2);
    expect(w.events.map((e) => e.object.metadata.name)).toEqual(["mine", "mine"]);
    expect(f.events.map((e) => e.object.metadata.name)).toEqual(["yours", "yours"]);
    w.close();
    f.close();
  });

  it("sends periodic bookmarks when asked", async () => {
    const w = await openWatch(h, `${P}?watch=1&allowWatchBookmarks=true&resourceVersion=0`);
    const bm = await w.waitFor((e) => e.type === "BOOKMARK", 3000);
    expect(Object.keys(bm.object).sort()).toEqual(["apiVersion", "kind", "metadata"]);
    expect(bm.object.kind).toBe("ConfigMap");
    expect(Number(bm.object.metadata.resourceVersion)).toBeGreaterThan(0);
    w.close();
    const none = await openWatch(h, `${P}?watch=1&resourceVersion=0`);
    await new Promise((r) => setTimeout(r, 500));
    expect(none.events.some((e) => e.type === "BOOKMARK")).toBe(false);
    none.close();
  });

  it("ends after timeoutSeconds", async () => {
    const w = await openWatch(h, `${P}?watch=1&timeoutSeconds=1`);
    const started = Date.now();
    await w.ended;
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it("sends initial events then a bookmark marking their end", async () => {
    await h.namespace("init");
    const I = "/api/v1/namespaces/init/configmaps";
    await h.post(I, configMap("i1"));
    await h.post(I, configMap("i2"));
    const bad = await h.get(`${I}?watch=1&sendInitialEvents=true&allowWatchBookmarks=true`);
    expect(bad.status).toBe(422);
    const w = await openWatch(
      h,
      `${I}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`,
    );
    await w.waitForCount(3);
    expect(w.events.map((e) => e.type)).toEqual(["ADDED", "ADDED", "BOOKMARK"]);
    expect(w.events[2].object.metadata.annotations).toEqual({
      "k8s.io/initial-events-end": "true",
    });
    await h.post(I, configMap("i3"));
    const later = await w.waitFor((e) => e.object?.metadata?.name === "i3");
    expect(later.type).toBe("ADDED");
    w.close();
  });

  it("sends initial events not older than a resourceVersion taken from another type", async () => {
    await h.namespace("nol");
    const N = "/api/v1/namespaces/nol/configmaps";
    await h.post(N, configMap("n1"));
    // A revision the configmaps cache has never seen: a write to another type.
    const other = await h.post("/api/v1/namespaces/nol/secrets", {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "s" },
    });
    const rv = Number(other.body.metadata.resourceVersion);
    const w = await openWatch(
      h,
      `${N}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=${rv}`,
    );
    await w.waitForCount(2);
    expect(w.events[0]).toMatchObject({ type: "ADDED", object: { metadata: { name: "n1" } } });
    expect(w.events[1].type).toBe("BOOKMARK");
    expect(Number(w.events[1].object.metadata.resourceVersion)).toBeGreaterThanOrEqual(rv);
    await h.post(N, configMap("n2"));
    await w.waitFor((e) => e.object?.metadata?.name === "n2");
    expect(w.events.filter((e) => e.type === "ADDED").length).toBe(2);
    w.close();
    const future = await h.get(
      `${N}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=99999999`,
    );
    expect(future.status).toBe(504);
    expect(future.body.details.causes[0].reason).toBe("ResourceVersionTooLarge");
  });

  it("serves the deprecated /watch/ path prefix", async () => {
    await h.namespace("legacy");
    await h.post("/api/v1/namespaces/legacy/configmaps", configMap("l1"));
    const w = await openWatch(h, "/api/v1/watch/namespaces/legacy/configmaps");
    await w.waitForCount(1);
    expect(w.events[0]).toMatchObject({ type: "ADDED", object: { metadata: { name: "l1" } } });
    w.close();
  });

  it("sends watch events as Tables when a Table was asked for, headers only first", async () => {
    await h.namespace("tbl");
    const T = "/api/v1/namespaces/tbl/configmaps";
    await h.post(T, configMap("t1", { a: "1" }));
    const w = await openWatch(h, `${T}?watch=1`, {
      accept: "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
    });
    await w.waitForCount(1);
    await h.post(T, configMap("t2"));
    await w.waitForCount(2);
    expect(w.events[0].object.kind).toBe("Table");
    expect(w.events[0].object.columnDefinitions.length).toBeGreaterThan(0);
    expect(w.events[0].object.rows[0].object.metadata.name).toBe("t1");
    expect(w.events[1].object.kind).toBe("Table");
    expect(w.events[1].object.columnDefinitions ?? []).toEqual([]);
    expect(w.events[1].object.rows[0].cells[0]).toBe("t2");
    w.close();
  });

  it("answers a start older than the cache window with one ERROR event carrying 410", async () => {
    const small = await startHarness({ limits: { watchCacheWindow: 3 } });
    try {
      await small.namespace("old");
      const O = "/api/v1/namespaces/old/configmaps";
      const first = await small.post(O, configMap("o0"));
      for (let i = 1; i <= 6; i++) await small.post(O, configMap(`o${i}`));
      await new Promise((r) => setTimeout(r, 100));
      const w = await openWatch(
        small,
        `${O}?watch=1&resourceVersion=${first.body.metadata.resourceVersion}`,
      );
      await w.ended;
      expect(w.status).toBe(200);
      expect(w.events.length).toBe(1);
      expect(w.events[0].type).toBe("ERROR");
      expect(w.events[0].object).toMatchObject({
        kind: "Status",
        apiVersion: "v1",
        status: "Failure",
        reason: "Expired",
        code: 410,
      });
      expect(w.events[0].object.message).toMatch(/^too old resource version: \d+ \(\d+\)$/);
    } finally {
      await small.close();
    }
  });

  it("ends open watches cleanly when the handler closes", async () => {
    const other = await startHarness();
    await other.namespace("bye");
    const w = await openWatch(other, "/api/v1/namespaces/bye/configmaps?watch=1");
    const endedCleanly = new Promise<boolean>((resolve) => {
      w.res.on("end", () => resolve(true));
      w.res.on("aborted", () => resolve(false));
    });
    await other.handler.close();
    expect(await endedCleanly).toBe(true);
    await other.close();
  });
});
