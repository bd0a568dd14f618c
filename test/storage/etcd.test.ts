/**
 * The etcd backend against a real, throwaway etcd (one per file; each store gets a
 * fresh key prefix): what is particular to etcd, on top of the shared conformance
 * suite. Resilience (fail-over, restarts, SIGKILL) is in etcd-resilience.test.ts.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EtcdClient, EtcdStore } from "../../src/storage/etcd/index.ts";
import {
  CompactedError,
  FutureRevisionError,
  InvalidKeyError,
  NotFoundError,
  type Store,
  type WatchEvent,
} from "../../src/storage/index.ts";
import { describeWithEtcd, type EtcdProcess, startEtcd } from "../helpers/etcd.ts";
import { describeStoreConformance } from "./conformance.ts";

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Reads `n` events from a watch (fails the test if they do not come in time). */
async function take(
  iter: AsyncIterator<WatchEvent>,
  n: number,
  timeoutMs = 10_000,
): Promise<WatchEvent[]> {
  const out: WatchEvent[] = [];
  const deadline = Date.now() + timeoutMs;
  while (out.length < n) {
    const left = deadline - Date.now();
    const r = await Promise.race([
      iter.next(),
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`only ${out.length}/${n} events`)), left),
      ),
    ]);
    if (r.done) throw new Error(`watch ended after ${out.length}/${n} events`);
    out.push(r.value);
  }
  return out;
}

