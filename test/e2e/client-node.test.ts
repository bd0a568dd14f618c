/**
 * The official JavaScript client, @kubernetes/client-node, against the apiserver
 * over https with a generated CA and token, configured from a kubeconfig file:
 * ConfigMap CRUD through CoreV1Api, and an informer (makeInformer, client-node's
 * ListWatch) that survives a dropped connection (it re-watches from its
 * resourceVersion) and a 410 (it re-lists), ending with the server's contents.
 */
import { join } from "node:path";
import {
  ADD,
  ApiException,
  CONNECT,
  CoreV1Api,
  DELETE,
  ERROR,
  KubeConfig,
  makeInformer,
  PatchStrategy,
  setHeaderOptions,
  UPDATE,
  type V1ConfigMap,
  type V1Status,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeKubeconfig } from "../../src/apiserver/server/index.ts";
import { TcpProxy } from "../helpers/etcd.ts";
import { request, until } from "./helpers/http.ts";
import { type E2eServer, startE2eServer } from "./helpers/server.ts";

/** Events the server's watch cache keeps (small, so a short outage can outrun it). */
const WATCH_CACHE_WINDOW = 20;
/** How long the informer's error handler waits before starting it again. */
const INFORMER_RESTART_MS = 100;

function kubeConfig(path: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  return kc;
}

/** Runs `op`, expecting an ApiException; returns its code and body. */
async function apiError(op: () => Promise<unknown>): Promise<{ code: number; body: V1Status }> {
  try {
    await op();
  } catch (err) {
    if (err instanceof ApiException) {
      const body = typeof err.body === "string" ? JSON.parse(err.body) : err.body;
      // undefined where client-node's API spec declares no body for the code
      return { code: err.code, body: body as V1Status };
    }
    throw err;
  }
  throw new Error("expected an ApiException");
}

