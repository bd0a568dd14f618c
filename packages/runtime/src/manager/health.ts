/**
 * Health probes and the metrics endpoint, served over plain HTTP:
 *
 * - `/healthz` (liveness): fails when a named check fails, e.g. an informer
 *   whose watch is stalled or a leader that stopped renewing its lease.
 * - `/readyz` (readiness): fails until caches are synced, and whenever a
 *   readiness check fails.
 * - `/metrics`: the Prometheus text exposition.
 *
 * Answers follow the Kubernetes apiserver's probe format: `ok` (200) or a list of
 * `[+]name ok` / `[-]name failed: reason` lines (500); `?verbose` lists every
 * check on success too, and `/healthz/<name>` runs one check.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

/** The outcome of one check: healthy, or a reason why not. */
export type CheckResult = { ok: true } | { ok: false; reason: string };

/** A check: returns (or resolves to) a result; throwing counts as a failure. */
export type HealthCheck = () => CheckResult | Promise<CheckResult>;

/** Longest a single check may take before it counts as failed. */
export const CHECK_TIMEOUT_MS = 5_000;

/** A named set of checks, run together for one probe. */
export class HealthChecks {
  private readonly checks = new Map<string, HealthCheck>();

  /** Adds (or replaces) the check `name`. */
  add(name: string, check: HealthCheck): this {
    this.checks.set(name, check);
    return this;
  }

  remove(name: string): void {
    this.checks.delete(name);
  }

  names(): string[] {
    return [...this.checks.keys()];
  }

  /** Runs the checks (only `only`, if given) and reports each. */
  async run(only?: string): Promise<{ name: string; result: CheckResult }[]> {
    const entries = [...this.checks].filter(([name]) => only === undefined || name === only);
    return Promise.all(
      entries.map(async ([name, check]) => ({ name, result: await runOne(check) })),
    );
  }
}

async function runOne(check: HealthCheck): Promise<CheckResult> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<CheckResult>((resolve) => {
    timer = setTimeout(
      () => resolve({ ok: false, reason: `check timed out after ${CHECK_TIMEOUT_MS} ms` }),
      CHECK_TIMEOUT_MS,
    );
  });
  try {
    return await Promise.race([Promise.resolve().then(check), timeout]);
  } catch (e) {
    return { ok: false, reason: e instanceof Error ? e.message : String(e) };
  } finally {
    clearTimeout(timer);
  }
}

/** Formats a probe answer as the Kubernetes apiserver does. */
export async function probe(
  checks: HealthChecks,
  probeName: string,
  opts: { verbose?: boolean | undefined; only?: string | undefined } = {},
): Promise<{ code: number; body: string }> {
  const results = await checks.run(opts.only);
  if (opts.only !== undefined && results.length === 0) {
    return { code: 404, body: `no check named "${opts.only}"\n` };
  }
  const failed = results.some((r) => !r.result.ok);
  if (!failed && !opts.verbose) return { code: 200, body: "ok" };
  const lines = results.map(({ name, result }) =>
    result.ok ? `[+]${name} ok` : `[-]${name} failed: ${result.reason}`,
  );
  lines.push(failed ? `${probeName} check failed` : `${probeName} check passed`);
  return { code: failed ? 500 : 200, body: `${lines.join("\n")}\n` };
}

/** What a probe server serves; each field is optional. */
export interface ProbeRoutes {
  healthz?: HealthChecks | undefined;
  readyz?: HealthChecks | undefined;
  metrics?: { text(): Promise<string>; contentType: string } | undefined;
}

/** Serves `/healthz`, `/readyz` and `/metrics` from `routes`. */
export function probeHandler(routes: ProbeRoutes): http.RequestListener {
  return (req, res) => {
    const url = new URL(req.url ?? "/", "http://probe");
    const send = (code: number, body: string, type = "text/plain; charset=utf-8") => {
      res.writeHead(code, { "content-type": type, "cache-control": "no-store" });
      res.end(req.method === "HEAD" ? undefined : body);
    };
    if (req.method !== "GET" && req.method !== "HEAD") {
      send(405, "method not allowed\n");
      return;
    }
    const [, first, rest] = url.pathname.match(/^\/([^/]+)(?:\/(.+))?$/) ?? [];
    const verbose = url.searchParams.has("verbose");
    const answer = async () => {
      if ((first === "healthz" || first === "readyz") && routes[first]) {
        const r = await probe(routes[first], first, { verbose, only: rest });
        send(r.code, r.body);
      } else if (first === "metrics" && !rest && routes.metrics) {
        send(200, await routes.metrics.text(), routes.metrics.contentType);
      } else {
        send(404, "not found\n");
      }
    };
    answer().catch((e: unknown) => send(500, `${e instanceof Error ? e.message : String(e)}\n`));
  };
}

/**
 * Parses a listen address: "host:port", ":port", "port", or "[::1]:port". An
 * empty host listens on all interfaces; port 0 picks a free port.
 */
export function parseListenAddress(addr: string | number): {
  host?: string | undefined;
  port: number;
} {
  if (typeof addr === "number") return { port: addr };
  const m = addr.match(/^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/) ?? addr.match(/^()()(\d+)$/);
  if (!m) throw new Error(`invalid listen address "${addr}" (want host:port or :port)`);
  const host = m[1] || m[2] || undefined;
  return { host, port: Number(m[3]) };
}

/** A started probe server and the address it is bound to. */
export interface ProbeServer {
  server: http.Server;
  /** "host:port" actually bound (the real port when 0 was asked for). */
  address: string;
  port: number;
  close(): Promise<void>;
}

/** Starts an HTTP server for `routes` on `addr`. */
export async function startProbeServer(
  addr: string | number,
  routes: ProbeRoutes,
): Promise<ProbeServer> {
  const { host, port } = parseListenAddress(addr);
  const server = http.createServer(probeHandler(routes));
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const bound = server.address() as AddressInfo;
  const shownHost = bound.family === "IPv6" ? `[${bound.address}]` : bound.address;
  return {
    server,
    port: bound.port,
    address: `${shownHost}:${bound.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
