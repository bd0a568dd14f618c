import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_API_LIMITS } from "../../src/apiserver/endpoints/limits.ts";
import {
  type CacheEvent,
  type CacheWatcher,
  WatchCacheSet,
} from "../../src/apiserver/watchcache/index.ts";
import { createBuiltinRegistry } from "../../src/registry/index.ts";
import {
  type Store,
  UnavailableError,
  type Watch,
  type WatchEvent,
  type WatchOptions,
} from "../../src/storage/index.ts";
import { SqliteStore } from "../../src/storage/sqlite/index.ts";
import { configMap, eventually, type Harness, openWatch, startHarness } from "./harness.ts";

/** The real store, counting watches per prefix and able to break the next watch once. */
function instrument(store: Store) {
  const watches = new Map<string, number>();
  let breakNext = false;
  const proxy = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === "watch") {
        return (prefix: string, from: number, opts?: WatchOptions): Watch => {
          watches.set(prefix, (watches.get(prefix) ?? 0) + 1);
          const inner = target.watch(prefix, from, opts);
          if (!breakNext || !prefix.includes("configmaps")) return inner;
          breakNext = false;
          let delivered = 0;
          return {
            cancel: () => inner.cancel(),
            async *[Symbol.asyncIterator](): AsyncIterator<WatchEvent> {
              for await (const ev of inner) {
                yield ev;
                if (++delivered === 1) {
                  inner.cancel();
                  throw new UnavailableError("connection to storage lost");
                }
              }
            },
          } as Watch;
        };
      }
      const v = Reflect.get(target, prop, receiver);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
  return {
    store: proxy,
    watches,
    breakNextWatch() {
      breakNext = true;
    },
  };
}

describe("watch cache (unit)", () => {
  let dir: string;
  let store: SqliteStore;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "setpoint-wc-"));
    store = SqliteStore.open(join(dir, "data.db"), { durable: false });
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("feeds every watcher of a type from one storage watch, rendering each event once", async () => {
    const inst = instrument(store);
    const registry = createBuiltinRegistry();
    const caches = new WatchCacheSet(inst.store, registry, { ...DEFAULT_API_LIMITS });
    caches.start();
    await caches.whenReady();
    const cache = caches.forDef(registry.get("", "configmaps")!);
    let renders = 0;
    const received: string[][] = [];
    for (let i = 0; i < 50; i++) {
      const got: string[] = [];
      received.push(got);
      const w: CacheWatcher = {
        startRev: cache.rev,
        deliver(ev: CacheEvent) {
          got.push(
            ev.rendered("test", () => {
              renders++;
              return `${ev.type}:${ev.key}`;
            }),
          );
        },
        flush() {},
        terminate() {},
      };
      cache.addWatcher(w);
    }
    for (let i = 0; i < 5; i++) {
      await store.create(
        `/registry/core/configmaps/ns/c${i}`,
        JSON.stringify(configMap(`c${i}`, {}, { namespace: "ns" })),
      );
    }
    await eventually(() => received.every((r) => r.length === 5));
    expect(renders).toBe(5);
    expect(new Set(received.map((r) => r.join(","))).size).toBe(1);
    expect(inst.watches.get("/registry/core/configmaps/")).toBe(1);
    expect(cache.size).toBe(5);
    await caches.close();
  });

  it("re-opens its storage watch after an error without losing events", async () => {
    const inst = instrument(store);
    const registry = createBuiltinRegistry();
    const caches = new WatchCacheSet(inst.store, registry, {
      ...DEFAULT_API_LIMITS,
      watchRestartDelayMs: 10,
    });
    inst.breakNextWatch();
    caches.start();
    await caches.whenReady();
    const cache = caches.forDef(registry.get("", "configmaps")!);
    const seen: string[] = [];
    cache.addWatcher({
      startRev: cache.rev,
      deliver: (ev) => seen.push(`${ev.type} ${ev.key}`),
      flush() {},
      terminate() {},
    });
    for (let i = 0; i < 4; i++) {
      await store.create(
        `/registry/core/configmaps/re/r${i}`,
        JSON.stringify(configMap(`r${i}`, {}, { namespace: "re" })),
      );
    }
    await eventually(() => seen.length === 4);
    expect(seen).toEqual([0, 1, 2, 3].map((i) => `ADDED /registry/core/configmaps/re/r${i}`));
    expect(inst.watches.get("/registry/core/configmaps/")).toBe(2);
    await caches.close();
  });
  it("holds each object's JSON while its map or window needs it, and compacts the rest away", async () => {
    const registry = createBuiltinRegistry();
    const window = 50;
    const caches = new WatchCacheSet(store, registry, {
      ...DEFAULT_API_LIMITS,
      watchCacheWindow: window,
    });
    caches.start();
    await caches.whenReady();
    const cache = caches.forDef(registry.get("", "configmaps")!);
    const key = (i: number) => `/registry/core/configmaps/slabs/s${i}`;
    const value = (i: number, round: number) =>
      JSON.stringify(
        configMap(`s${i}`, { round: String(round), v: "z".repeat(5000) }, { namespace: "slabs" }),
      );
    const revs: number[] = [];
    for (let i = 0; i < 100; i++) revs[i] = await store.create(key(i), value(i, 0));
    // 2,000 updates of 5 KB: about 10 MB written, of which about 0.5 MB is current.
    for (let round = 1; round <= 20; round++) {
      await Promise.all(
        revs.map(async (rev, i) => {
          revs[i] = await store.update(key(i), value(i, round), rev);
        }),
      );
    }
    const last = await store.currentRevision();
    await cache.waitFor(last, 5000);
    for (let i = 0; i < 100; i++) {
      const e = cache.get(key(i))!;
      expect(JSON.parse(e.json).data.round).toBe("20");
      expect(e.rev).toBe(revs[i]);
    }
    // The window's events still read both sides.
    const replay = cache.replaySince(cache.oldestRev);
    expect(replay.ok).toBe(true);
    const events = replay.ok ? replay.events : [];
    expect(events.length).toBe(window);
    for (const ev of events) {
      expect(JSON.parse(ev.json("cur")).data.round).toBe(
        String(Number(JSON.parse(ev.json("prev")).data.round) + 1),
      );
    }
    expect(cache.slabCount).toBeLessThanOrEqual(3);
    await caches.close();
  });
});