describeWithEtcd("etcd backend", () => {
  let etcd: EtcdProcess;
  const stores: Store[] = [];

  const newPrefix = () => `/test-${randomBytes(6).toString("hex")}/`;
  async function newStore(prefix = newPrefix()): Promise<EtcdStore> {
    const s = await EtcdStore.open({ endpoints: etcd.endpoints, prefix });
    stores.push(s);
    return s;
  }

  beforeAll(async () => {
    etcd = await startEtcd();
  });
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
    await etcd?.destroy();
  });

  // Each store is a fresh prefix on the one etcd of this file.
  describeStoreConformance("etcd", () =>
    EtcdStore.open({ endpoints: etcd.endpoints, prefix: newPrefix() }),
  );

  it("never creates a missing key on update, whatever the expected revision", async () => {
    const s = await newStore();
    await expect(s.update("/missing", "x", 0)).rejects.toBeInstanceOf(NotFoundError);
    await expect(s.delete("/missing", 0)).rejects.toBeInstanceOf(NotFoundError);
    expect(await s.get("/missing")).toBeNull();
  });

  it("stores keys under its prefix, invisible to callers and to other prefixes", async () => {
    const base = newPrefix();
    const a = await newStore(base);
    const b = await newStore(`${base.slice(0, -1)}2/`); // "/test-x2/": a string-prefix neighbour
    await a.create("/k", "from a");
    await b.create("/k", "from b");
    await b.create("/k2", "only b");
    expect((await a.list("")).items.map((i) => [i.key, i.value])).toEqual([["/k", "from a"]]);
    expect((await a.get("/k"))?.value).toBe("from a");
    expect(await a.get("/k2")).toBeNull();
    // A prefix that is not key-shaped selects nothing, and cannot reach the neighbour.
    expect((await a.list("2/")).items).toEqual([]);

    const raw = new EtcdClient({
      endpoints: etcd.endpoints,
      dialTimeoutMs: 2000,
      requestTimeoutMs: 2000,
    });
    try {
      const res = await raw.range({ key: Buffer.from(`${base}k`) });
      expect(res.kvs.map((kv) => kv.value.toString())).toEqual(["from a"]);
    } finally {
      raw.close();
    }
  });

  it("pages a list at the first page's revision while writes go on", async () => {
    const s = await newStore();
    for (let i = 0; i < 10; i++) await s.create(`/p/${i}`, `v${i}`);
    const first = await s.list("/p/", { limit: 3 });
    expect(first.items.map((i) => i.key)).toEqual(["/p/0", "/p/1", "/p/2"]);
    expect(first.remainingItemCount).toBe(7);
    // Writes between pages: none of them may show in the later pages.
    await s.delete("/p/5");
    await s.create("/p/55", "new");
    const cur = await s.get("/p/9");
    await s.update("/p/9", "changed", cur!.modRevision);
    const keys = first.items.map((i) => i.key);
    const values: string[] = [];
    let token = first.continue;
    while (token) {
      const page = await s.list("/p/", { limit: 3, continue: token });
      expect(page.revision).toBe(first.revision);
      keys.push(...page.items.map((i) => i.key));
      values.push(...page.items.map((i) => i.value));
      token = page.continue;
    }
    expect(keys).toEqual(Array.from({ length: 10 }, (_, i) => `/p/${i}`));
    expect(values.at(-1)).toBe("v9");
    await expect(s.list("/other/", { continue: first.continue })).rejects.toBeInstanceOf(
      InvalidKeyError,
    );
    await expect(s.list("/p/", { continue: "not a token" })).rejects.toBeInstanceOf(
      InvalidKeyError,
    );
  });

  it("reports compacted and future revisions, and finds compactions made elsewhere", async () => {
    const s = await newStore();
    const r1 = await s.create("/c", "1");
    const r2 = await s.update("/c", "2", r1);
    const r3 = await s.update("/c", "3", r2);
    // Another installation on the same etcd compacts: etcd compaction is cluster-wide.
    const other = await newStore();
    await other.compact(r2);
    expect(await s.compactedRevision()).toBe(r2);
    const err = await s.get("/c", { revision: r1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CompactedError);
    expect((err as CompactedError).compactedRevision).toBe(r2);
    expect((await s.get("/c", { revision: r2 }))?.value).toBe("2");
    await expect(s.list("/", { revision: r1 })).rejects.toBeInstanceOf(CompactedError);
    const future = await s.get("/c", { revision: r3 + 1000 }).catch((e: unknown) => e);
    expect(future).toBeInstanceOf(FutureRevisionError);
    expect((future as FutureRevisionError).currentRevision).toBeGreaterThanOrEqual(r3);
    await expect(s.compact(r3 + 1000)).rejects.toBeInstanceOf(FutureRevisionError);
    // Compacting at or below the compacted revision is a no-op.
    await s.compact(r1);
    expect(await s.compactedRevision()).toBe(r2);
  });

  it("watches from now: a write issued right after watch() is seen, earlier ones are not", async () => {
    const s = await newStore();
    await s.create("/n/old", "x");
    const w = s.watch("/n/", 0);
    const r = await s.create("/n/new", "y");
    const [ev] = await take(w[Symbol.asyncIterator](), 1);
    w.cancel();
    expect(ev).toMatchObject({ type: "create", key: "/n/new", revision: r });
  });

  it("fails a watch from below the compacted revision, and serves one from it", async () => {
    const s = await newStore();
    const r1 = await s.create("/wc", "1");
    const r2 = await s.update("/wc", "2", r1);
    const r3 = await s.update("/wc", "3", r2);
    await s.compact(r2);
    const before = s.watch("/wc", r1);
    const err = await before[Symbol.asyncIterator]()
      .next()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CompactedError);
    expect((err as CompactedError).compactedRevision).toBeGreaterThanOrEqual(r2);
    const at = s.watch("/wc", r2);
    const [ev] = await take(at[Symbol.asyncIterator](), 1);
    at.cancel();
    expect(ev).toMatchObject({ type: "update", revision: r3, prev: { value: "2" } });
  });

  it("shares one etcd watcher among watches of a prefix that start together", async () => {
    const etcdWatchers = async () => {
      const text = await (await fetch(`${etcd.clientUrl}/metrics`)).text();
      return Number(/^etcd_debugging_mvcc_watcher_total (\d+)/m.exec(text)?.[1]);
    };
    const settled = async (want: (n: number) => boolean) => {
      for (let i = 0; i < 100 && !want(await etcdWatchers()); i++) await sleep(20);
      return etcdWatchers();
    };
    const s = await newStore();
    // Watchers of earlier tests may still be going away: wait for the count to hold still.
    let before = await etcdWatchers();
    for (let stable = 0; stable < 5; ) {
      await sleep(20);
      const n = await etcdWatchers();
      stable = n === before ? stable + 1 : 0;
      before = n;
    }
    const r0 = await s.create("/sh/a", "0");
    const shared = Array.from({ length: 20 }, () => s.watch("/sh/", 0));
    const r1 = await s.update("/sh/a", "1", r0);
    const iters = shared.map((w) => w[Symbol.asyncIterator]());
    for (const it of iters) expect((await take(it, 1))[0].revision).toBe(r1);
    expect(await settled((n) => n === before + 1)).toBe(before + 1);
    // A watch that needs history the shared stream has passed gets a stream of its own.
    const replay = s.watch("/sh/", r0 - 1);
    expect((await take(replay[Symbol.asyncIterator](), 2)).map((e) => e.revision)).toEqual([
      r0,
      r1,
    ]);
    expect(await settled((n) => n === before + 2)).toBe(before + 2);
    for (const w of [...shared, replay]) w.cancel();
    expect(await settled((n) => n === before)).toBe(before);
  });

  it("fails to open with UnavailableError when no endpoint answers", async () => {
    await expect(
      EtcdStore.open({ endpoints: ["http://127.0.0.1:1"], prefix: "/x/", dialTimeoutMs: 300 }),
    ).rejects.toMatchObject({ name: "UnavailableError" });
  });
});
