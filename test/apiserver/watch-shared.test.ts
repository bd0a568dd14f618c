/**
 * Watchers alike share their output: each flush of the watch cache hands every
 * watcher the whole batch of events, and watchers with the same representation and
 * selection write one shared chunk. Each must still get exactly its own events.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_API_LIMITS } from "../../src/apiserver/endpoints/limits.ts";
import {
  type CacheEvent,
  type CacheWatcher,
  type SharedChunks,
  WatchCacheSet,
} from "../../src/apiserver/watchcache/index.ts";
import { createBuiltinRegistry } from "../../src/registry/index.ts";
import { SqliteStore } from "../../src/storage/sqlite/index.ts";
import {
  configMap,
  eventually,
  type Harness,
  openWatch,
  startHarness,
  type WatchStream,
} from "./harness.ts";

describe("watch cache flushes (unit)", () => {
  let dir: string;
  let store: SqliteStore;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "setpoint-wcs-"));
    store = SqliteStore.open(join(dir, "data.db"), { durable: false });
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("hands every watcher each event once, in order, and one chunk per key per flush", async () => {
    const registry = createBuiltinRegistry();
    const caches = new WatchCacheSet(store, registry, { ...DEFAULT_API_LIMITS });
    caches.start();
    await caches.whenReady();
    const cache = caches.forDef(registry.get("", "configmaps")!);
    let made = 0;
    const batches: number[][] = [];
    const received = new Map<string, number[]>();
    const watcher = (name: string, key: string): CacheWatcher => {
      const got: number[] = [];
      received.set(name, got);
      return {
        startRev: cache.rev,
        deliver: () => {
          throw new Error("deliverBatch is used instead");
        },
        flush() {},
        deliverBatch(events: readonly CacheEvent[], shared: SharedChunks) {
          if (name === "a1") batches.push(events.map((e) => e.rev));
          for (const ev of events) got.push(ev.rev);
          shared.get(key, () => {
            made++;
            return Buffer.from(events.map((e) => e.key).join(","));
          });
        },
        terminate() {},
      };
    };
    // A plain watcher (deliver and flush only) beside them.
    const plain: number[] = [];
    cache.addWatcher({
      startRev: cache.rev,
      deliver: (ev) => plain.push(ev.rev),
      flush() {},
      terminate() {},
    });
    for (const [name, key] of [
      ["a1", "same"],
      ["a2", "same"],
      ["b", "other"],
    ]) {
      cache.addWatcher(watcher(name, key));
    }
    const revs = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        store.create(
          `/registry/core/configmaps/ns/f${i}`,
          JSON.stringify(configMap(`f${i}`, {}, { namespace: "ns" })),
        ),
      ),
    );
    revs.sort((x, y) => x - y);
    await eventually(() => plain.length === 20);
    for (const got of [...received.values(), plain]) expect(got).toEqual(revs);
    // Two keys per flush: one chunk each, however many watchers share it.
    expect(made).toBe(2 * batches.length);
    await caches.close();
  });
});

describe("watchers alike, over HTTP", () => {
  let h: Harness;
  const P = "/api/v1/namespaces/share/configmaps";
  beforeAll(async () => {
    h = await startHarness();
    await h.namespace("share");
  });
  afterAll(async () => {
    await h.close();
  });

  /** Type, name and resourceVersion of each event. */
  const seen = (w: WatchStream) =>
    w.events.map((e) => `${e.type} ${e.object.metadata.name} ${e.object.metadata.resourceVersion}`);

  it("get exactly their own events whether their selections are identical or not", async () => {
    const start = (await h.get(P)).body.metadata.resourceVersion as string;
    const from = `watch=1&resourceVersion=${start}`;
    const all = [await openWatch(h, `${P}?${from}`), await openWatch(h, `${P}?${from}`)];
    const teamA = [
      await openWatch(h, `${P}?${from}&labelSelector=team%3Da`),
      await openWatch(h, `${P}?${from}&labelSelector=team%3Da`),
    ];
    const teamB = await openWatch(h, `${P}?${from}&labelSelector=team%3Db`);
    const partial = await openWatch(h, `${P}?${from}&labelSelector=team%3Da`, {
      accept: "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
    });
    const byName = await openWatch(h, `${P}?${from}&fieldSelector=metadata.name%3Dm3`);

    // Writes at once, so that several land in one flush.
    const created = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        h.post(P, configMap(`m${i}`, {}, { labels: { team: i % 2 === 0 ? "a" : "b" } })),
      ),
    );
    for (const r of created) expect(r.status).toBe(201);
    const rv = (r: { body: { metadata: { resourceVersion: string } } }) =>
      Number(r.body.metadata.resourceVersion);
    // m2 moves from team a to team b; m3 is deleted.
    const m2 = created[2].body;
    const moved = await h.put(`${P}/m2`, {
      ...m2,
      metadata: { ...m2.metadata, labels: { team: "b" } },
    });
    expect(moved.status).toBe(200);
    const deleted = await h.del(`${P}/m3`);
    expect(deleted.status).toBe(200);

    // What each selection must see, in resourceVersion order.
    type Ev = { rv: number; line: (team: string | null) => string | null };
    const events: Ev[] = created.map((r, i) => ({
      rv: rv(r),
      line: (team) =>
        team === null || team === (i % 2 === 0 ? "a" : "b") ? `ADDED m${i} ${rv(r)}` : null,
    }));
    events.push({
      rv: rv(moved),
      line: (team) =>
        team === null
          ? `MODIFIED m2 ${rv(moved)}`
          : team === "a"
            ? `DELETED m2 ${rv(moved)}`
            : `ADDED m2 ${rv(moved)}`,
    });
    await Promise.all(all.map((w) => w.waitForCount(14)));
    const deletion = all[0].events.find(
      (e) => e.type === "DELETED" && e.object.metadata.name === "m3",
    );
    const deleteRv = Number(deletion?.object.metadata.resourceVersion);
    expect(deleteRv).toBeGreaterThan(rv(moved));
    events.push({
      rv: deleteRv,
      line: (team) => (team === null || team === "b" ? `DELETED m3 ${deleteRv}` : null),
    });
    events.sort((x, y) => x.rv - y.rv);
    const expected = (team: string | null) =>
      events.map((e) => e.line(team)).filter((l): l is string => l !== null);

    await Promise.all(teamA.map((w) => w.waitForCount(7)));
    await teamB.waitForCount(8);
    await partial.waitForCount(7);
    await byName.waitForCount(2);
    // Anything more would have arrived with the last events.
    await new Promise((r) => setTimeout(r, 100));

    for (const w of all) expect(seen(w)).toEqual(expected(null));
    for (const w of teamA) expect(seen(w)).toEqual(expected("a"));
    expect(seen(teamB)).toEqual(expected("b"));
    expect(seen(partial)).toEqual(expected("a"));
    expect(partial.events.every((e) => e.object.kind === "PartialObjectMetadata")).toBe(true);
    expect(teamA[0].events.every((e) => e.object.kind === "ConfigMap")).toBe(true);
    expect(seen(byName)).toEqual([`ADDED m3 ${rv(created[3])}`, `DELETED m3 ${deleteRv}`]);
    for (const w of [...all, ...teamA, teamB, partial, byName]) w.close();
  });

  it("send metadata-only watchers each object's metadata exactly as it is stored", async () => {
    await h.namespace("meta");
    const M = "/api/v1/namespaces/meta/configmaps";
    const start = (await h.get(M)).body.metadata.resourceVersion as string;
    const from = `watch=1&resourceVersion=${start}`;
    const full = await openWatch(h, `${M}?${from}`);
    const partial = await openWatch(h, `${M}?${from}`, {
      accept: "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
    });
    const labels = { "1": "digit-key", team: "a" };
    const annotations = { quote: 'a"}{\\', accent: "\u00e9" };
    const created = await h.post(M, configMap("meta1", { k: "v" }, { labels, annotations }));
    expect(created.status).toBe(201);
    const patched = await h.patch(
      `${M}/meta1?fieldManager=other`,
      { metadata: { annotations: { "note/x": "x\u2028y", "2": "" } }, data: { more: "z" } },
      "application/merge-patch+json",
    );
    expect(patched.status).toBe(200);
    expect((await h.del(`${M}/meta1`)).status).toBe(200);
    await full.waitForCount(3);
    await partial.waitForCount(3);
    expect(partial.events.map((e) => e.type)).toEqual(["ADDED", "MODIFIED", "DELETED"]);
    for (let i = 0; i < 3; i++) {
      expect(partial.events[i].type).toBe(full.events[i].type);
      expect(partial.events[i].object).toEqual({
        kind: "PartialObjectMetadata",
        apiVersion: "meta.k8s.io/v1",
        metadata: full.events[i].object.metadata,
      });
    }
    expect(partial.events[1].object.metadata).toEqual(patched.body.metadata);
    full.close();
    partial.close();
  });

  it("starts a watch in the middle of a burst without repeating or losing events", async () => {
    await h.namespace("burst");
    const B = "/api/v1/namespaces/burst/configmaps";
    const first = await h.post(B, configMap("b-first"));
    const early = await openWatch(
      h,
      `${B}?watch=1&resourceVersion=${first.body.metadata.resourceVersion}`,
    );
    const writes = Array.from({ length: 30 }, (_, i) => h.post(B, configMap(`b${i}`)));
    // Opened while the writes go on: it starts with the state at some revision.
    const late = await openWatch(h, `${B}?watch=1`);
    const done = await Promise.all(writes);
    await early.waitForCount(30);
    const names = (w: WatchStream) => w.events.map((e) => e.object.metadata.name as string);
    await eventually(() => new Set(names(late)).size === 31);
    await new Promise((r) => setTimeout(r, 100));
    expect(names(early).sort()).toEqual(done.map((r) => r.body.metadata.name).sort());
    // The late watch: each object exactly once (from the initial state or as an event).
    expect(names(late).length).toBe(31);
    early.close();
    late.close();
  });
});
