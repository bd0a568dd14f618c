/**
 * A real Setpoint apiserver over HTTP on a temporary SQLite file, for the
 * runtime's controller, manager and leader-election tests. The runtime under
 * test talks to it only through its HTTP client.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { type ApiServer, startApiServer } from "../../src/apiserver/server.ts";
import { Client } from "../../src/runtime/client.ts";
import { isAlreadyExists } from "../../src/runtime/errors.ts";
import { SqliteStore } from "../../src/storage/sqlite.ts";

export interface ApiEnv {
  server: ApiServer;
  url: string;
  /** A fresh client of the server (each caller may make its own). */
  client(): Client;
  close(): Promise<void>;
}

export async function startApiEnv(): Promise<ApiEnv> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "setpoint-runtime-"));
  const store = SqliteStore.open(path.join(dir, "db.sqlite"));
  const server = await startApiServer({ store, port: 0 });
  const clients: Client[] = [];
  // The namespaces a cluster always has (Events about cluster-scoped objects, Leases).
  const admin = new Client({ server: server.url });
  for (const name of ["default", "kube-system"]) {
    try {
      await admin.create({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
    }
  }
  admin.close();
  return {
    server,
    url: server.url,
    client() {
      const c = new Client({ server: server.url });
      clients.push(c);
      return c;
    },
    async close() {
      for (const c of clients) c.close();
      await server.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Polls `fn` until it returns a truthy value (returned) or `timeoutMs` passes (throws). */
export async function eventually<T>(
  fn: () => T | Promise<T>,
  timeoutMs = 10_000,
  what = "condition",
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
    await new Promise((r) => setTimeout(r, 20));
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
