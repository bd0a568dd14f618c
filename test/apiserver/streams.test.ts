/**
 * Streamed responses (src/apiserver/streaming): large lists and the initial
 * events of watches are written a chunk at a time, with backpressure, within the
 * handler's global budget of bytes in flight. Small limits make a few thousand
 * objects "large"; assertions are on the server's own accounting, never on time.
 */
import http from "node:http";
import net from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configMap, eventually, type Harness, openWatch, startHarness } from "./harness.ts";

const CHUNK = 16 * 1024;
const BUDGET = 64 * 1024;
const OBJECTS = 2000;
/** Each ConfigMap's data value: the objects' JSON is about 2 KiB each, 4 MiB in all. */
const VALUE = "v".repeat(1800);
const NS = "big";
const P = `/api/v1/namespaces/${NS}/configmaps`;
const TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io";

/** Creates `n` ConfigMaps over HTTP, a few at a time. */
async function fill(h: Harness, n: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let i = next++; i < n; i = next++) {
        const r = await h.post(P, configMap(`cm-${String(i).padStart(5, "0")}`, { v: VALUE }));
        if (r.status !== 201) throw new Error(`create: ${r.status} ${r.text}`);
      }
    }),
  );
}

/** The most the budget may show: its capacity, plus one item's overshoot per stream. */
function bound(streams: number): number {
  return BUDGET + streams * 4096;
}

