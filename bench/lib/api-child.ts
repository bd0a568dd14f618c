/**
 * A server for the API benchmark, run as a child process so that the load the
 * benchmark generates does not share the server's event loop. The benchmark runs it
 * compiled, bundled by scripts/build.mjs as the `setpoint` command is (see
 * child-server.ts):
 *
 *   node --expose-gc <bundle dir>/api-child.mjs api|bare [--tls] [--volatile] [--auth]
 *
 * or from the sources, `node --import tsx --expose-gc bench/lib/api-child.ts ...`.
 *
 * - `api`: the Setpoint apiserver as `setpoint up` runs it (SQLite file in a temp
 *   dir, durable, the built-in types), without authentication; with `--volatile`
 *   SQLite does not wait for the disk at commit (to tell storage from API machinery);
 *   with `--auth` requests need a bearer token: the admin's (sent in the ready
 *   message) or BENCH_USER_TOKEN, which stands for BENCH_USER (authorized by RBAC).
 * - `bare`: a bare node:http(s) server, the baseline. It reads each request body
 *   and answers POST with a canned 201 body, GET with canned list bytes, and holds
 *   `?watch=true` GETs open, relaying each POSTed body to every one of them as an
 *   ADDED event line, batched per turn of the event loop (the transport's own
 *   price of a fan-out).
 *
 * It talks to the parent over IPC: it sends `{ type: "ready", url, ca? }` once it
 * listens, and answers `{ type: "canned", ... }` and `{ type: "stats" }` messages.
 */
import { readFileSync } from "node:fs";
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { getHeapSpaceStatistics, writeHeapSnapshot } from "node:v8";
import { generateTlsMaterial } from "../../src/apiserver/server/index.ts";
import { startControlPlane } from "../../src/controlplane/index.ts";

/** Messages from the parent. */
export type ToChild =
  | { type: "canned"; created?: string; listFile?: string }
  /** Writes a heap snapshot into `dir` (for finding what the memory holds). */
  | { type: "heap-snapshot"; dir: string }
  /** Memory and CPU figures; `gc` forces garbage collection first (for retained memory). */
  | { type: "stats"; id: number; gc: boolean }
  | { type: "stop" };

/** Messages to the parent. */
export type FromChild =
  | { type: "ready"; url: string; ca?: string; token?: string }
  | { type: "canned-ok" }
  | { type: "heap-snapshot"; file: string }
  | ({ type: "stats"; id: number } & ChildStats);

/** A child's memory (bytes) and CPU time used so far (microseconds). */
export interface ChildStats {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  cpuUser: number;
  cpuSystem: number;
  /** V8 heap spaces of the main thread: committed and used bytes, by space name. */
  spaces: Record<string, { size: number; used: number }>;
}

/** The token of an ordinary user on a server started with --auth (what RBAC grants it decides). */
export const BENCH_USER_TOKEN = "bench-user-token";
export const BENCH_USER = "bench-user";

/** Pause after a forced GC before reading memory, so freed pages are given back. */
const SETTLE_MS = 500;

function send(msg: FromChild): void {
  process.send?.(msg);
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/** The baseline server: canned answers and a plain fan-out of POSTed bodies. */
function bareHandler(): {
  handle: (req: IncomingMessage, res: ServerResponse) => void;
  canned: (msg: Extract<ToChild, { type: "canned" }>) => void;
} {
  let created = Buffer.from("{}");
  let list = Buffer.from('{"kind":"ConfigMapList","apiVersion":"v1","items":[]}');
  const watchers = new Set<ServerResponse>();
  // Lines waiting to go out: written to every watcher once per turn of the event
  // loop, one write per watcher (as the API server's watch cache does).
  let pending: string[] = [];
  const relay = (line: string): void => {
    pending.push(line);
    if (pending.length > 1) return;
    setImmediate(() => {
      const out = pending.join("");
      pending = [];
      for (const w of watchers) w.write(out);
    });
  };
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    void readBody(req).then((body) => {
      if (req.method === "POST") {
        res.writeHead(201, {
          "Content-Type": "application/json",
          "Content-Length": created.length,
        });
        res.end(created);
        if (watchers.size > 0) relay(`{"type":"ADDED","object":${body.toString("utf8")}}\n`);
        return;
      }
      if ((req.url ?? "").includes("watch=true")) {
        res.writeHead(200, { "Content-Type": "application/json" });
        res.flushHeaders();
        watchers.add(res);
        res.on("close", () => watchers.delete(res));
        return;
      }
      res.writeHead(200, { "Content-Type": "application/json", "Content-Length": list.length });
      res.end(list);
    });
  };
  const canned = (msg: Extract<ToChild, { type: "canned" }>): void => {
    if (msg.created) created = Buffer.from(msg.created);
    if (msg.listFile) list = readFileSync(msg.listFile);
  };
  return { handle, canned };
}

