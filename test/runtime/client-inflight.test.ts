/**
 * The client's bound on requests in flight, observed on the wire through a
 * recording proxy in front of the real apiserver: requests beyond the bound
 * wait in the client for a connection, watches are not counted.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { KubeObject } from "../../packages/api/src/meta.ts";
import { isNotFound } from "../../packages/runtime/src/client/errors.ts";
import { MAX_REQUESTS_IN_FLIGHT } from "../../packages/runtime/src/client/transport.ts";
import { eventually } from "../helpers/poll.ts";
import { startForFile, startTestServer } from "../helpers/test-server.ts";
import { FaultServer } from "./faultserver.ts";

const CM = { apiVersion: "v1", kind: "ConfigMap" };

const env = startForFile(startTestServer);
const cleanups: (() => unknown)[] = [];

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("client requests in flight", () => {
  it("sends at most MAX_REQUESTS_IN_FLIGHT at once; the rest wait for a connection, watches are not counted", async () => {
    const fs = await FaultServer.start(env.url);
    cleanups.push(() => fs.close());
    const client = env.newClient({ server: fs.url });
    cleanups.push(() => client.close());
    // Resolve the kind first (discovery is a request too).
    await client.list(CM, { namespace: "default", limit: 1 });
    // The first MAX_REQUESTS_IN_FLIGHT gets are held by the proxy until the client
    // gives up on them; later ones are forwarded (and answered 404).
    let held = 0;
    fs.onRequest = (r) =>
      r.verb === "get" && ++held <= MAX_REQUESTS_IN_FLIGHT ? { neverAnswer: true } : undefined;
    const extra = 8;
    const stop = new AbortController();
    const heldGets = Array.from({ length: MAX_REQUESTS_IN_FLIGHT }, (_, i) =>
      client.get(CM, `held-${i}`, "default", { signal: stop.signal }).catch((e: unknown) => e),
    );
    const waiting = Array.from({ length: extra }, (_, i) =>
      client.get(CM, `waiting-${i}`, "default").catch((e: unknown) => e),
    );
    await eventually(
      async () => (fs.of("get").length >= MAX_REQUESTS_IN_FLIGHT ? true : undefined),
      "the held gets reach the server",
    );
    // A watch opened now reaches the server although every request connection is taken.
    const watch = client.watch<KubeObject>(CM, { namespace: "default" });
    cleanups.push(() => watch.close());
    const it = watch[Symbol.asyncIterator]();
    void it.next().catch(() => undefined);
    await eventually(
      async () => (fs.of("watch").length === 1 ? true : undefined),
      "the watch reaches the server",
    );
    // The gets sent after the first MAX_REQUESTS_IN_FLIGHT (before the watch) still wait.
    expect(fs.of("get")).toHaveLength(MAX_REQUESTS_IN_FLIGHT);
    // Once the held ones are given up, the waiting ones go out and are answered.
    stop.abort(new Error("given up"));
    for (const e of await Promise.all(heldGets)) expect((e as Error).message).toBe("given up");
    for (const e of await Promise.all(waiting)) expect(isNotFound(e)).toBe(true);
    expect(fs.of("get")).toHaveLength(MAX_REQUESTS_IN_FLIGHT + extra);
  });
});