describe("streamed lists and initial events", () => {
  let h: Harness;
  let unix: http.Server;
  let socketPath: string;
  const clients: net.Socket[] = [];
  /** Requests that reached the Unix socket listener. */
  let unixRequests = 0;

  beforeAll(async () => {
    h = await startHarness({
      limits: {
        streamChunkBytes: CHUNK,
        streamBudgetBytes: BUDGET,
        streamStallMs: 3000,
        watchDrainMs: 200,
        slowWatcherBytes: 256 * 1024,
      },
    });
    await h.namespace(NS);
    await fill(h, OBJECTS);
    // A second listener on a Unix socket (small kernel buffers) for clients that do not read.
    socketPath = join(h.dir, "api.sock");
    unix = http.createServer((req, res) => {
      unixRequests++;
      void h.handler.handle(req, res, { name: "admin", groups: ["system:masters"] });
    });
    await new Promise<void>((resolve) => unix.listen(socketPath, resolve));
  }, 120_000);

  afterAll(async () => {
    for (const c of clients) c.destroy();
    unix?.closeAllConnections();
    await new Promise<void>((resolve) => (unix ? unix.close(() => resolve()) : resolve()));
    await h?.close();
  });

  it("streams lists larger than a chunk whole and in order, from the cache and from storage", async () => {
    const consistent = await h.get(P);
    const cached = await h.get(`${P}?resourceVersion=0`);
    for (const r of [consistent, cached]) {
      expect(r.status).toBe(200);
      // Streamed: chunked, no Content-Length.
      expect(r.headers["content-length"]).toBeUndefined();
      expect(r.body.kind).toBe("ConfigMapList");
      expect(r.body.metadata.resourceVersion).toMatch(/^\d+$/);
      const names = r.body.items.map((o: { metadata: { name: string } }) => o.metadata.name);
      expect(names).toHaveLength(OBJECTS);
      expect(names).toEqual([...names].sort());
      expect(r.body.items[0].data.v).toBe(VALUE);
    }
    // The same objects as the pages of a paginated list (not streamed) at the same revision.
    const items: unknown[] = [];
    let token = "";
    do {
      const page = await h.get(`${P}?limit=700${token ? `&continue=${token}` : ""}`);
      expect(page.status).toBe(200);
      items.push(...page.body.items);
      token = page.body.metadata.continue ?? "";
    } while (token);
    expect(consistent.body.items).toEqual(items);
    expect(cached.body.items).toEqual(items);
  });

  it("streams Tables and metadata-only lists", async () => {
    for (const path of [P, `${P}?resourceVersion=0`]) {
      const table = await h.get(path, { accept: TABLE });
      expect(table.status).toBe(200);
      expect(table.body.kind).toBe("Table");
      expect(table.body.columnDefinitions.map((c: { name: string }) => c.name)).toContain("Name");
      expect(table.body.rows).toHaveLength(OBJECTS);
      expect(table.body.rows[OBJECTS - 1].cells[0]).toBe(
        `cm-${String(OBJECTS - 1).padStart(5, "0")}`,
      );
      expect(table.body.rows[0].object.kind).toBe("PartialObjectMetadata");
      const partial = await h.get(path, {
        accept: "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
      });
      expect(partial.status).toBe(200);
      expect(partial.body.kind).toBe("PartialObjectMetadataList");
      expect(partial.body.items).toHaveLength(OBJECTS);
      expect(partial.body.items[5].data).toBeUndefined();
    }
  });

  it("sends every initial event, then the bookmark ending them, then live events", async () => {
    const w = await openWatch(
      h,
      `${P}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`,
    );
    try {
      await w.waitForCount(OBJECTS + 1, 30_000);
      expect(w.events.slice(0, OBJECTS).every((e) => e.type === "ADDED")).toBe(true);
      const end = w.events[OBJECTS];
      expect(end.type).toBe("BOOKMARK");
      expect(end.object.metadata.annotations["k8s.io/initial-events-end"]).toBe("true");
      expect(new Set(w.events.slice(0, OBJECTS).map((e) => e.object.metadata.name)).size).toBe(
        OBJECTS,
      );
      expect((await h.post(P, configMap("live"))).status).toBe(201);
      const live = await w.waitFor((e) => e.object.metadata.name === "live");
      expect(live.type).toBe("ADDED");
      expect((await h.del(`${P}/live`)).status).toBe(200);
    } finally {
      w.close();
    }
  });

  it("cuts off watchers that never read their initial events, within the budget, while others are served", async () => {
    // The earlier tests' watches are gone.
    await eventually(() => h.handler.openWatches() === 0, 10_000);
    const stuck = 4;
    for (let i = 0; i < stuck; i++) {
      const c = net.connect(socketPath);
      clients.push(c);
      c.pause();
      c.write(`GET ${P}?watch=1&resourceVersion=0 HTTP/1.1\r\nHost: setpoint\r\n\r\n`);
    }
    // Each is sent what its socket takes, then waits for a client that never reads.
    await eventually(() => unixRequests === stuck, 10_000);
    let highest = 0;
    const sample = () => {
      const s = h.handler.outputStats();
      highest = Math.max(highest, s.inFlight);
      return s;
    };
    // Meanwhile others are served: a GET, a list, a watch.
    const one = await h.get(`${P}/cm-00007`);
    expect(one.status).toBe(200);
    sample();
    const list = await h.get(`${P}?resourceVersion=0`);
    expect(list.body.items).toHaveLength(OBJECTS);
    sample();
    // The stuck watchers are cut off (a watch that took its initial events stays
    // open), and what they held goes back to the budget.
    await eventually(() => {
      sample();
      return h.handler.openWatches() === 0;
    }, 20_000);
    await eventually(() => sample().inFlight === 0, 10_000);
    expect(highest).toBeLessThanOrEqual(bound(stuck + 1));
    expect(h.handler.outputStats().peak).toBeLessThanOrEqual(bound(stuck + 1));
  });
});

describe("streamed lists under concurrency", () => {
  it("keeps concurrent large lists within the budget", async () => {
    // A server of its own, whose clients (in this process, busy parsing the other
    // lists) are never taken for stalled.
    const h = await startHarness({
      limits: { streamChunkBytes: CHUNK, streamBudgetBytes: BUDGET },
    });
    try {
      await h.namespace(NS);
      await fill(h, OBJECTS);
      const paths = [
        ...Array.from({ length: 4 }, () => ({ path: P, accept: "application/json" })),
        ...Array.from({ length: 4 }, () => ({
          path: `${P}?resourceVersion=0`,
          accept: "application/json",
        })),
        ...Array.from({ length: 2 }, () => ({ path: P, accept: TABLE })),
      ];
      const replies = await Promise.all(paths.map((p) => h.get(p.path, { accept: p.accept })));
      for (const r of replies) {
        expect(r.status).toBe(200);
        expect((r.body.items ?? r.body.rows).length).toBe(OBJECTS);
      }
      const s = h.handler.outputStats();
      expect(s.peak).toBeLessThanOrEqual(bound(paths.length));
      expect(s.inFlight).toBe(0);
      expect(s.waiting).toBe(0);
    } finally {
      await h.close();
    }
  }, 120_000);
});
