/**
 * A real Setpoint apiserver for the client and informer tests: SQLite in a temp
 * dir, a free port, optionally https with a bearer token. Tests reach it only
 * over HTTP through the runtime client; `store` is exposed to force what a
 * long-running cluster does on its own (compaction).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TokenAuthenticator } from "../../src/apiserver/auth.ts";
import { generateTlsMaterial } from "../../src/apiserver/certs.ts";
import type { ApiLimits } from "../../src/apiserver/limits.ts";
import { type ApiServer, startApiServer } from "../../src/apiserver/server.ts";
import { Client, type RestConfig } from "../../src/runtime/client.ts";
import { isAlreadyExists } from "../../src/runtime/errors.ts";
import { SqliteStore } from "../../src/storage/sqlite.ts";

export interface RealServer {
  server: ApiServer;
  url: string;
  store: SqliteStore;
  /** A config that reaches the server (CA and token included when https). */
  config: RestConfig;
  /** A new client (closed with the server). */
  client(overrides?: Partial<RestConfig>): Client;
  close(): Promise<void>;
}

export interface RealServerOptions {
  /** Serve https and require a bearer token. */
  secure?: boolean;
  /** Server bounds to shrink (watch cache window, bookmark interval...). */
  limits?: Partial<ApiLimits>;
}

export async function startRealServer(opts: RealServerOptions = {}): Promise<RealServer> {
  const dir = mkdtempSync(join(tmpdir(), "runtime-real-"));
  // Background compaction off: tests compact explicitly.
  const store = SqliteStore.open(join(dir, "db.sqlite"), {
    durable: false,
    compactionIntervalMs: 0,
  });
  let config: RestConfig;
  let server: ApiServer;
  if (opts.secure) {
    const tls = await generateTlsMaterial();
    const token = "runtime-test-token";
    server = await startApiServer({
      store,
      port: 0,
      limits: opts.limits,
      tls,
      authenticator: new TokenAuthenticator([
        [token, { name: "tester", groups: ["system:masters"] }],
      ]),
    });
    config = { server: server.url, ca: Buffer.from(tls.caCert), token };
  } else {
    server = await startApiServer({ store, port: 0, limits: opts.limits });
    config = { server: server.url };
  }
  const clients: Client[] = [];
  const make = (overrides: Partial<RestConfig> = {}): Client => {
    const c = new Client({ ...config, ...overrides });
    clients.push(c);
    return c;
  };
  const admin = make();
  for (const name of ["default", "kube-system"]) {
    try {
      await admin.create({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
    }
  }
  return {
    server,
    url: server.url,
    store,
    config,
    client: make,
    async close() {
      for (const c of clients) c.close();
      await server.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Polls `fn` until it returns something truthy (returned) or `timeoutMs` passes (throws). */
export async function until<T>(
  fn: () => T | Promise<T>,
  what: string,
  timeoutMs = 10_000,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as NonNullable<T>;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}