describe("client-node CoreV1Api over https", () => {
  let srv: E2eServer;
  let api: CoreV1Api;
  const namespace = "crud";

  beforeAll(async () => {
    srv = await startE2eServer({ tls: true });
    api = kubeConfig(srv.kubeconfig).makeApiClient(CoreV1Api);
    await api.createNamespace({ body: { metadata: { name: namespace } } });
  });
  afterAll(async () => {
    await srv?.close();
  });

  it("the kubeconfig reaches the server with its CA and token", () => {
    const kc = kubeConfig(srv.kubeconfig);
    expect(kc.getCurrentCluster()?.server).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(kc.getCurrentCluster()?.caData).toBeTruthy();
    expect(kc.getCurrentUser()?.token).toBe(srv.target.token);
  });

  it("creates, reads, lists, replaces, patches (three types) and deletes ConfigMaps", async () => {
    const created = await api.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "one", labels: { app: "crud" } }, data: { a: "1" } },
    });
    expect(created.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.metadata?.creationTimestamp).toBeInstanceOf(Date);
    expect(created.data).toEqual({ a: "1" });
    await api.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "two", labels: { app: "other" } } },
    });

    const read = await api.readNamespacedConfigMap({ name: "one", namespace });
    expect(read.metadata?.resourceVersion).toBe(created.metadata?.resourceVersion);
    const listed = await api.listNamespacedConfigMap({ namespace, labelSelector: "app=crud" });
    expect(listed.items.map((c) => c.metadata?.name)).toEqual(["one"]);
    expect(Number(listed.metadata?.resourceVersion)).toBeGreaterThanOrEqual(
      Number(created.metadata?.resourceVersion),
    );

    const replaced = await api.replaceNamespacedConfigMap({
      name: "one",
      namespace,
      body: { ...read, data: { a: "2" } },
    });
    expect(replaced.data).toEqual({ a: "2" });
    expect(Number(replaced.metadata?.resourceVersion)).toBeGreaterThan(
      Number(read.metadata?.resourceVersion),
    );

    // A replace from the stale copy: 409 with a full Status.
    const conflict = await apiError(() =>
      api.replaceNamespacedConfigMap({
        name: "one",
        namespace,
        body: { ...read, data: { a: "x" } },
      }),
    );
    expect(conflict.code).toBe(409);
    expect(conflict.body).toMatchObject({
      kind: "Status",
      status: "Failure",
      reason: "Conflict",
      code: 409,
      details: { name: "one", kind: "configmaps" },
    });
    expect(conflict.body.message).toContain("the object has been modified");

    const merge = await api.patchNamespacedConfigMap(
      { name: "one", namespace, body: { data: { m: "merge" } } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    expect(merge.data).toEqual({ a: "2", m: "merge" });
    const json = await api.patchNamespacedConfigMap(
      {
        name: "one",
        namespace,
        body: [
          { op: "test", path: "/data/a", value: "2" },
          { op: "remove", path: "/data/a" },
        ],
      },
      setHeaderOptions("Content-Type", PatchStrategy.JsonPatch),
    );
    expect(json.data).toEqual({ m: "merge" });
    const strategic = await api.patchNamespacedConfigMap(
      { name: "one", namespace, body: { metadata: { labels: { tier: "s" } }, data: { s: "1" } } },
      setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch),
    );
    expect(strategic.metadata?.labels).toEqual({ app: "crud", tier: "s" });
    expect(strategic.data).toEqual({ m: "merge", s: "1" });
    const failedTest = await apiError(() =>
      api.patchNamespacedConfigMap(
        { name: "one", namespace, body: [{ op: "test", path: "/data/m", value: "nope" }] },
        setHeaderOptions("Content-Type", PatchStrategy.JsonPatch),
      ),
    );
    expect(failedTest.code).toBe(422);
    expect(failedTest.body.kind).toBe("Status");

    const dry = await api.createNamespacedConfigMap({
      namespace,
      dryRun: "All",
      body: { metadata: { name: "dry" } },
    });
    expect(dry.metadata?.name).toBe("dry");

    const deleted = await api.deleteNamespacedConfigMap({ name: "one", namespace });
    expect(deleted.status).toBe("Success");
    expect(deleted.details?.name).toBe("one");
    const gone = await apiError(() => api.readNamespacedConfigMap({ name: "one", namespace }));
    expect(gone.code).toBe(404);
    expect(gone.body).toMatchObject({ kind: "Status", reason: "NotFound", code: 404 });
    const absent = await apiError(() => api.readNamespacedConfigMap({ name: "dry", namespace }));
    expect(absent.code).toBe(404);
    const remaining = await api.listNamespacedConfigMap({ namespace });
    expect(remaining.items.map((c) => c.metadata?.name)).toEqual(["two"]);
  });

  it("answers a bad token with 401", async () => {
    const kc = kubeConfig(srv.kubeconfig);
    const user = kc.getCurrentUser();
    if (!user) throw new Error("no user in kubeconfig");
    (user as { token?: string }).token = "wrong";
    const refused = await apiError(() =>
      kc.makeApiClient(CoreV1Api).listNamespacedConfigMap({ namespace }),
    );
    // (client-node keeps no body for a 401 on this endpoint: its API spec declares none.)
    expect(refused.code).toBe(401);
  });
});

