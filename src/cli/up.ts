/**
 * `setpoint up`: runs the control plane. Opens storage, serves the Kubernetes API
 * over https with a generated CA and admin token (and ServiceAccount tokens signed
 * with the data dir's service-account.key), creates the system namespaces,
 * writes a kubeconfig, and shuts down cleanly on SIGINT/SIGTERM.
 */

import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { pino } from "pino";
import {
  loadOrCreateToken,
  parseTokenFile,
  TokenAuthenticator,
  TokenFileError,
  type UserInfo,
} from "../apiserver/server/auth.ts";
import { ensureSystemNamespaces } from "../apiserver/server/bootstrap.ts";
import { loadOrCreateTlsMaterial } from "../apiserver/server/certs.ts";
import { writeKubeconfig } from "../apiserver/server/kubeconfig-yaml.ts";
import { DEFAULT_KUBERNETES_MINOR, startApiServer } from "../apiserver/server/server.ts";
import type { ControllerManager } from "../controllers/controller-manager.ts";
import { BUILTIN_CONTROLLER_NAMES, createControllerManager } from "../controllers/index.ts";
import { parseControllerList, parseDuration } from "./controller-manager.ts";
import { openStore, UsageError } from "./open-store.ts";

export const UP_USAGE = `Usage: setpoint up [flags]

Runs the Setpoint control plane.

Flags:
  --data-dir DIR              where state, certificates and the kubeconfig live (default ./.setpoint)
  --storage sqlite|etcd       storage backend (default sqlite, a file in the data dir)
  --etcd-endpoints URL,...    etcd client URLs (with --storage etcd)
  --etcd-prefix PREFIX        key prefix in etcd for this installation (default /setpoint/)
  --listen HOST:PORT          address to serve on (default 127.0.0.1:6443; port 0 picks one)
  --tls-san NAME,...          extra DNS names or IPs for the serving certificate
  --token-auth-file FILE      more bearer tokens: CSV lines token,user,uid[,"group1,group2"]
  --kubernetes-version 1.N    Kubernetes version to report, 1.27 to 1.33 (default 1.${DEFAULT_KUBERNETES_MINOR})
  --log-level LEVEL           trace, debug, info, warn, error (default info)
  --no-controllers            do not run the built-in controllers in this process
  --disable-controllers NAME,...  built-in controllers not to run (${BUILTIN_CONTROLLER_NAMES.join(", ")})
  --event-ttl DURATION        how long an Event lives after its latest occurrence (default 1h)
`;

/** The file in the data dir holding the ServiceAccount token signing key (0600). */
export const SERVICE_ACCOUNT_KEY_FILE = "service-account.key";

export function parseListen(s: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(s);
  if (!m) throw new UsageError(`--listen must be HOST:PORT, got ${JSON.stringify(s)}`);
  const port = Number(m[3]);
  if (port > 65535) throw new UsageError(`--listen port out of range: ${port}`);
  return { host: m[1] ?? (m[2] || "127.0.0.1"), port };
}

export function parseKubernetesVersion(s: string): number {
  const m = /^v?1\.(\d+)(?:\.\d+)?$/.exec(s);
  const minor = m ? Number(m[1]) : Number.NaN;
  if (!(minor >= 27 && minor <= 33)) {
    throw new UsageError(`--kubernetes-version must be 1.27 to 1.33, got ${JSON.stringify(s)}`);
  }
  return minor;
}