describe("watch cache behind the handler", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ limits: { slowWatcherBytes: 256 * 1024, watchDrainMs: 500 } });
    await h.namespace("slow");
  });
  afterAll(async () => {
    await h.close();
  });

  it("cuts off a watcher that stops reading without holding back the others", async () => {
    const P = "/api/v1/namespaces/slow/configmaps";
    // A second listener on a Unix socket (small kernel buffers) for the slow client.
    const socketPath = join(h.dir, "api.sock");
    const server = http.createServer((req, res) => {
      void h.handler.handle(req, res, { name: "admin", groups: [] });
    });
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    const fast = await openWatch(h, `${P}?watch=1`);
    const slow = await new Promise<http.IncomingMessage>((resolve) => {
      const req = http.request({ socketPath, path: `${P}?watch=1` }, (res) => {
        res.pause();
        resolve(res);
      });
      req.end();
    });
    const big = "x".repeat(512 * 1024);
    const N = 24;
    for (let i = 0; i < N; i++) {
      const r = await h.post(P, configMap(`big${i}`, { v: big }));
      expect(r.status).toBe(201);
    }
    await fast.waitForCount(N, 15000);
    expect(fast.events.every((e) => e.type === "ADDED")).toBe(true);
    // The fast watcher still gets events after the slow one was cut off.
    await h.post(P, configMap("after"));
    await fast.waitFor((e) => e.object.metadata.name === "after");
    fast.close();

    // The slow client finally reads: its stream was ended early, missing events.
    await new Promise((r) => setTimeout(r, 700));
    let text = "";
    slow.setEncoding("utf8");
    slow.on("data", (c: string) => {
      text += c;
    });
    const ended = new Promise<void>((resolve) => {
      slow.on("end", () => resolve());
      slow.on("close", () => resolve());
      slow.on("error", () => resolve());
    });
    slow.resume();
    await ended;
    const complete = text.split("\n").filter((l) => l.endsWith("}")).length;
    expect(complete).toBeLessThan(N);
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it("serves resourceVersion=0 lists from memory", async () => {
    const other = await startHarness();
    await other.namespace("mem");
    await other.post("/api/v1/namespaces/mem/configmaps", configMap("m1"));
    await eventually(async () => {
      const r = await other.get("/api/v1/namespaces/mem/configmaps?resourceVersion=0");
      return r.body.items?.length === 1;
    });
    await other.store.close();
    const cached = await other.get("/api/v1/namespaces/mem/configmaps?resourceVersion=0");
    expect(cached.status).toBe(200);
    expect(cached.body.items[0].metadata.name).toBe("m1");
    const live = await other.get("/api/v1/namespaces/mem/configmaps");
    expect(live.status).toBe(503);
    expect(live.body.kind).toBe("Status");
    await other.close();
  });

  it("lists from memory exactly what storage holds, ASCII or not", async () => {
    const other = await startHarness();
    await other.namespace("bytes");
    const data = [{ a: "plain" }, { a: 'é€😀 \u2028 "q"' }, { a: "x".repeat(3000) }];
    for (const [i, d] of data.entries()) {
      await other.post("/api/v1/namespaces/bytes/configmaps", configMap(`b${i}`, d));
    }
    const live = await other.get("/api/v1/namespaces/bytes/configmaps");
    await eventually(async () => {
      const r = await other.get("/api/v1/namespaces/bytes/configmaps?resourceVersion=0");
      return r.body.items?.length === data.length;
    });
    const cached = await other.get("/api/v1/namespaces/bytes/configmaps?resourceVersion=0");
    expect(cached.status).toBe(200);
    expect(cached.body.items).toEqual(live.body.items);
    expect(cached.body.items.map((o: { data: unknown }) => o.data)).toEqual(data);
    await other.close();
  });

  it("keeps the watch open for many watchers on one storage watch", async () => {
    const ws = await Promise.all(
      Array.from({ length: 20 }, () =>
        openWatch(
          h,
          "/api/v1/namespaces/slow/configmaps?watch=1&resourceVersion=0&labelSelector=fan%3Dout",
        ),
      ),
    );
    await h.post(
      "/api/v1/namespaces/slow/configmaps",
      configMap("fan", {}, { labels: { fan: "out" } }),
    );
    await Promise.all(ws.map((w) => w.waitForCount(1)));
    for (const w of ws) {
      expect(w.events[0].object.metadata.name).toBe("fan");
      w.close();
    }
  });
});
