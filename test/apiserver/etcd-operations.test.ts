/**
 * Operating the apiserver on a real etcd: periodic history compaction as
 * kube-apiserver does it, a full etcd (NOSPACE alarm) answered as a retryable server
 * error, and /readyz failing while etcd cannot be reached.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type ApiServer, startApiServer } from "../../src/apiserver/server/server.ts";
import { COMPACT_REV_KEY, Compactor, EtcdClient, EtcdStore } from "../../src/storage/etcd/index.ts";
import { request, type Target } from "../e2e/helpers/http.ts";
import { describeWithEtcd, type EtcdProcess, startEtcd } from "../helpers/etcd.ts";
import { eventually } from "../helpers/poll.ts";

const prefix = () => `/setpoint-ops-${randomBytes(4).toString("hex")}/`;

describeWithEtcd("etcd history compaction", () => {
  let etcd: EtcdProcess;
  const clients: EtcdClient[] = [];
  const stores: EtcdStore[] = [];
  beforeAll(async () => {
    etcd = await startEtcd();
  });
  afterAll(async () => {
    for (const s of stores) await s.close();
    for (const c of clients) c.close();
    await etcd?.destroy();
  });
  const client = () => {
    const c = new EtcdClient({
      endpoints: etcd.endpoints,
      dialTimeoutMs: 5_000,
      requestTimeoutMs: 10_000,
    });
    clients.push(c);
    return c;
  };

  it("compacts to the revision seen one turn earlier, one compactor per turn", async () => {
    const store = await EtcdStore.open({ endpoints: etcd.endpoints, prefix: prefix() });
    stores.push(store);
    const compacted: number[] = [];
    const a = new Compactor({
      client: client(),
      intervalMs: 60_000,
      onCompacted: (r) => compacted.push(r),
    });
    const b = new Compactor({
      client: client(),
      intervalMs: 60_000,
      onCompacted: (r) => compacted.push(r),
    });
    await store.create("/k/0", "v");
    // First turn: a records where it stands and compacts nothing.
    await a.turn();
    const firstTurn = await store.currentRevision();
    expect(compacted).toEqual([]);
    expect(await store.compactedRevision()).toBe(0);
    // b's first turn loses to a's (the key's version moved): b only catches up.
    await b.turn();
    for (let i = 1; i <= 5; i++) await store.create(`/k/${i}`, "v");
    const secondTurn = await store.currentRevision();
    // a's second turn compacts to what it saw at its first.
    await a.turn();
    expect(compacted).toEqual([firstTurn]);
    expect(await store.compactedRevision()).toBe(firstTurn);
    // Revisions after it are still readable; the newest interval of history is kept.
    expect((await store.get("/k/1", { revision: secondTurn }))?.value).toBe("v");
    await expect(store.get("/k/0", { revision: firstTurn - 1 })).rejects.toThrow(/compacted/);
    // b lost that turn to a again, so it only follows; the turn after is b's, and it
    // compacts to the revision b saw when it followed.
    await b.turn();
    expect(compacted.length).toBe(1);
    const bSaw = await store.currentRevision();
    await store.create("/k/6", "v");
    await b.turn();
    expect(compacted).toEqual([firstTurn, bSaw]);
    const key = await client().range({ key: COMPACT_REV_KEY });
    expect(key.kvs[0]?.version).toBe(3);
  });

  it("runs by itself on an interval when the store is asked to", async () => {
    const store = await EtcdStore.open({
      endpoints: etcd.endpoints,
      prefix: prefix(),
      compactionIntervalMs: 100,
    });
    stores.push(store);
    const start = await store.compactedRevision();
    const written = await store.create("/k/a", "1");
    await store.update("/k/a", "2", written);
    const compacted = await eventually(async () => {
      const c = await store.compactedRevision();
      return c >= written ? c : 0;
    }, "a periodic compaction past the writes");
    expect(compacted).toBeGreaterThan(start);
    expect((await store.get("/k/a"))?.value).toBe("2");
  });
});

describeWithEtcd("a full etcd (NOSPACE alarm)", () => {
  let etcd: EtcdProcess;
  let store: EtcdStore;
  let server: ApiServer;
  let target: Target;
  beforeAll(async () => {
    etcd = await startEtcd({ extraArgs: ["--quota-backend-bytes=4194304"] });
    store = await EtcdStore.open({ endpoints: etcd.endpoints, prefix: prefix() });
    server = await startApiServer({ store, port: 0, storageCheckName: "etcd" });
    target = { url: server.url };
    const ns = await request(target, "POST", "/api/v1/namespaces", {
      body: { apiVersion: "v1", kind: "Namespace", metadata: { name: "default" } },
    });
    expect(ns.code).toBe(201);
  });
  afterAll(async () => {
    await server?.close();
    await store?.close();
    await etcd?.destroy();
  });

  it("answers writes with a 500 InternalError and Retry-After, as kube-apiserver's message says", async () => {
    const big = "x".repeat(900 * 1024);
    let refused: Awaited<ReturnType<typeof request>> | undefined;
    for (let i = 0; i < 40 && !refused; i++) {
      const r = await request(target, "POST", "/api/v1/namespaces/default/configmaps", {
        body: {
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: `big-${i}` },
          data: { big },
        },
      });
      if (r.code !== 201) refused = r;
    }
    expect(refused, "etcd never ran out of space").toBeDefined();
    expect(refused?.code).toBe(500);
    expect(refused?.json).toMatchObject({
      kind: "Status",
      status: "Failure",
      reason: "InternalError",
      code: 500,
      message: "Internal error occurred: etcdserver: mvcc: database space exceeded",
      details: { retryAfterSeconds: 1 },
    });
    expect(refused?.headers["retry-after"]).toBe("1");
    // Reads still work.
    const got = await request(target, "GET", "/api/v1/namespaces/default/configmaps/big-0");
    expect(got.code).toBe(200);
  });
});

describeWithEtcd("/readyz while etcd cannot be reached", () => {
  let etcd: EtcdProcess;
  let store: EtcdStore;
  let server: ApiServer;
  let target: Target;
  beforeAll(async () => {
    etcd = await startEtcd();
    store = await EtcdStore.open({ endpoints: etcd.endpoints, prefix: prefix() });
    server = await startApiServer({ store, port: 0, storageCheckName: "etcd" });
    target = { url: server.url };
  });
  afterAll(async () => {
    await server?.close();
    await store?.close();
    await etcd?.destroy();
  });

  it("lists its checks, fails the etcd check during the outage, and recovers", async () => {
    await eventually(async () => (await request(target, "GET", "/readyz")).code === 200, "ready");
    const verbose = await request(target, "GET", "/readyz?verbose");
    expect(verbose.code).toBe(200);
    expect(verbose.text).toBe(
      "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]informer-sync ok\n[+]shutdown ok\nreadyz check passed\n",
    );
    expect((await request(target, "GET", "/readyz/etcd")).text).toBe("ok");
    const live = await request(target, "GET", "/livez?verbose");
    expect(live.text).toBe("[+]ping ok\n[+]log ok\nlivez check passed\n");
    expect((await request(target, "GET", "/readyz/nonesuch")).code).toBe(404);

    await etcd.kill();
    const down = await request(target, "GET", "/readyz");
    expect(down.code).toBe(500);
    expect(down.text).toContain("[-]etcd failed: reason withheld\n");
    expect(down.text).toContain("[+]ping ok\n");
    expect(down.text.endsWith("readyz check failed\n")).toBe(true);
    expect((await request(target, "GET", "/readyz/etcd")).code).toBe(500);
    const excluded = await request(target, "GET", "/readyz?exclude=etcd&verbose");
    expect(excluded.code).toBe(200);
    expect(excluded.text).toContain("[+]etcd excluded: ok\n");
    // Liveness does not depend on etcd: restarting the process would not help.
    expect((await request(target, "GET", "/livez")).code).toBe(200);

    await etcd.start();
    await eventually(
      async () => (await request(target, "GET", "/readyz")).code === 200,
      "ready again after etcd is back",
      30_000,
    );
  }, 60_000);
});