async function main(): Promise<void> {
  const mode = process.argv[2];
  const useTls = process.argv.includes("--tls");
  const durable = !process.argv.includes("--volatile");
  const auth = process.argv.includes("--auth");
  let token: string | undefined;
  let stop: () => Promise<void>;
  let url: string;
  let ca: string | undefined;
  let onCanned: (msg: Extract<ToChild, { type: "canned" }>) => void = () => {};

  if (mode === "api") {
    // The composition root `setpoint up` uses, on a SQLite file in a temporary dir,
    // without authentication and without the built-in controllers.
    const plane = await startControlPlane({
      storage: { backend: "sqlite", durable },
      tls: useTls,
      auth,
      ...(auth
        ? {
            extraTokens: [
              [BENCH_USER_TOKEN, { name: BENCH_USER, groups: ["system:authenticated"] }] as const,
            ],
          }
        : {}),
    });
    token = plane.token;
    url = plane.url;
    ca = plane.caCert;
    stop = () => plane.stop();
  } else if (mode === "bare") {
    const tls = useTls ? await generateTlsMaterial(["127.0.0.1"]) : undefined;
    ca = tls?.caCert;
    const bare = bareHandler();
    onCanned = bare.canned;
    const server = tls
      ? https.createServer({ cert: tls.cert, key: tls.key }, bare.handle)
      : http.createServer(bare.handle);
    server.keepAliveTimeout = 65_000;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    url = `${tls ? "https" : "http"}://127.0.0.1:${port}`;
    stop = async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    };
  } else {
    throw new Error(`usage: api-child.ts api|bare [--tls] [--volatile] [--auth], got ${mode}`);
  }

  const gc = (globalThis as { gc?: () => void }).gc;
  process.on("message", (msg: ToChild) => {
    switch (msg.type) {
      case "canned":
        onCanned(msg);
        send({ type: "canned-ok" });
        break;
      case "stats": {
        const report = () => {
          const m = process.memoryUsage();
          const cpu = process.cpuUsage();
          send({
            type: "stats",
            id: msg.id,
            rss: m.rss,
            heapUsed: m.heapUsed,
            heapTotal: m.heapTotal,
            external: m.external,
            cpuUser: cpu.user,
            cpuSystem: cpu.system,
            spaces: Object.fromEntries(
              getHeapSpaceStatistics().map((sp) => [
                sp.space_name,
                { size: sp.space_size, used: sp.space_used_size },
              ]),
            ),
          });
        };
        if (!msg.gc || !gc) {
          report();
          break;
        }
        gc();
        setTimeout(() => {
          gc();
          report();
        }, SETTLE_MS);
        break;
      }
      case "heap-snapshot":
        send({
          type: "heap-snapshot",
          file: writeHeapSnapshot(join(msg.dir, `api-${process.pid}.heapsnapshot`)),
        });
        break;
      case "stop":
        void stop().then(() => process.exit(0));
        break;
    }
  });
  process.on("disconnect", () => void stop().then(() => process.exit(0)));
  send({ type: "ready", url, ...(ca ? { ca } : {}), ...(token ? { token } : {}) });
}

await main();
