/**
 * The reflector's list/watch protocol, observed on the wire between the runtime
 * and the real apiserver, with faults injected by a recording proxy.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { KubeObject } from "../../packages/api/src/meta.ts";
import { Informer, type InformerOptions } from "../../packages/runtime/src/cache/informer.ts";
import type { Client } from "../../packages/runtime/src/client/client.ts";
import { UnexpectedResponseError } from "../../packages/runtime/src/client/client.ts";
import {
  isTooManyRequests,
  isTransient,
  RequestTimeoutError,
} from "../../packages/runtime/src/client/errors.ts";
import { freshNamespace } from "../helpers/namespace.ts";
import { eventually } from "../helpers/poll.ts";
import { startForFile, startTestServer } from "../helpers/test-server.ts";
import { FaultServer, statusBody } from "./faultserver.ts";

const CM = { apiVersion: "v1", kind: "ConfigMap" };

function cm(name: string, namespace: string): KubeObject {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace }, data: {} };
}

const env = startForFile(() => startTestServer({ limits: { bookmarkIntervalMs: 100 } }));
const cleanups: (() => unknown)[] = [];

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function namespace(objects = 0): Promise<string> {
  const name = await freshNamespace(env.client, "refl");
  for (let i = 0; i < objects; i++) await env.client.create(cm(`o${i}`, name));
  return name;
}

async function setup(
  ns: string,
  opts: InformerOptions<KubeObject> = {},
): Promise<{ fs: FaultServer; inf: Informer<KubeObject>; client: Client }> {
  const fs = await FaultServer.start(env.url);
  cleanups.push(() => fs.close());
  const client = env.newClient({ server: fs.url });
  const inf = new Informer<KubeObject>(client, CM, {
    namespace: ns,
    backoffInitialMs: 20,
    backoffMaxMs: 200,
    ...opts,
  });
  return { fs, inf, client };
}

function start(inf: Informer<KubeObject>): void {
  const ac = new AbortController();
  cleanups.push(() => ac.abort());
  inf.start(ac.signal);
}

describe("Reflector on the wire", () => {
  it("lists at resourceVersion=0 in pages, then watches from the list's version with bookmarks and a bounded random timeout", async () => {
    const ns = await namespace(5);
    const { fs, inf } = await setup(ns, {
      pageSize: 2,
      watchTimeoutMinSeconds: 1,
      watchTimeoutMaxSeconds: 2,
    });
    start(inf);
    await inf.waitForSync();
    expect(inf.keys()).toHaveLength(5);
    const lists = fs.of("list");
    expect(lists[0].query.get("resourceVersion")).toBe("0");
    expect(lists[0].query.get("limit")).toBe("2");
    // Any continued page carries the token and no resourceVersion.
    for (const page of lists.slice(1)) {
      expect(page.query.get("continue")).toBeTruthy();
      expect(page.query.has("resourceVersion")).toBe(false);
    }
    const watch = await eventually(() => fs.of("watch")[0], "the watch");
    expect(watch.query.get("resourceVersion")).toBe(inf.resourceVersion);
    expect(watch.query.get("allowWatchBookmarks")).toBe("true");
    const timeout = Number(watch.query.get("timeoutSeconds"));
    expect(timeout).toBeGreaterThanOrEqual(1);
    expect(timeout).toBeLessThanOrEqual(2);

    // Writes elsewhere move the server's version; bookmarks carry it to the informer,
    // so the watch that follows the server's timeout starts from there, without a list.
    const firstRv = inf.resourceVersion;
    const other = await namespace(3);
    expect(other).toBeTruthy();
    const second = await eventually(
      () => fs.of("watch")[1],
      "the watch after the server ended the first",
      5_000,
    );
    expect(Number(second.query.get("resourceVersion"))).toBeGreaterThan(Number(firstRv));
    expect(fs.of("list")).toHaveLength(lists.length);
    expect(inf.health().relists).toBe(0);
  });

  it("re-lists with a consistent read when the watch request itself answers 410", async () => {
    const ns = await namespace(2);
    const { fs, inf } = await setup(ns);
    let watches = 0;
    fs.onRequest = (r) =>
      r.verb === "watch" && ++watches === 1
        ? { status: 410, body: statusBody(410, "Expired", "too old resource version") }
        : undefined;
    start(inf);
    await inf.waitForSync();
    await eventually(
      () => fs.of("list").length === 2 && inf.health().watching,
      "a re-list and a watch",
    );
    const [first, again] = fs.of("list");
    expect(first.query.get("resourceVersion")).toBe("0");
    expect(again.query.has("resourceVersion")).toBe(false);
    expect(inf.health().relists).toBe(1);
    await env.client.create(cm("after", ns));
    await eventually(() => inf.get("after", ns), "events after the re-list");
  });

  it("backs off exponentially with jitter while lists fail, then recovers", async () => {
    const ns = await namespace(1);
    const { fs, inf } = await setup(ns, { backoffInitialMs: 40, backoffMaxMs: 1_000 });
    let lists = 0;
    fs.onRequest = (r) =>
      r.verb === "list" && ++lists <= 4
        ? { status: 500, body: statusBody(500, "InternalError", "storage is down") }
        : undefined;
    start(inf);
    await eventually(() => inf.health().failures === 4, "four failed lists");
    expect(inf.hasSynced()).toBe(false);
    expect(inf.health().lastError).toMatch(/storage is down/);
    await inf.waitForSync();
    const at = fs.of("list").map((r) => r.at);
    const gaps = at.slice(1).map((t, i) => t - at[i]);
    // Delays are at least half of 40, 80, 160, 320 ms (half fixed, half random).
    expect(gaps[0]).toBeGreaterThanOrEqual(20 - 2);
    expect(gaps[1]).toBeGreaterThanOrEqual(40 - 2);
    expect(gaps[2]).toBeGreaterThanOrEqual(80 - 2);
    expect(gaps[3]).toBeGreaterThanOrEqual(160 - 2);
    expect(inf.health().failures).toBe(0);
  });

  it("does not spin on watches that end at once, and resumes after garbage without re-listing", async () => {
    const ns = await namespace(1);
    const { fs, inf } = await setup(ns, { backoffInitialMs: 50, backoffMaxMs: 400 });
    let mode: "end" | "garbage" | "ok" = "end";
    fs.onRequest = (r) => {
      if (r.verb !== "watch") return undefined;
      if (mode === "end") return { endAtOnce: true };
      if (mode === "garbage") {
        mode = "ok";
        return { garbage: '{"type":"ADDED","object":{"metadata":{"name":"x"}}}\nthis is not json' };
      }
      return undefined;
    };
    start(inf);
    await inf.waitForSync();
    await new Promise((r) => setTimeout(r, 600));
    // Delays of at least 25, 50, 100, 200 ms: no more than 5 watches fit in 600 ms.
    expect(fs.of("watch").length).toBeLessThanOrEqual(5);
    expect(fs.of("watch").length).toBeGreaterThanOrEqual(2);

    mode = "garbage";
    await eventually(
      () => mode === "ok" && inf.health().watching,
      "a good watch after the garbage",
    );
    const watches = fs.of("watch");
    const rvs = new Set(watches.map((w) => w.query.get("resourceVersion")));
    expect(rvs.size).toBe(1);
    expect(fs.of("list")).toHaveLength(1);
    expect(inf.health().relists).toBe(0);
    await env.client.create(cm("later", ns));
    await eventually(() => inf.get("later", ns), "events on the good watch");
    // The object in the garbage's one well-formed event did arrive; the stream was then dropped.
    expect(inf.get("x")?.metadata.name).toBe("x");
  });
});

describe("Client retries", () => {
  it("honours a short Retry-After on 429 and surfaces a long one", async () => {
    const ns = await namespace(1);
    const fs = await FaultServer.start(env.url);
    cleanups.push(() => fs.close());
    const client = env.newClient({ server: fs.url });
    let n = 0;
    fs.onRequest = (r) =>
      r.verb === "list" && ++n <= 2
        ? {
            status: 429,
            body: statusBody(429, "TooManyRequests", "slow down"),
            headers: { "retry-after": "0" },
          }
        : undefined;
    const list = await client.list(CM, { namespace: ns });
    expect(list.items).toHaveLength(1);
    expect(client.stats.byVerb.list).toBe(3);

    fs.onRequest = (r) =>
      r.verb === "list"
        ? {
            status: 429,
            body: statusBody(429, "TooManyRequests", "slow down"),
            headers: { "retry-after": "3600" },
          }
        : undefined;
    const err = await client.list(CM, { namespace: ns }).catch((e: unknown) => e);
    expect(isTooManyRequests(err)).toBe(true);
    expect(
      (err as { status: { details?: { retryAfterSeconds?: number } } }).status.details
        ?.retryAfterSeconds,
    ).toBe(3600);
  });

  it("gives up on a request past its deadline, and on a 2xx body that is not JSON", async () => {
    const fs = await FaultServer.start(env.url);
    cleanups.push(() => fs.close());
    const client = env.newClient({ server: fs.url, timeoutMs: 150 });
    fs.onRequest = (r) => (r.verb === "get" ? { neverAnswer: true } : undefined);
    const err = await client.get(CM, "x", "default").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RequestTimeoutError);
    expect(isTransient(err)).toBe(true);
    fs.onRequest = (r) => (r.verb === "get" ? { garbage: "<html>hello</html>" } : undefined);
    const bad = await client.get(CM, "x", "default").catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(UnexpectedResponseError);
    expect((bad as Error).message).toMatch(/not JSON/);
  });

  it("types an answer that is not a Status by its HTTP code", async () => {
    const fs = await FaultServer.start(env.url);
    cleanups.push(() => fs.close());
    const client = env.newClient({ server: fs.url });
    fs.onRequest = (r) =>
      r.verb === "get" ? { status: 503, body: "<html>bad gateway</html>" } : undefined;
    const err = await client.get(CM, "x", "default").catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 503, reason: "ServiceUnavailable" });
    expect((err as Error).message).toMatch(/HTTP 503: "<html>bad gateway<\/html>"/);
  });
});
