/**
 * The etcd backend when etcd misbehaves: endpoints down (fail-over), connections lost
 * and etcd restarted under a running watch (resumed with no loss and no duplicate),
 * history compacted while a watch was disconnected (CompactedError), and etcd killed
 * with SIGKILL under write load (every acknowledged write survives).
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EtcdStore, type EtcdStoreOptions } from "../../src/storage/etcd/index.ts";
import {
  AlreadyExistsError,
  CompactedError,
  type Store,
  UnavailableError,
  type Watch,
  type WatchEvent,
} from "../../src/storage/index.ts";
import {
  describeWithEtcd,
  type EtcdProcess,
  freePort,
  startEtcd,
  startEtcdCluster,
  TcpProxy,
} from "../helpers/etcd.ts";

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Short timeouts so that outages show quickly in tests. */
const FAST: Partial<EtcdStoreOptions> = { dialTimeoutMs: 1_000, requestTimeoutMs: 3_000 };

/**
 * Creates `key`, retrying while etcd is unavailable. A retried create that finds the key
 * with its own value learns that the earlier, unacknowledged attempt was applied.
 */
async function createWithRetry(s: Store, key: string, value: string, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await s.create(key, value);
    } catch (err) {
      if (err instanceof AlreadyExistsError && err.current?.value === value) {
        return err.current.modRevision;
      }
      if (!(err instanceof UnavailableError) || Date.now() > deadline) throw err;
      await sleep(50);
    }
  }
}

/** Collects a watch's events in the background. */
function collect(w: Watch): { events: WatchEvent[]; error: Promise<unknown> } {
  const events: WatchEvent[] = [];
  const error = (async () => {
    for await (const ev of w) events.push(ev);
    return null;
  })().catch((err: unknown) => err);
  return { events, error };
}