describe("client-node informer", () => {
  let srv: E2eServer;
  let proxy: TcpProxy;
  let admin: CoreV1Api;
  const namespace = "informed";

  beforeAll(async () => {
    srv = await startE2eServer({ tls: true, limits: { watchCacheWindow: WATCH_CACHE_WINDOW } });
    proxy = await TcpProxy.start(srv.url);
    admin = kubeConfig(srv.kubeconfig).makeApiClient(CoreV1Api);
    await admin.createNamespace({ body: { metadata: { name: namespace } } });
    await admin.createNamespace({ body: { metadata: { name: "noise" } } });
  });
  afterAll(async () => {
    await proxy?.close();
    await srv?.close();
  });

  const cm = (name: string, v = "0"): V1ConfigMap => ({ metadata: { name }, data: { v } });
  const update = (name: string, v: string) =>
    admin.patchNamespacedConfigMap(
      { name, namespace, body: { data: { v } } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );

  /** name → resourceVersion/data.v of every ConfigMap in the namespace, read from the server. */
  async function serverState(): Promise<Record<string, string>> {
    const r = await request(srv.target, "GET", `/api/v1/namespaces/${namespace}/configmaps`);
    const list = r.json as { items: V1ConfigMap[] };
    return Object.fromEntries(
      list.items.map((c) => [c.metadata?.name, `${c.metadata?.resourceVersion}/${c.data?.v}`]),
    );
  }

  it("re-watches after a dropped connection and re-lists after a 410, ending with the server's contents", async () => {
    for (const name of ["a", "b", "c"]) {
      await admin.createNamespacedConfigMap({ namespace, body: cm(name) });
    }
    // The informer reaches the server through a proxy the test can cut.
    const proxied = join(srv.dir, "kubeconfig-proxied");
    await writeKubeconfig(proxied, {
      server: `https://127.0.0.1:${proxy.port}`,
      caCert: srv.target.ca,
      token: srv.target.token,
    });
    const kc = kubeConfig(proxied);
    const api = kc.makeApiClient(CoreV1Api);
    let lists = 0;
    const informer = makeInformer<V1ConfigMap>(
      kc,
      `/api/v1/namespaces/${namespace}/configmaps`,
      () => {
        lists++;
        return api.listNamespacedConfigMap({ namespace });
      },
    );
    const log: string[] = [];
    const record = (what: string) => (obj: V1ConfigMap) =>
      log.push(`${what} ${obj.metadata?.name} ${obj.data?.v}`);
    informer.on(ADD, record("add"));
    informer.on(UPDATE, record("update"));
    informer.on(DELETE, record("delete"));
    let errors = 0;
    let connects = 0;
    let stopped = false;
    // client-node's informer stops on errors other than 410; its users start it again.
    informer.on(ERROR, () => {
      errors++;
      if (!stopped) setTimeout(() => !stopped && void informer.start(), INFORMER_RESTART_MS);
    });
    informer.on(CONNECT, () => {
      connects++;
    });
    const cache = () =>
      Object.fromEntries(
        informer
          .list(namespace)
          .map((c) => [c.metadata?.name, `${c.metadata?.resourceVersion}/${c.data?.v}`]),
      );
    const inSync = async () => JSON.stringify(cache()) === JSON.stringify(await serverState());

    try {
      await informer.start();
      await until(() => Object.keys(cache()).length === 3, "the informer's first list");
      expect(log.sort()).toEqual(["add a 0", "add b 0", "add c 0"]);
      // The watch is open once an event written now arrives.
      await update("c", "1");
      await until(() => log.includes("update c 1"), "the informer's watch");
      log.length = 0;

      // 1. A dropped connection: changes made meanwhile arrive when it comes back,
      // from the informer's resourceVersion (still in the server's window): no re-list.
      proxy.block();
      await until(() => errors > 0, "the informer to notice the cut");
      await update("a", "1");
      await admin.deleteNamespacedConfigMap({ name: "b", namespace });
      await admin.createNamespacedConfigMap({ namespace, body: cm("d") });
      proxy.unblock();
      await until(inSync, "the informer to catch up after the dropped connection");
      expect(lists).toBe(1);
      expect(log).toEqual(["update a 1", "delete b 0", "add d 0"]);
      expect(Object.keys(cache()).sort()).toEqual(["a", "c", "d"]);
      log.length = 0;

      // 2. A longer outage: more writes than the server's window keeps, and storage
      // compacted. Re-watching from the informer's version gets 410; it re-lists.
      const errorsBefore = errors;
      proxy.block();
      await until(() => errors > errorsBefore, "the informer to notice the second cut");
      await update("c", "2");
      await admin.deleteNamespacedConfigMap({ name: "a", namespace });
      await admin.createNamespacedConfigMap({ namespace, body: cm("e") });
      for (let i = 0; i < WATCH_CACHE_WINDOW + 5; i++) {
        await admin.createNamespacedConfigMap({ namespace: "noise", body: cm(`n${i}`) });
      }
      const current = await admin.listNamespacedConfigMap({ namespace });
      await srv.store.compact(Number(current.metadata?.resourceVersion));
      const connectsBefore = connects;
      proxy.unblock();
      await until(inSync, "the informer to re-list after the 410");
      expect(lists).toBe(2);
      expect(connects).toBeGreaterThan(connectsBefore);
      expect(log.sort()).toEqual(["add e 0", "delete a 1", "update c 2"]);
      expect(Object.keys(cache()).sort()).toEqual(["c", "d", "e"]);

      // And it keeps watching after the re-list.
      await admin.createNamespacedConfigMap({ namespace, body: cm("f") });
      await until(inSync, "the informer to see a write after the re-list");
      expect(informer.get("f", namespace)?.data).toEqual({ v: "0" });
    } finally {
      stopped = true;
      await informer.stop();
    }
  }, 60_000);
});
