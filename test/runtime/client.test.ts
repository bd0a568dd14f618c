import { beforeAll, describe, expect, it } from "vitest";
import type { KubeObject } from "../../packages/api/src/meta.ts";
import type { WatchEvent } from "../../packages/runtime/src/client/client.ts";
import {
  ApiError,
  isAlreadyExists,
  isBadRequest,
  isConflict,
  isGone,
  isInvalid,
  isNoKindMatch,
  isNotFound,
  isUnauthorized,
  retryOnConflict,
} from "../../packages/runtime/src/client/errors.ts";
import { startForFile, startTestServer } from "../helpers/test-server.ts";

const CM = { apiVersion: "v1", kind: "ConfigMap" };
const NS = { apiVersion: "v1", kind: "Namespace" };

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

function cm(name: string, namespace: string, data: Record<string, string> = {}): ConfigMap {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace }, data };
}

// A small watch cache window, so that old versions are soon out of it (410).
const env = startForFile(() => startTestServer({ limits: { watchCacheWindow: 50 } }));

beforeAll(async () => {
  await env.client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "c1" } });
});

describe("client against the apiserver", () => {
  it("creates, reads, updates and deletes, with typed errors carrying the Status", async () => {
    const created = await env.client.create(cm("a", "c1", { k: "1" }), { fieldManager: "t" });
    expect(created.metadata.uid).toBeTruthy();
    expect(created).toMatchObject({ apiVersion: "v1", kind: "ConfigMap" });

    const again = await env.client.create(cm("a", "c1")).catch((e: unknown) => e);
    expect(isAlreadyExists(again)).toBe(true);
    expect(isConflict(again)).toBe(false);
    expect((again as ApiError).status).toMatchObject({ kind: "Status", code: 409 });

    const got = await env.client.get<ConfigMap>(CM, "a", "c1");
    expect(got.data).toEqual({ k: "1" });

    const updated = await env.client.update({ ...got, data: { k: "2" } });
    expect(updated.metadata.resourceVersion).not.toBe(got.metadata.resourceVersion);
    // A write with the old resourceVersion loses.
    const stale = await env.client.update({ ...got, data: { k: "3" } }).catch((e: unknown) => e);
    expect(isConflict(stale)).toBe(true);
    expect((stale as ApiError).code).toBe(409);

    await env.client.delete(CM, "a", "c1");
    const gone = await env.client.get(CM, "a", "c1").catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(ApiError);
    expect(isNotFound(gone)).toBe(true);
    expect((gone as ApiError).status.reason).toBe("NotFound");
    expect((gone as ApiError).message).toMatch(/"a" not found/);
  });

  it("maps invalid objects, bad selectors and unknown kinds to their predicates", async () => {
    const bad = await env.client.create(cm("Not_A_Name", "c1")).catch((e: unknown) => e);
    expect(isInvalid(bad)).toBe(true);
    expect((bad as ApiError).status.details?.causes?.length).toBeGreaterThan(0);

    const sel = await env.client.list(CM, { labelSelector: "a in (" }).catch((e: unknown) => e);
    expect(isBadRequest(sel)).toBe(true);

    const kind = await env.client
      .get({ apiVersion: "v1", kind: "Nope" }, "x")
      .catch((e: unknown) => e);
    expect(isNoKindMatch(kind)).toBe(true);
    const group = await env.client
      .get({ apiVersion: "nothing.example.com/v1", kind: "Nope" }, "x")
      .catch((e: unknown) => e);
    expect(isNoKindMatch(group)).toBe(true);
  });

  it("patches with merge, JSON, strategic merge and server-side apply", async () => {
    await env.client.create(cm("p", "c1", { a: "1", b: "2" }));
    const merged = await env.client.patch<ConfigMap>(
      CM,
      "p",
      "c1",
      { data: { b: null, c: "3" } },
      {
        type: "merge",
      },
    );
    expect(merged.data).toEqual({ a: "1", c: "3" });
    const jsonPatched = await env.client.patch<ConfigMap>(
      CM,
      "p",
      "c1",
      [{ op: "replace", path: "/data/a", value: "9" }],
      { type: "json" },
    );
    expect(jsonPatched.data).toEqual({ a: "9", c: "3" });
    const strategic = await env.client.patch<ConfigMap>(
      CM,
      "p",
      "c1",
      { metadata: { labels: { x: "y" } } },
      { type: "strategic" },
    );
    expect(strategic.metadata.labels).toEqual({ x: "y" });

    const applied = await env.client.apply(cm("applied", "c1", { owned: "yes" }), {
      fieldManager: "runtime-test",
    });
    expect(applied.data).toEqual({ owned: "yes" });
    expect(applied.metadata.managedFields?.some((m) => m.manager === "runtime-test")).toBe(true);
    // Another manager setting the same field conflicts unless forced.
    const conflict = await env.client
      .apply(cm("applied", "c1", { owned: "no" }), { fieldManager: "other" })
      .catch((e: unknown) => e);
    expect(isConflict(conflict)).toBe(true);
    const forced = await env.client.apply(cm("applied", "c1", { owned: "no" }), {
      fieldManager: "other",
      force: true,
    });
    expect(forced.data).toEqual({ owned: "no" });
  });

  it("honours dry run, delete preconditions and the status subresource", async () => {
    await env.client.create(cm("dry", "c1"), { dryRun: true });
    expect(isNotFound(await env.client.get(CM, "dry", "c1").catch((e: unknown) => e))).toBe(true);

    const obj = await env.client.create(cm("pre", "c1"));
    const wrongUid = await env.client
      .delete(CM, "pre", "c1", { preconditions: { uid: "not-the-uid" } })
      .catch((e: unknown) => e);
    expect(isConflict(wrongUid)).toBe(true);
    await env.client.delete(CM, "pre", "c1", { preconditions: { uid: obj.metadata.uid } });

    const ns = await env.client.get<KubeObject>(NS, "c1");
    const status = await env.client.updateStatus({ ...ns, status: { phase: "Active" } });
    expect((status.status as { phase: string }).phase).toBe("Active");
  });

  it("retryOnConflict re-reads and wins against a concurrent writer", async () => {
    await env.client.create(cm("counter", "c1", { n: "0" }));
    const other = env.newClient();
    let attempts = 0;
    await retryOnConflict(async () => {
      attempts++;
      const cur = await env.client.get<ConfigMap>(CM, "counter", "c1");
      if (attempts === 1) {
        // Someone else writes between our read and our write.
        await other.update({ ...cur, data: { n: "100" } });
      }
      const n = Number(cur.data?.n ?? "0") + 1;
      return env.client.update({ ...cur, data: { n: String(n) } });
    });
    expect(attempts).toBe(2);
    expect((await env.client.get<ConfigMap>(CM, "counter", "c1")).data?.n).toBe("101");
    // Errors other than conflicts are not retried.
    let calls = 0;
    const err = await retryOnConflict(async () => {
      calls++;
      return env.client.get(CM, "missing", "c1");
    }).catch((e: unknown) => e);
    expect(isNotFound(err)).toBe(true);
    expect(calls).toBe(1);
  });

  it("lists in pages, by label and field selector, and as metadata only", async () => {
    await env.client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "pages" } });
    for (let i = 0; i < 23; i++) {
      const obj = cm(`item-${String(i).padStart(2, "0")}`, "pages", { big: "x".repeat(100) });
      obj.metadata.labels = { parity: i % 2 === 0 ? "even" : "odd" };
      await env.client.create(obj);
    }
    const first = await env.client.list<ConfigMap>(CM, { namespace: "pages", limit: 10 });
    expect(first.items).toHaveLength(10);
    expect(first.metadata.continue).toBeTruthy();
    expect(first.items[0]).toMatchObject({ apiVersion: "v1", kind: "ConfigMap" });
    const before = env.client.stats.byVerb.list ?? 0;
    const all = await env.client.listAll<ConfigMap>(CM, { namespace: "pages", limit: 10 });
    expect(env.client.stats.byVerb.list - before).toBe(3);
    expect(all.items.map((o) => o.metadata.name)).toEqual(
      Array.from({ length: 23 }, (_, i) => `item-${String(i).padStart(2, "0")}`),
    );
    expect(all.metadata.continue).toBeUndefined();

    const odd = await env.client.list(CM, { namespace: "pages", labelSelector: "parity=odd" });
    expect(odd.items).toHaveLength(11);
    const one = await env.client.list(CM, { fieldSelector: "metadata.name=item-07" });
    expect(one.items.map((o) => `${o.metadata.namespace}/${o.metadata.name}`)).toEqual([
      "pages/item-07",
    ]);

    const meta = await env.client.list(CM, { namespace: "pages", metadataOnly: true, limit: 5 });
    expect(meta.items).toHaveLength(5);
    for (const item of meta.items) {
      expect(Object.keys(item).sort()).toEqual(["apiVersion", "kind", "metadata"]);
      expect(item).toMatchObject({ apiVersion: "v1", kind: "ConfigMap" });
      expect(item.metadata.labels?.parity).toBeTruthy();
    }
    const metaOne = await env.client.get(CM, "item-01", "pages", { metadataOnly: true });
    expect(metaOne).not.toHaveProperty("data");
    expect(metaOne.metadata.name).toBe("item-01");
  });

  it("watches from a resourceVersion, and a compacted version answers 410", async () => {
    await env.client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "w" } });
    const list = await env.client.list(CM, { namespace: "w" });
    const stream = env.client.watch<ConfigMap>(CM, {
      namespace: "w",
      resourceVersion: list.metadata.resourceVersion,
      allowWatchBookmarks: true,
    });
    await env.client.create(cm("x", "w", { v: "1" }));
    await env.client.patch(CM, "x", "w", { data: { v: "2" } }, { type: "merge" });
    await env.client.delete(CM, "x", "w");
    const seen: string[] = [];
    for await (const ev of stream) {
      if (ev.type === "BOOKMARK") continue;
      if (ev.type === "ERROR") throw new Error(ev.object.message);
      seen.push(`${ev.type}:${ev.object.data?.v}`);
      expect(ev.object.kind).toBe("ConfigMap");
      if (seen.length === 3) break;
    }
    expect(seen).toEqual(["ADDED:1", "MODIFIED:2", "DELETED:2"]);
    expect(stream.done).toBe(true);

    // A version long gone: the server says so with a 410, as an ERROR event or an HTTP answer.
    for (let i = 0; i < 60; i++) await env.client.create(cm(`fill-${i}`, "w"));
    const old = env.client.watch(CM, { namespace: "w", resourceVersion: "1", idleTimeoutMs: 5000 });
    let expired: unknown;
    try {
      for await (const ev of old) {
        if (ev.type === "ERROR") {
          expired = new ApiError(ev.object);
          break;
        }
      }
    } catch (e) {
      expired = e;
    }
    expect(isGone(expired)).toBe(true);
  });

  it("counts requests by verb", async () => {
    const c = env.newClient();
    await c.list(CM, { namespace: "c1" });
    await c.get(NS, "c1");
    await c.create(cm("counted", "c1"));
    await c.delete(CM, "counted", "c1");
    expect(c.stats.byVerb).toEqual({ discovery: 1, list: 1, get: 1, create: 1, delete: 1 });
    expect(c.stats.requests).toBe(5);
  });

  it("speaks https with a CA and a bearer token, and is refused without the token", async () => {
    const secure = await startTestServer({ tls: true });
    try {
      const ok = secure.newClient();
      const list = await ok.list(NS);
      expect(list.items.map((n) => n.metadata.name)).toContain("default");
      const anon = secure.newClient({ token: undefined });
      const err = await anon.list(NS).catch((e: unknown) => e);
      expect(isUnauthorized(err)).toBe(true);
      const events: WatchEvent[] = [];
      const w = ok.watch(NS, { resourceVersion: list.metadata.resourceVersion });
      await ok.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "tls-ns" } });
      for await (const ev of w) {
        events.push(ev);
        break;
      }
      expect(events[0]).toMatchObject({ type: "ADDED", object: { metadata: { name: "tls-ns" } } });
    } finally {
      await secure.stop();
    }
  });
});