async function until(cond: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

describeWithEtcd("EtcdStore resilience", () => {
  let etcd: EtcdProcess;
  const closers: (() => Promise<void>)[] = [];
  const newPrefix = () => `/res-${randomBytes(6).toString("hex")}/`;

  async function open(endpoints: string[], prefix: string, opts: Partial<EtcdStoreOptions> = {}) {
    const s = await EtcdStore.open({ endpoints, prefix, ...FAST, ...opts });
    closers.push(() => s.close());
    return s;
  }

  beforeAll(async () => {
    etcd = await startEtcd();
  });
  afterAll(async () => {
    for (const c of closers.reverse()) await c();
    await etcd?.destroy();
  });

  it("fails over to a reachable endpoint when one is down", async () => {
    const dead = `http://127.0.0.1:${await freePort()}`;
    const s = await open([dead, ...etcd.endpoints], newPrefix());
    const r = await s.create("/k", "v");
    expect((await s.get("/k"))?.modRevision).toBe(r);
  });

  it("moves requests and a running watch to another endpoint when the one in use is lost", async () => {
    const proxy = await TcpProxy.start(etcd.clientUrl);
    closers.push(() => proxy.close());
    const prefix = newPrefix();
    // The proxy comes first, so it is the endpoint in use until it is cut.
    const s = await open([proxy.url, etcd.clientUrl], prefix);
    const from = await s.currentRevision();
    const seen = collect(s.watch("/", from));
    const acked: number[] = [];
    for (let i = 0; i < 20; i++) acked.push(await createWithRetry(s, `/a${i}`, "v"));
    proxy.block();
    for (let i = 20; i < 40; i++) acked.push(await createWithRetry(s, `/a${i}`, "v"));
    await until(() => seen.events.length >= 40, "40 events");
    expect(seen.events.map((e) => e.revision)).toEqual(acked);
  });

  it("resumes a watch across a lost connection with no loss and no duplicate", async () => {
    const proxy = await TcpProxy.start(etcd.clientUrl);
    closers.push(() => proxy.close());
    const prefix = newPrefix();
    const viaProxy = await open([proxy.url], prefix);
    const direct = await open(etcd.endpoints, prefix);
    const from = await direct.currentRevision();
    const seen = collect(viaProxy.watch("/", from));
    const acked: number[] = [];
    for (let i = 0; i < 10; i++) acked.push(await direct.create(`/b${i}`, "v"));
    await until(() => seen.events.length >= 10, "10 events");
    proxy.block();
    for (let i = 10; i < 30; i++) acked.push(await direct.create(`/b${i}`, "v"));
    await sleep(300);
    proxy.unblock();
    for (let i = 30; i < 40; i++) acked.push(await direct.create(`/b${i}`, "v"));
    await until(() => seen.events.length >= 40, "40 events");
    await sleep(200);
    expect(seen.events.map((e) => e.revision)).toEqual(acked);
  });

  it("ends a watch with CompactedError when its gap was compacted while disconnected", async () => {
    const proxy = await TcpProxy.start(etcd.clientUrl);
    closers.push(() => proxy.close());
    const prefix = newPrefix();
    const viaProxy = await open([proxy.url], prefix);
    const direct = await open(etcd.endpoints, prefix);
    const from = await direct.currentRevision();
    const seen = collect(viaProxy.watch("/", from));
    for (let i = 0; i < 3; i++) await direct.create(`/c${i}`, "v");
    await until(() => seen.events.length >= 3, "3 events");
    const lastDelivered = seen.events[2].revision;
    proxy.block();
    for (let i = 3; i < 6; i++) await direct.create(`/c${i}`, "v");
    const compactedAt = await direct.currentRevision();
    await direct.compact(compactedAt);
    proxy.unblock();
    const err = await seen.error;
    expect(err).toBeInstanceOf(CompactedError);
    expect((err as CompactedError).compactedRevision).toBe(compactedAt);
    expect((err as CompactedError).requestedRevision).toBe(lastDelivered);
    expect(seen.events).toHaveLength(3);
    expect(await viaProxy.compactedRevision()).toBe(compactedAt);
  });

  it("keeps a watch going across etcd restarts (SIGTERM and SIGKILL) with no loss and no duplicate", async () => {
    const s = await open(etcd.endpoints, newPrefix());
    const from = await s.currentRevision();
    const seen = collect(s.watch("/", from));
    const acked: number[] = [];
    let i = 0;
    const writeSome = async (n: number) => {
      for (const end = i + n; i < end; i++) acked.push(await createWithRetry(s, `/r${i}`, `v${i}`));
    };
    await writeSome(20);
    const writer = writeSome(40);
    await sleep(50);
    await etcd.restart();
    await writer;
    await etcd.kill();
    const writer2 = writeSome(20);
    await sleep(200);
    await etcd.restart();
    await writer2;
    await writeSome(10);
    await until(() => seen.events.length >= acked.length, `${acked.length} events`);
    await sleep(200);
    expect(seen.events.map((e) => e.revision)).toEqual(acked);
    expect(seen.events.map((e) => e.key)).toEqual(acked.map((_, n) => `/r${n}`));
  });

  it("keeps every acknowledged write when etcd is killed with SIGKILL under write load", async () => {
    const prefix = newPrefix();
    const s = await open(etcd.endpoints, prefix);
    const acked = new Map<string, { value: string; revision: number }>();
    let stop = false;
    const writer = async (w: number) => {
      for (let i = 0; !stop; i++) {
        const key = `/d/${w}/${i}`;
        const value = `${w}:${i}:${"x".repeat(1000)}`;
        try {
          acked.set(key, { value, revision: await s.create(key, value) });
        } catch {
          return; // unacknowledged: may or may not have been applied
        }
      }
    };
    const writers = Array.from({ length: 20 }, (_, w) => writer(w));
    await until(() => acked.size >= 300, "300 acknowledged writes");
    await etcd.kill();
    stop = true;
    await Promise.all(writers);
    await etcd.start();
    const reopened = await open(etcd.endpoints, prefix);
    const stored = new Map<string, { value: string; revision: number }>();
    let token: string | undefined;
    do {
      const page = await reopened.list("/d/", { limit: 500, continue: token });
      for (const kv of page.items)
        stored.set(kv.key, { value: kv.value, revision: kv.modRevision });
      token = page.continue;
    } while (token);
    expect(acked.size).toBeGreaterThanOrEqual(300);
    for (const [key, want] of acked) expect(stored.get(key), key).toEqual(want);
  });

  it("fails over between the members of a 3-member cluster with a watch running", async () => {
    // Quick elections: a write caught by the loss of the leader waits for the next one.
    const cluster = await startEtcdCluster(3, [
      "--heartbeat-interval=50",
      "--election-timeout=500",
    ]);
    closers.push(() => cluster.destroy());
    const s = await open(cluster.endpoints, newPrefix(), { requestTimeoutMs: 1_500 });
    const from = await s.currentRevision();
    const seen = collect(s.watch("/", from));
    const acked: number[] = [];
    let i = 0;
    const writeSome = async (n: number) => {
      for (const end = i + n; i < end; i++) acked.push(await createWithRetry(s, `/m${i}`, "v"));
    };
    await writeSome(20);
    await cluster.members[0].kill(); // the member in use
    await writeSome(20);
    await cluster.members[0].start();
    await cluster.members[1].kill();
    await writeSome(20);
    await until(() => seen.events.length >= acked.length, `${acked.length} events`);
    await sleep(200);
    expect(seen.events.map((e) => e.revision)).toEqual(acked);
  });
});
