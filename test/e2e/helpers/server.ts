/**
 * An apiserver started in the test process on a SQLite store the test owns (so it
 * can compact it, or read it), reachable over real HTTP(S) on a free port, with a
 * kubeconfig file for kubectl and client-node.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateToken, TokenAuthenticator } from "../../../src/apiserver/auth.ts";
import { ensureSystemNamespaces } from "../../../src/apiserver/bootstrap.ts";
import { loadOrCreateTlsMaterial } from "../../../src/apiserver/certs.ts";
import { writeKubeconfig } from "../../../src/apiserver/kubeconfig.ts";
import type { ApiLimits } from "../../../src/apiserver/limits.ts";
import { type ApiServer, startApiServer } from "../../../src/apiserver/server.ts";
import type { Registry } from "../../../src/registry/registry.ts";
import { SqliteStore } from "../../../src/storage/sqlite.ts";
import type { Target } from "./http.ts";

export interface E2eServerOptions {
  /** Reported Kubernetes minor version (selects the kubectl build); default the server's. */
  kubernetesMinor?: number;
  /** Serve https with a generated CA and an admin bearer token (default plain http, no auth). */
  tls?: boolean;
  /** Types served (default the built-ins). */
  registry?: Registry;
  /** Server bounds to shrink (e.g. the watch cache window, to make 410s easy to reach). */
  limits?: Partial<ApiLimits>;
}

export interface E2eServer {
  readonly url: string;
  /** A kubeconfig for the server (with CA and token under tls). */
  readonly kubeconfig: string;
  /** How to reach the server with plain requests (admin credentials under tls). */
  readonly target: Target;
  /** The store under the server, for compaction and inspection. */
  readonly store: SqliteStore;
  readonly server: ApiServer;
  /** A fresh temp dir removed by close(). */
  readonly dir: string;
  close(): Promise<void>;
}

/**
 * Starts the apiserver in process on an in-memory SQLite store. Background
 * compaction is off: tests compact explicitly.
 */
export async function startE2eServer(opts: E2eServerOptions = {}): Promise<E2eServer> {
  const dir = mkdtempSync(join(tmpdir(), "setpoint-e2e-"));
  const store = SqliteStore.open(":memory:", { durable: false, compactionIntervalMs: 0 });
  const tls = opts.tls ? await loadOrCreateTlsMaterial(join(dir, "pki"), ["127.0.0.1"]) : undefined;
  const token = opts.tls ? generateToken() : undefined;
  const server = await startApiServer({
    store,
    port: 0,
    ...(opts.registry ? { registry: opts.registry } : {}),
    ...(opts.limits ? { limits: opts.limits } : {}),
    ...(opts.kubernetesMinor ? { kubernetesMinor: opts.kubernetesMinor } : {}),
    ...(tls && token
      ? {
          tls,
          authenticator: new TokenAuthenticator([
            [token, { name: "admin", groups: ["system:masters"] }],
          ]),
        }
      : {}),
  });
  const target: Target = {
    url: server.url,
    ...(tls ? { ca: tls.caCert } : {}),
    ...(token ? { token } : {}),
  };
  await ensureSystemNamespaces({
    url: server.url,
    ...(tls ? { caCert: tls.caCert } : {}),
    ...(server.loopbackToken ? { token: server.loopbackToken } : {}),
  });
  const kubeconfig = join(dir, "kubeconfig");
  await writeKubeconfig(kubeconfig, {
    server: server.url,
    ...(tls ? { caCert: tls.caCert } : {}),
    ...(token ? { token } : {}),
  });
  return {
    url: server.url,
    kubeconfig,
    target,
    store,
    server,
    dir,
    close: async () => {
      await server.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
