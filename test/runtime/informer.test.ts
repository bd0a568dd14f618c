import { afterEach, describe, expect, it } from "vitest";
import type { KubeObject } from "../../packages/api/src/meta.ts";
import {
  type EventHandler,
  Informer,
  type InformerOptions,
} from "../../packages/runtime/src/cache/informer.ts";
import { OWNER_UID_INDEX } from "../../packages/runtime/src/cache/object-store.ts";
import type { Client } from "../../packages/runtime/src/client/client.ts";
import { freshNamespace } from "../helpers/namespace.ts";
import { eventually } from "../helpers/poll.ts";
import { startForFile, startTestServer } from "../helpers/test-server.ts";
import { FaultProxy } from "./netfault.ts";

const CM = { apiVersion: "v1", kind: "ConfigMap" };

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

function cm(
  name: string,
  namespace: string,
  data: Record<string, string> = {},
  labels?: Record<string, string>,
): ConfigMap {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace, labels }, data };
}

const key = (o: KubeObject): string => `${o.metadata.namespace}/${o.metadata.name}`;

/**
 * Rebuilds the collection from handler calls alone and fails on any call that does
 * not fit what it was told before: an add for a key it holds, an update or delete
 * for one it does not, an update whose old object is not the one it holds, or the
 * same change delivered twice.
 */
class Shadow implements EventHandler<ConfigMap> {
  readonly objs = new Map<string, ConfigMap>();
  readonly problems: string[] = [];
  readonly log: string[] = [];
  readonly seen = new Set<string>();

  private change(o: KubeObject, what: string): void {
    const id = `${key(o)}@${o.metadata.resourceVersion}:${what}`;
    if (this.seen.has(id)) this.problems.push(`delivered twice: ${id}`);
    this.seen.add(id);
    this.log.push(id);
  }
  onAdd(o: ConfigMap): void {
    if (this.objs.has(key(o))) this.problems.push(`add of held ${key(o)}`);
    this.change(o, "add");
    this.objs.set(key(o), o);
  }
  onUpdate(old: ConfigMap, o: ConfigMap, resync: boolean): void {
    if (resync) return;
    const held = this.objs.get(key(o));
    if (!held) this.problems.push(`update of unknown ${key(o)}`);
    else if (held.metadata.resourceVersion !== old.metadata.resourceVersion) {
      this.problems.push(
        `update of ${key(o)} from ${old.metadata.resourceVersion}, held ${held.metadata.resourceVersion}`,
      );
    }
    if (old.metadata.resourceVersion === o.metadata.resourceVersion) {
      this.problems.push(`update of ${key(o)} without a change`);
    }
    this.change(o, "update");
    this.objs.set(key(o), o);
  }
  onDelete(o: ConfigMap): void {
    if (!this.objs.has(key(o))) this.problems.push(`delete of unknown ${key(o)}`);
    this.change(o, "delete");
    this.objs.delete(key(o));
  }
  /** name → resourceVersion */
  snapshot(): Record<string, string> {
    return Object.fromEntries(
      [...this.objs].map(([k, o]) => [k, o.metadata.resourceVersion ?? ""]).sort(),
    );
  }
}

async function serverState(client: Client, namespace: string): Promise<Record<string, string>> {
  const list = await client.list(CM, { namespace });
  return Object.fromEntries(
    list.items.map((o) => [key(o), o.metadata.resourceVersion ?? ""]).sort(),
  );
}

function informerState(inf: Informer<ConfigMap>): Record<string, string> {
  return Object.fromEntries(
    inf
      .list()
      .map((o) => [key(o), o.metadata.resourceVersion ?? ""])
      .sort(),
  );
}

// A small watch cache window (old versions soon answer 410) and frequent bookmarks.
const env = startForFile(() =>
  startTestServer({ limits: { watchCacheWindow: 30, bookmarkIntervalMs: 100 } }),
);
const stops: AbortController[] = [];
const proxies: FaultProxy[] = [];

