/**
 * In-process connections (src/apiserver/server/in-process.ts): a client given a
 * TLS server's connect() and a process token reaches it through memory, as
 * `setpoint up`'s controllers do. Requests authenticate by their credentials as
 * over the network; connections are kept alive; a watch that is not read holds
 * the server's buffer until the slow-watcher bound cuts it off; either end
 * closing closes the other; a closed server refuses new connections.
 */
import type { KubeObject } from "@setpoint/api";
import { Client } from "@setpoint/runtime";
import { afterEach, describe, expect, it } from "vitest";
import { MemorySocket } from "../../src/apiserver/server/in-process.ts";
import { eventually } from "../helpers/poll.ts";
import { startForFile, startTestServer } from "../helpers/test-server.ts";

const SLOW_WATCHER_BYTES = 64 * 1024;
const WATCH_DRAIN_MS = 200;
const CM = { apiVersion: "v1", kind: "ConfigMap" } as const;
// In system:masters, so that RBAC lets it do anything.
const COMPONENT = { name: "system:test-component", groups: ["system:masters"] };

const s = startForFile(() =>
  startTestServer({
    tls: true,
    limits: { slowWatcherBytes: SLOW_WATCHER_BYTES, watchDrainMs: WATCH_DRAIN_MS },
  }),
);

const clients: Client[] = [];
afterEach(() => {
  for (const c of clients.splice(0)) c.close();
});

/** A client over in-process connections, counting the connections it opens. */
function inProcessClient(token: string | undefined): { client: Client; opened: () => number } {
  let opened = 0;
  const client = new Client({
    server: s.url,
    connect: () => {
      opened++;
      return s.server.connect();
    },
    ...(token ? { token } : {}),
  });
  clients.push(client);
  return { client, opened: () => opened };
}

/** Sends a raw HTTP/1.1 request over a new in-process connection; the connection is returned. */
function rawRequest(path: string, token?: string) {
  const socket = s.server.connect();
  const auth = token ? `Authorization: Bearer ${token}\r\n` : "";
  socket.write(`GET ${path} HTTP/1.1\r\nHost: in-process\r\n${auth}\r\n`);
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.on("error", () => {});
  return { socket, closed };
}

/** Everything `socket` sends until it closes or `until` matches it. */
function readAll(socket: ReturnType<typeof s.server.connect>, until: RegExp): Promise<string> {
  return new Promise((resolve) => {
    let text = "";
    const done = () => resolve(text);
    socket.on("data", (b: Buffer) => {
      text += b.toString("latin1");
      if (until.test(text)) done();
    });
    socket.once("close", done);
  });
}

const whoami = async (client: Client) =>
  (
    await client.create<KubeObject & { status?: { userInfo?: { username?: string } } }>({
      apiVersion: "authentication.k8s.io/v1",
      kind: "SelfSubjectReview",
      metadata: {},
    })
  ).status?.userInfo;

describe("a client over in-process connections", () => {
  it("is the user of its process token, and keeps its connection alive", async () => {
    const token = s.server.processToken(COMPONENT);
    expect(token).toBeDefined();
    const { client, opened } = inProcessClient(token);
    expect(await whoami(client)).toMatchObject({
      username: COMPONENT.name,
      groups: [...COMPONENT.groups, "system:authenticated"],
    });
    // The same user gets the same token.
    expect(s.server.processToken(COMPONENT)).toBe(token);
    const before = opened();
    for (let i = 0; i < 50; i++) await client.list(CM, { namespace: "default" });
    expect(opened()).toBe(before);
  });

  it("without credentials is anonymous, answered as over the network", async () => {
    const r = rawRequest("/api/v1/namespaces/default/configmaps");
    const text = await readAll(r.socket, /\r\n0\r\n\r\n|"code":\d+}\s*$/);
    r.socket.destroy();
    const overTls = await fetchAnonymously("/api/v1/namespaces/default/configmaps");
    expect(text.split("\r\n")[0]).toBe(`HTTP/1.1 ${overTls.status} ${overTls.statusText}`);
    expect(text).toContain(`"code":${overTls.status}`);
  });

  it("a process token is not one TokenReview accepts", async () => {
    const token = s.server.processToken(COMPONENT) ?? "";
    const review = await s.client.create<KubeObject & { status?: { authenticated?: boolean } }>({
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenReview",
      metadata: {},
      spec: { token },
    } as KubeObject);
    expect(review.status?.authenticated).not.toBe(true);
  });

  it("watches, and a stopped watch ends on the server", async () => {
    const { client } = inProcessClient(s.token);
    const seen: string[] = [];
    const ac = new AbortController();
    const watching = (async () => {
      try {
        for await (const e of client.watch<KubeObject>(CM, {
          namespace: "default",
          signal: ac.signal,
        })) {
          if (e.type === "ADDED") seen.push(e.object.metadata.name ?? "");
        }
      } catch {
        // aborted
      }
    })();
    await eventually(async () => (await watchers()) === 1 || undefined, "the watch registered");
    await s.client.create({ ...CM, metadata: { name: "seen-1", namespace: "default" } });
    await eventually(() => seen.includes("seen-1") || undefined, "the event");
    ac.abort();
    await watching;
    await eventually(async () => (await watchers()) === 0 || undefined, "the watch ended");
  });
});

