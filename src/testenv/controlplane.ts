/**
 * The apiserver part of a test environment: a SQLite store (in memory, or in a file
 * under a temporary dir), the apiserver on a free 127.0.0.1 port (plain http, or
 * https with a generated CA and an admin bearer token), the system namespaces, a
 * kubeconfig and a client. startTestEnv adds the built-in controllers and CRDs to
 * it. The project's own tests also start it directly where they reach into the
 * server (its store, its registry, smaller limits, https); that is why it is a
 * module of its own, and not part of the `setpoint/testenv` API.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, type RestConfig } from "@setpoint/runtime";
import type { ApiLimits } from "../apiserver/endpoints/limits.ts";
import { generateToken, TokenAuthenticator } from "../apiserver/server/auth.ts";
import { ensureSystemNamespaces } from "../apiserver/server/bootstrap.ts";
import { generateTlsMaterial } from "../apiserver/server/certs.ts";
import type { ConnectionLimits } from "../apiserver/server/connections.ts";
import { writeKubeconfig } from "../apiserver/server/kubeconfig-yaml.ts";
import { type ApiServer, startApiServer } from "../apiserver/server/server.ts";
import type { Registry } from "../registry/registry.ts";
import { SqliteStore } from "../storage/sqlite/index.ts";

export interface ControlPlaneOptions {
  /** "memory" (default): nothing on disk; "file": a SQLite file in the temp dir. */
  storage?: "memory" | "file";
  /** Kubernetes minor version the server reports (27..33). */
  kubernetesMinor?: number;
  /** Serve https with a generated CA and require the admin bearer token (default plain http, no authentication). */
  tls?: boolean;
  /** Server bounds to shrink (watch cache window, bookmark interval, ...). */
  limits?: Partial<ApiLimits>;
  /** Connection timeouts and bound to shrink (headers, request body, idle, open connections). */
  connections?: Partial<ConnectionLimits>;
  /** Types served (default the built-ins). */
  registry?: Registry;
  /** The store's background compaction (default on; off for a test that compacts itself). */
  compaction?: boolean;
}

export interface ControlPlane {
  /** Base URL of the apiserver. */
  readonly url: string;
  /** A config that reaches the server (with the CA and the admin token under tls). */
  readonly config: RestConfig;
  /** A client of the server, closed by stop(). */
  readonly client: Client;
  /** Path of a kubeconfig file for the server (with the CA and the admin token under tls). */
  readonly kubeconfigPath: string;
  /** PEM of the CA that signed the server's certificate (under tls). */
  readonly caCert: string | undefined;
  /** The admin bearer token (under tls). */
  readonly token: string | undefined;
  /** A temporary dir (the kubeconfig, the SQLite file), removed by stop(). */
  readonly dir: string;
  readonly server: ApiServer;
  readonly store: SqliteStore;
  /** Stops the server and the store and removes the temp dir. */
  stop(): Promise<void>;
}

/** Starts an apiserver for tests; see the module comment. */
export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const dir = mkdtempSync(join(tmpdir(), "setpoint-testenv-"));
  const store = SqliteStore.open(opts.storage === "file" ? join(dir, "state.db") : ":memory:", {
    durable: false,
    ...(opts.compaction === false ? { compactionIntervalMs: 0 } : {}),
  });
  const tls = opts.tls ? await generateTlsMaterial() : undefined;
  const token = opts.tls ? generateToken() : undefined;
  let server: ApiServer;
  try {
    server = await startApiServer({
      store,
      port: 0,
      ...(opts.registry ? { registry: opts.registry } : {}),
      ...(opts.limits ? { limits: opts.limits } : {}),
      ...(opts.connections ? { connections: opts.connections } : {}),
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
  } catch (err) {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const config: RestConfig = {
    server: server.url,
    ...(tls ? { ca: Buffer.from(tls.caCert) } : {}),
    ...(token ? { token } : {}),
  };
  const client = new Client(config);
  const kubeconfigPath = join(dir, "kubeconfig");
  const stop = async (): Promise<void> => {
    client.close();
    await server.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await ensureSystemNamespaces({
      url: server.url,
      ...(tls ? { caCert: tls.caCert } : {}),
      ...(server.loopbackToken ? { token: server.loopbackToken } : {}),
    });
    await writeKubeconfig(kubeconfigPath, {
      server: server.url,
      ...(tls ? { caCert: tls.caCert } : {}),
      ...(token ? { token } : {}),
    });
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    url: server.url,
    config,
    client,
    kubeconfigPath,
    caCert: tls?.caCert,
    token,
    dir,
    server,
    store,
    stop,
  };
}
