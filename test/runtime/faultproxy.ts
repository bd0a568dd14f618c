/**
 * An HTTP proxy in front of an API server that misbehaves on purpose, seeded:
 * - answers a fraction of requests with 500 without forwarding them;
 * - answers a fraction of writes with 409 Conflict without forwarding them;
 * - forwards a fraction of writes and then answers 500 anyway (the write
 *   happened, the client believes it failed);
 * - cuts open watch streams at random intervals.
 * It counts the writes the server actually committed (2xx answers to forwarded
 * POST, PUT, PATCH and DELETE requests).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface FaultOptions {
  seed: number;
  /** Fraction of requests answered 500 without reaching the server. */
  error500?: number;
  /** Fraction of writes answered 409 without reaching the server. */
  conflict409?: number;
  /** Fraction of writes forwarded, then answered 500. */
  errorAfterWrite?: number;
  /** Cut one open watch about this often (ms); 0: never. */
  dropWatchEveryMs?: number;
}

export interface FaultProxy {
  url: string;
  /** Committed writes per "METHOD path". */
  readonly committed: Map<string, number>;
  readonly injected: { e500: number; e409: number; afterWrite: number; drops: number };
  /** Stops injecting faults (requests pass through). */
  heal(): void;
  close(): Promise<void>;
}

const WRITE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

function status(code: number, reason: string, message: string): string {
  return JSON.stringify({
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    code,
  });
}

export async function startFaultProxy(target: string, opts: FaultOptions): Promise<FaultProxy> {
  const upstream = new URL(target);
  const agent = new http.Agent({ keepAlive: true });
  let s = opts.seed >>> 0 || 1;
  const random = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
  let healed = false;
  const committed = new Map<string, number>();
  const injected = { e500: 0, e409: 0, afterWrite: 0, drops: 0 };
  const watches = new Set<http.ServerResponse>();

  const server = http.createServer((req, res) => {
    const isWatch = /[?&]watch=(true|1)/.test(req.url ?? "");
    const isWrite = WRITE_METHODS.has(req.method ?? "");
    const fail = (code: number, reason: string) => {
      req.resume();
      res.writeHead(code, { "content-type": "application/json" });
      res.end(status(code, reason, `injected ${code}`));
    };
    if (!healed && !isWatch && random() < (opts.error500 ?? 0)) {
      injected.e500++;
      fail(500, "InternalError");
      return;
    }
    if (!healed && isWrite && random() < (opts.conflict409 ?? 0)) {
      injected.e409++;
      fail(409, "Conflict");
      return;
    }
    const lieAfter = !healed && isWrite && random() < (opts.errorAfterWrite ?? 0);
    const out = http.request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
        agent,
      },
      (up) => {
        const code = up.statusCode ?? 502;
        if (isWrite && code >= 200 && code < 300) {
          const key = `${req.method} ${(req.url ?? "").split("?")[0]}`;
          committed.set(key, (committed.get(key) ?? 0) + 1);
        }
        if (lieAfter) {
          injected.afterWrite++;
          up.resume();
          fail(500, "InternalError");
          return;
        }
        res.writeHead(code, up.headers);
        up.pipe(res);
        if (isWatch) {
          watches.add(res);
          res.on("close", () => watches.delete(res));
        }
      },
    );
    out.on("error", () => res.destroy());
    res.on("close", () => out.destroy());
    req.pipe(out);
  });
  const every = opts.dropWatchEveryMs ?? 0;
  const timer =
    every > 0
      ? setInterval(() => {
          if (healed || watches.size === 0 || random() < 0.5) return;
          const list = [...watches];
          const victim = list[Math.floor(random() * list.length)];
          injected.drops++;
          victim.destroy();
        }, every)
      : undefined;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    committed,
    injected,
    heal() {
      healed = true;
    },
    close: () =>
      new Promise<void>((r) => {
        if (timer) clearInterval(timer);
        server.close(() => r());
        server.closeAllConnections();
        agent.destroy();
      }),
  };
}