describe("backpressure", () => {
  it("a watch that is not read is cut off at the slow-watcher bound", async () => {
    // Never read: the server's writes wait on this end, and its buffer grows.
    const r = rawRequest("/api/v1/namespaces/default/configmaps?watch=1", s.token);
    r.socket.pause();
    const data = { blob: "x".repeat(8 * 1024) };
    // Five times the bound: were writes done before this end took them, nothing would grow.
    for (let i = 0; i < 40; i++) {
      await s.client.create({ ...CM, metadata: { name: `slow-${i}`, namespace: "default" }, data });
    }
    // Cut off: ended, then closed when the drain time passed with nothing taken.
    await r.closed;
    expect(r.socket.readableLength).toBeLessThan(SLOW_WATCHER_BYTES);
  });
});

describe("closing", () => {
  it("either end closing closes the other", async () => {
    const [client, server] = MemorySocket.pair();
    const serverClosed = new Promise((resolve) => server.once("close", resolve));
    client.destroy();
    await serverClosed;
    const [c2, s2] = MemorySocket.pair();
    const got = readAll(c2, /$^/);
    s2.end("bye");
    expect(await got).toBe("bye");
  });

  it("an idle connection times out as a socket does", async () => {
    const [client] = MemorySocket.pair();
    const t0 = Date.now();
    await new Promise<void>((resolve) => client.setTimeout(50, resolve));
    expect(Date.now() - t0).toBeGreaterThanOrEqual(45);
    client.destroy();
  });

  it("a stopped server closes its in-process connections and refuses new ones", async () => {
    const other = await startTestServer({ tls: true });
    const socket = other.server.connect();
    socket.on("error", () => {});
    socket.write(
      `GET /api/v1/namespaces/default/configmaps?watch=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${other.token}\r\n\r\n`,
    );
    const closed = new Promise((resolve) => socket.once("close", resolve));
    // A ConfigMap to be told of, so the watch's headers come with it.
    await other.client.create({ ...CM, metadata: { name: "there", namespace: "default" } });
    await readAll(socket, /200 OK/);
    await other.stop();
    await closed;
    let refused: unknown;
    try {
      other.server.connect();
    } catch (err) {
      refused = err;
    }
    expect((refused as NodeJS.ErrnoException | undefined)?.code).toBe("ECONNREFUSED");
  });
});

/** The server's open watches of ConfigMaps (its apiserver_longrunning_requests gauge). */
async function watchers(): Promise<number> {
  const { text } = await s.client.raw("GET", "/metrics");
  let n = 0;
  for (const line of text.split("\n")) {
    if (
      line.startsWith("apiserver_longrunning_requests{") &&
      line.includes('resource="configmaps"')
    ) {
      n += Number(line.slice(line.lastIndexOf(" ") + 1));
    }
  }
  return n;
}

/** An https request with no credentials. */
async function fetchAnonymously(path: string): Promise<{ status: number; statusText: string }> {
  const https = await import("node:https");
  return new Promise((resolve, reject) => {
    const req = https.request(`${s.url}${path}`, { ca: s.caCert, method: "GET" }, (res) => {
      res.resume();
      res.once("end", () =>
        resolve({ status: res.statusCode ?? 0, statusText: res.statusMessage ?? "" }),
      );
    });
    req.once("error", reject);
    req.end();
  });
}