/** Fast timings, so the suite stays quick: backoff from 20 ms. */
const FAST: InformerOptions<ConfigMap> = { backoffInitialMs: 20, backoffMaxMs: 200 };

function run<T extends KubeObject>(inf: Informer<T>): AbortController {
  const ac = new AbortController();
  stops.push(ac);
  inf.start(ac.signal);
  return ac;
}

afterEach(async () => {
  for (const ac of stops.splice(0)) ac.abort();
  for (const p of proxies.splice(0)) await p.close();
});

/**
 * A started informer of the ConfigMaps in `ns` whose client reaches the server
 * through a fault proxy, synced and watching, with a Shadow fed by its events.
 */
async function watchedThroughProxy(ns: string) {
  const proxy = await FaultProxy.start(env.url);
  proxies.push(proxy);
  const client = env.newClient({ server: proxy.url });
  const inf = new Informer<ConfigMap>(client, CM, { ...FAST, namespace: ns });
  const shadow = new Shadow();
  inf.addEventHandler(shadow);
  run(inf);
  await inf.waitForSync();
  await eventually(() => inf.health().watching, "watching");
  return { proxy, client, inf, shadow };
}

describe("Informer", () => {
  it("lists then watches, and hands out frozen objects through get, list and indexes", async () => {
    const ns = await freshNamespace(env.client, "inf");
    await env.client.create(cm("pre-1", ns, { v: "1" }));
    await env.client.create(cm("pre-2", ns, { v: "1" }));
    const client = env.newClient();
    const inf = new Informer<ConfigMap>(client, CM, { ...FAST, namespace: ns });
    const shadow = new Shadow();
    const initial: boolean[] = [];
    inf.addEventHandler(shadow);
    inf.addEventHandler({ onAdd: (_o, isInitial) => initial.push(isInitial) });
    run(inf);
    await inf.waitForSync();
    expect(inf.hasSynced()).toBe(true);
    expect(initial).toEqual([true, true]);
    // The first list reads resourceVersion=0 and the watch follows: one of each.
    expect(client.stats.byVerb.list).toBe(1);
    await eventually(() => inf.health().watching, "watching");
    expect(client.stats.byVerb.watch).toBe(1);

    const owner = await env.client.create(cm("owner", ns));
    const child = cm("child", ns, { v: "1" }, { app: "web" });
    child.metadata.ownerReferences = [
      { apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: owner.metadata.uid ?? "" },
    ];
    await env.client.create(child);
    await env.client.patch(CM, "pre-1", ns, { data: { v: "2" } }, { type: "merge" });
    await env.client.delete(CM, "pre-2", ns);
    await eventually(async () => {
      return (
        JSON.stringify(shadow.snapshot()) === JSON.stringify(await serverState(env.client, ns))
      );
    }, "informer to catch up");
    expect(shadow.problems).toEqual([]);
    expect(initial).toEqual([true, true, false, false]);

    const got = inf.get("pre-1", ns);
    expect(got?.data).toEqual({ v: "2" });
    expect(Object.isFrozen(got)).toBe(true);
    expect(Object.isFrozen(got?.metadata)).toBe(true);
    expect(() => {
      (got?.data as Record<string, string>).v = "mutated";
    }).toThrow(TypeError);
    expect(inf.get("pre-1", ns)?.data?.v).toBe("2");
    expect(inf.get("pre-2", ns)).toBeUndefined();
    expect(inf.list({ labelSelector: "app=web" }).map((o) => o.metadata.name)).toEqual(["child"]);
    expect(inf.list({ namespace: "elsewhere" })).toEqual([]);
    expect(
      inf.byIndex(OWNER_UID_INDEX, owner.metadata.uid ?? "").map((o) => o.metadata.name),
    ).toEqual(["child"]);
    inf.addIndex("by-v", (o) => (o.data?.v ? [o.data.v] : []));
    expect(inf.byIndex("by-v", "2").map((o) => o.metadata.name)).toEqual(["pre-1"]);
    // managedFields are stripped by default.
    expect(got?.metadata.managedFields).toBeUndefined();

    // A handler added late is told about what is already there.
    const late = new Shadow();
    const remove = inf.addEventHandler(late);
    expect(late.snapshot()).toEqual(shadow.snapshot());
    remove();
    await env.client.create(cm("after-removal", ns));
    await eventually(() => inf.get("after-removal", ns), "the new object");
    expect(late.objs.has(`${ns}/after-removal`)).toBe(false);

    const h = inf.health();
    expect(h).toMatchObject({ synced: true, watching: true, relists: 0, objects: 4 });
    expect(h.lastEventAgeMs).toBeLessThan(5_000);
  });

  it("resumes after a dropped connection from the last version, without a re-list", async () => {
    const ns = await freshNamespace(env.client, "inf");
    for (let i = 0; i < 5; i++) await env.client.create(cm(`o${i}`, ns, { v: "0" }));
    const { proxy, client, inf, shadow } = await watchedThroughProxy(ns);

    for (let round = 0; round < 3; round++) {
      proxy.block();
      await env.client.patch(
        CM,
        `o${round}`,
        ns,
        { data: { v: String(round + 1) } },
        { type: "merge" },
      );
      await env.client.create(cm(`new-${round}`, ns));
      await env.client.delete(CM, `o${4 - round}`, ns);
      proxy.unblock();
      await eventually(async () => {
        return (
          JSON.stringify(shadow.snapshot()) === JSON.stringify(await serverState(env.client, ns))
        );
      }, `informer to catch up after drop ${round}`);
    }
    expect(shadow.problems).toEqual([]);
    expect(informerState(inf)).toEqual(await serverState(env.client, ns));
    const h = inf.health();
    expect(h.relists).toBe(0);
    expect(h.rewatches).toBeGreaterThanOrEqual(3);
    expect(client.stats.byVerb.list).toBe(1);
  });

  it("survives compaction: a 410 re-lists and reconciles the copy without losing or repeating a change", async () => {
    const ns = await freshNamespace(env.client, "inf");
    for (let i = 0; i < 6; i++) await env.client.create(cm(`k${i}`, ns, { v: "0" }));
    const { proxy, inf, shadow } = await watchedThroughProxy(ns);
    const listedRv = inf.resourceVersion;

    proxy.block();
    // While the informer is away: change, delete and add objects, then push its
    // version out of the server's history (more writes than the watch cache keeps,
    // then compact storage).
    await env.client.patch(CM, "k0", ns, { data: { v: "changed" } }, { type: "merge" });
    await env.client.delete(CM, "k1", ns);
    await env.client.create(cm("born", ns));
    const other = await freshNamespace(env.client, "inf");
    for (let i = 0; i < 40; i++) await env.client.create(cm(`noise-${i}`, other));
    const current = (await env.client.list(CM, { namespace: ns })).metadata.resourceVersion ?? "0";
    await env.store.compact(Number(current));
    const unchangedBefore = new Set(shadow.log.filter((l) => /\/k[2-5]@/.test(l)));
    proxy.unblock();

    await eventually(async () => {
      return (
        JSON.stringify(shadow.snapshot()) === JSON.stringify(await serverState(env.client, ns))
      );
    }, "informer to re-list");
    expect(shadow.problems).toEqual([]);
    expect(informerState(inf)).toEqual(await serverState(env.client, ns));
    const h = inf.health();
    expect(h.relists).toBe(1);
    expect(Number(inf.resourceVersion)).toBeGreaterThan(Number(listedRv));
    // Exactly the three changes were delivered; untouched objects got no event.
    const after = shadow.log.slice(shadow.log.length - 3).map((l) => l.replace(/@\d+/, ""));
    expect(after.sort()).toEqual([`${ns}/born:add`, `${ns}/k0:update`, `${ns}/k1:delete`]);
    expect(new Set(shadow.log.filter((l) => /\/k[2-5]@/.test(l)))).toEqual(unchangedBefore);
    // The re-list after a 410 is a consistent read (no resourceVersion), so the
    // copy holds the newest k0.
    expect(inf.get("k0", ns)?.data?.v).toBe("changed");
  });

  it("treats a silent watch as dead and resumes it; bookmarks keep a quiet watch alive", async () => {
    const ns = await freshNamespace(env.client, "inf");
    const proxy = await FaultProxy.start(env.url);
    proxies.push(proxy);
    const client = env.newClient({ server: proxy.url });
    // The server sends bookmarks every 100 ms: a 600 ms deadline only trips on a dead connection.
    const inf = new Informer<ConfigMap>(client, CM, {
      ...FAST,
      namespace: ns,
      idleDeadlineMs: 600,
    });
    run(inf);
    await inf.waitForSync();
    await eventually(() => inf.health().watching, "watching");
    await new Promise((r) => setTimeout(r, 1_500));
    expect(inf.health().idleRestarts).toBe(0);
    expect(client.stats.byVerb.watch).toBe(1);

    proxy.stall();
    await env.client.create(cm("during-stall", ns));
    await eventually(
      () => inf.get("during-stall", ns),
      "the object written while the watch was silent",
    );
    const h = inf.health();
    expect(h.idleRestarts).toBe(1);
    expect(h.relists).toBe(0);
  });

  it("re-delivers every object on resync without calling the API", async () => {
    const ns = await freshNamespace(env.client, "inf");
    for (let i = 0; i < 3; i++) await env.client.create(cm(`r${i}`, ns));
    const client = env.newClient();
    const inf = new Informer<ConfigMap>(client, CM, { ...FAST, namespace: ns, resyncMs: 100 });
    const resyncs: string[] = [];
    let realUpdates = 0;
    // A handler that throws harms neither the informer nor the handlers after it.
    inf.addEventHandler({
      onUpdate: () => {
        throw new Error("handler bug");
      },
    });
    inf.addEventHandler({
      onUpdate: (old, o, isResync) => {
        if (isResync) {
          expect(old).toBe(o);
          resyncs.push(o.metadata.name ?? "");
        } else realUpdates++;
      },
    });
    run(inf);
    await inf.waitForSync();
    await eventually(() => inf.health().watching, "watching");
    const requests = client.stats.requests;
    await eventually(() => resyncs.length >= 6, "two resyncs");
    expect(new Set(resyncs)).toEqual(new Set(["r0", "r1", "r2"]));
    expect(realUpdates).toBe(0);
    expect(client.stats.requests).toBe(requests);
  });

  it("scopes by label and field selectors: objects that stop matching are deleted from the copy", async () => {
    const ns = await freshNamespace(env.client, "inf");
    await env.client.create(cm("match", ns, {}, { tier: "web" }));
    await env.client.create(cm("nomatch", ns, {}, { tier: "db" }));
    const labelled = new Informer<ConfigMap>(env.newClient(), CM, {
      ...FAST,
      namespace: ns,
      labelSelector: "tier=web",
    });
    const byName = new Informer<ConfigMap>(env.newClient(), CM, {
      ...FAST,
      fieldSelector: `metadata.name=nomatch,metadata.namespace=${ns}`,
    });
    const shadow = new Shadow();
    labelled.addEventHandler(shadow);
    run(labelled);
    run(byName);
    await Promise.all([labelled.waitForSync(), byName.waitForSync()]);
    expect(labelled.keys()).toEqual([`${ns}/match`]);
    expect(byName.keys()).toEqual([`${ns}/nomatch`]);
    await eventually(() => labelled.health().watching, "watching");

    await env.client.patch(
      CM,
      "nomatch",
      ns,
      { metadata: { labels: { tier: "web" } } },
      { type: "merge" },
    );
    await env.client.patch(
      CM,
      "match",
      ns,
      { metadata: { labels: { tier: "db" } } },
      { type: "merge" },
    );
    await eventually(() => labelled.keys().join() === `${ns}/nomatch`, "selector changes");
    expect(shadow.log.map((l) => l.replace(/@\d+/, ""))).toEqual([
      `${ns}/match:add`,
      `${ns}/nomatch:add`,
      `${ns}/match:delete`,
    ]);
    expect(shadow.problems).toEqual([]);
    await eventually(
      () => byName.get("nomatch", ns)?.metadata.labels?.tier === "web",
      "field-scoped update",
    );
  });

  it("keeps metadata only, or managedFields when asked", async () => {
    const ns = await freshNamespace(env.client, "inf");
    await env.client.create(cm("m", ns, { secret: "payload" }, { a: "b" }), {
      fieldManager: "writer",
    });
    const meta = new Informer<KubeObject>(env.newClient(), CM, {
      ...FAST,
      namespace: ns,
      metadataOnly: true,
    });
    const full = new Informer<ConfigMap>(env.newClient(), CM, {
      ...FAST,
      namespace: ns,
      stripManagedFields: false,
    });
    run(meta);
    run(full);
    await Promise.all([meta.waitForSync(), full.waitForSync()]);
    await env.client.create(cm("m2", ns, { secret: "payload" }));
    await eventually(() => meta.get("m2", ns) && full.get("m2", ns), "the second object");
    for (const name of ["m", "m2"]) {
      const o = meta.get(name, ns)!;
      expect(Object.keys(o).sort()).toEqual(["apiVersion", "kind", "metadata"]);
      expect(o).toMatchObject({ apiVersion: "v1", kind: "ConfigMap" });
      expect(o.metadata.managedFields).toBeUndefined();
      expect(Object.isFrozen(o)).toBe(true);
    }
    expect(meta.get("m", ns)?.metadata.labels).toEqual({ a: "b" });
    expect(full.get("m", ns)?.metadata.managedFields?.[0]?.manager).toBe("writer");
    expect(full.get("m", ns)?.data).toEqual({ secret: "payload" });
  });

  it("fails waitForSync when stopped before it synced", async () => {
    const inf = new Informer<ConfigMap>(
      env.newClient(),
      { apiVersion: "v1", kind: "NoSuchKind" },
      FAST,
    );
    const ac = run(inf);
    const waiting = inf.waitForSync();
    await eventually(() => inf.health().failures >= 1, "a failed list");
    ac.abort();
    await expect(waiting).rejects.toThrow(/stopped before it synced/);
    await expect(inf.waitForSync()).rejects.toThrow(/stopped before it synced/);
  });

  it("waits for its own writes to reach the cache", async () => {
    const ns = await freshNamespace(env.client, "inf");
    const inf = new Informer<ConfigMap>(env.newClient(), CM, { ...FAST, namespace: ns });
    run(inf);
    await inf.waitForSync();
    const written = await env.client.create(cm("mine", ns, { v: "1" }));
    const rv = written.metadata.resourceVersion ?? "";
    expect(await inf.waitForResourceVersion({ name: "mine", namespace: ns }, rv, 5_000)).toBe(true);
    expect(inf.get("mine", ns)?.metadata.resourceVersion).toBe(rv);
    const updated = await env.client.patch(CM, "mine", ns, { data: { v: "2" } }, { type: "merge" });
    expect(
      await inf.waitForResourceVersion(
        { name: "mine", namespace: ns },
        updated.metadata.resourceVersion ?? "",
        5_000,
      ),
    ).toBe(true);
    expect(inf.get("mine", ns)?.data?.v).toBe("2");
    // A version the cache never sees: false after the timeout.
    const far = String(Number(rv) + 1_000_000);
    expect(await inf.waitForResourceVersion({ name: "mine", namespace: ns }, far, 150)).toBe(false);
  });
});