export async function up(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      "data-dir": { type: "string", default: ".setpoint" },
      storage: { type: "string", default: "sqlite" },
      "etcd-endpoints": { type: "string" },
      "etcd-prefix": { type: "string", default: "/setpoint/" },
      listen: { type: "string", default: "127.0.0.1:6443" },
      "tls-san": { type: "string", default: "" },
      "token-auth-file": { type: "string" },
      "kubernetes-version": { type: "string", default: `1.${DEFAULT_KUBERNETES_MINOR}` },
      "log-level": { type: "string", default: "info" },
      "no-controllers": { type: "boolean", default: false },
      "disable-controllers": { type: "string" },
      "event-ttl": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(UP_USAGE);
    return 0;
  }
  const dataDir = resolve(values["data-dir"]);
  const { host, port } = parseListen(values.listen);
  const kubernetesMinor = parseKubernetesVersion(values["kubernetes-version"]);
  const logger = pino({ level: values["log-level"] }, pino.destination(2));
  let disabledControllers: string[];
  let eventTtlMs: number | undefined;
  try {
    disabledControllers = parseControllerList(values["disable-controllers"]);
    eventTtlMs = values["event-ttl"] ? parseDuration(values["event-ttl"]) : undefined;
  } catch (e) {
    // A bad controller name or duration: report it as a usage error of `up`.
    throw new UsageError(e instanceof Error ? e.message : String(e));
  }

  let extraTokens: [string, UserInfo][] = [];
  const tokenFile = values["token-auth-file"];
  if (tokenFile !== undefined) {
    try {
      extraTokens = parseTokenFile(await readFile(tokenFile, "utf8"), tokenFile);
    } catch (e) {
      if (e instanceof TokenFileError) throw new UsageError(e.message);
      throw new UsageError(`--token-auth-file: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  const store = await openStore({
    storage: values.storage,
    dataDir,
    etcdEndpoints: values["etcd-endpoints"],
    etcdPrefix: values["etcd-prefix"],
  });
  const sans = values["tls-san"].split(",").filter(Boolean);
  if (host !== "0.0.0.0" && host !== "::") sans.push(host);
  const tls = await loadOrCreateTlsMaterial(dataDir, sans);
  const token = await loadOrCreateToken(resolve(dataDir, "admin-token"));
  const admin = { name: "admin", groups: ["system:masters"] };
  // The key ServiceAccount tokens are signed with (`kubectl create token`).
  const serviceAccountKey = await loadOrCreateToken(resolve(dataDir, SERVICE_ACCOUNT_KEY_FILE));

  const server = await startApiServer({
    store,
    host,
    port,
    tls,
    authenticator: new TokenAuthenticator([[token, admin], ...extraTokens]),
    serviceAccountKey,
    kubernetesMinor,
    logger,
  });
  await ensureSystemNamespaces({
    url: server.url,
    caCert: tls.caCert,
    ...(server.loopbackToken ? { token: server.loopbackToken } : {}),
  });
  const kubeconfig = resolve(dataDir, "kubeconfig");
  await writeKubeconfig(kubeconfig, { server: server.url, caCert: tls.caCert, token });

  // The built-in controllers, in process, as loopback clients of the API. They
  // campaign for the controller managers' Lease, so a separate
  // `setpoint controller-manager --leader-elect` can stand by beside them.
  let controllers: ControllerManager | undefined;
  if (!values["no-controllers"]) {
    controllers = createControllerManager({
      restConfig: {
        server: server.url,
        ca: Buffer.from(tls.caCert),
        ...(server.loopbackToken ? { token: server.loopbackToken } : {}),
      },
      disabled: disabledControllers,
      leaderElection: true,
      eventTtl: eventTtlMs ? { ttlMs: eventTtlMs } : undefined,
      logger: logger.child({ component: "controller-manager" }),
    });
    await controllers.start();
  }

  process.stdout.write(
    `Setpoint is serving at ${server.url} (storage: ${values.storage})\n` +
      `export KUBECONFIG=${kubeconfig}\n` +
      `Built-in controllers: ${controllers ? controllers.names.join(", ") || "none" : "off"}\n`,
  );

  await new Promise<void>((done) => {
    const stop = (signal: string) => {
      logger.info({ signal }, "shutting down");
      done();
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  await controllers?.stop();
  await server.close();
  await store.close();
  return 0;
}
