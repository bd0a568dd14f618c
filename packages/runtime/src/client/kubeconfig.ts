/**
 * Where the runtime finds its API server and credentials: a kubeconfig file, the
 * `KUBECONFIG` list of files (merged as kubectl merges them), a pod's service
 * account (in-cluster), or `~/.kube/config`, in the order controller-runtime uses.
 */
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, dirname, isAbsolute, join, resolve } from "node:path";
import type { Duplex } from "node:stream";
import { parse as parseYaml } from "yaml";

/** How to reach one API server. */
export interface RestConfig {
  /** Base URL, e.g. "https://127.0.0.1:6443" (a path prefix is kept). */
  server: string;
  /**
   * Every address of the same API (apiservers on one storage, sharing CA and
   * credentials), `server` first. A request that cannot reach the one in use goes
   * to the next (see Transport); unset or one entry: `server` only. Read from the
   * kubeconfig cluster's `setpoint.dev/servers` extension.
   */
  servers?: readonly string[] | undefined;
  /**
   * Opens a connection to the server instead of dialing `server`: one within the
   * process, such as the apiserver's own `connect()` (`setpoint up`'s controllers
   * reach the apiserver they run beside through memory). HTTP/1.1 goes over it in
   * plain text; `server` only names the server, and `servers`, `ca` and the other
   * TLS settings are not used.
   */
  connect?: (() => Duplex) | undefined;
  /** PEM CA bundle to verify the server with (otherwise the system roots). */
  ca?: Buffer | undefined;
  /** PEM client certificate and key (mutual TLS). */
  cert?: Buffer | undefined;
  key?: Buffer | undefined;
  /** Bearer token. */
  token?: string | undefined;
  /** File holding the bearer token; re-read periodically (service account tokens rotate). */
  tokenFile?: string | undefined;
  /**
   * Where the bearer token comes from when it is minted in process (a TokenRequest
   * kept fresh by its owner): asked before each request, and with `refresh` after
   * a 401. `token` wins over it; it wins over `tokenFile`.
   */
  tokenSource?: ((opts: { refresh: boolean }) => Promise<string>) | undefined;
  /** Basic authentication. */
  username?: string | undefined;
  password?: string | undefined;
  /** Do not verify the server's certificate (tests only). */
  insecureSkipTLSVerify?: boolean | undefined;
  /** Name to verify the server's certificate against, when it differs from the URL's host. */
  tlsServerName?: string | undefined;
  /** Sent as User-Agent. */
  userAgent?: string | undefined;
  /** Client-side rate limit: sustained requests per second (unset: no limit). */
  qps?: number | undefined;
  /** Client-side rate limit: requests allowed in a burst above `qps`. */
  burst?: number | undefined;
  /** Deadline of each non-watch request in ms (default DEFAULT_REQUEST_TIMEOUT_MS). */
  timeoutMs?: number | undefined;
  /** The namespace the context selects (or the service account's), if any. */
  namespace?: string | undefined;
  /**
   * The name of the kubeconfig user entry the context selects (not sent; for
   * tools that record who acted). Unset in a pod and when the context names none.
   */
  user?: string | undefined;
}

/**
 * The kubeconfig cluster extension listing every apiserver address of the cluster:
 * `extensions: [{name: setpoint.dev/servers, extension: {servers: [URL, ...]}}]`.
 * kubectl ignores it (and uses `server`); Setpoint's clients fail over along it.
 */
export const SERVERS_EXTENSION = "setpoint.dev/servers";

/** Where a pod's service account credentials are mounted. */
export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

export interface LoadKubeconfigOptions {
  /** A kubeconfig file; takes precedence over everything else. */
  path?: string | undefined;
  /** The context to use instead of the file's current-context. */
  context?: string | undefined;
  /** Environment to read (default process.env): KUBECONFIG, KUBERNETES_SERVICE_HOST/PORT, HOME. */
  env?: Record<string, string | undefined> | undefined;
  /** Service account directory for in-cluster config (default SERVICE_ACCOUNT_DIR). */
  serviceAccountDir?: string | undefined;
}

/** The kubeconfig could not be found or does not describe a usable server. */
export class KubeconfigError extends Error {
  override name = "KubeconfigError";
}

interface NamedEntries {
  clusters: Map<string, Record<string, unknown>>;
  users: Map<string, Record<string, unknown>>;
  contexts: Map<string, Record<string, unknown>>;
  currentContext?: string | undefined;
}

/**
 * Loads a RestConfig. Order: `opts.path`; the files in `$KUBECONFIG` (merged: the
 * first file that defines a cluster, user, context or current-context wins, missing
 * files are skipped); the pod's service account when `KUBERNETES_SERVICE_HOST` is set;
 * `~/.kube/config`. Relative file references resolve against the file that names them.
 */
export function loadKubeconfig(opts: LoadKubeconfigOptions = {}): RestConfig {
  const env = opts.env ?? process.env;
  if (opts.path) return fromFiles([opts.path], opts.context, true);
  const list = (env.KUBECONFIG ?? "").split(delimiter).filter((p) => p.length > 0);
  if (list.length > 0) return fromFiles(list, opts.context, false);
  if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT) {
    return inClusterConfig(env, opts.serviceAccountDir ?? serviceAccountDir(env));
  }
  const home = env.HOME ?? homedir();
  const fallback = join(home, ".kube", "config");
  if (existsSync(fallback)) return fromFiles([fallback], opts.context, true);
  throw new KubeconfigError(
    "no kubeconfig: pass a path, set KUBECONFIG, run in a pod with a service account, or create ~/.kube/config",
  );
}

/**
 * Where the pod's service account files are: SERVICE_ACCOUNT_DIR, or, in a
 * process Setpoint's agent runs without a mount namespace of its own, the same
 * path under its container root (`$SETPOINT_ROOT/var/run/secrets/...`).
 */
export function serviceAccountDir(env: Record<string, string | undefined> = process.env): string {
  const root = env.SETPOINT_ROOT;
  if (root && !existsSync(SERVICE_ACCOUNT_DIR)) return join(root, SERVICE_ACCOUNT_DIR);
  return SERVICE_ACCOUNT_DIR;
}

/** The config of a pod: its service account's token and CA, and the cluster's service address. */
export function inClusterConfig(
  env: Record<string, string | undefined> = process.env,
  dir: string = serviceAccountDir(env),
): RestConfig {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) {
    throw new KubeconfigError("not in a cluster: KUBERNETES_SERVICE_HOST/PORT are not set");
  }
  const tokenFile = join(dir, "token");
  if (!existsSync(tokenFile)) {
    throw new KubeconfigError(`not in a cluster: no service account token at ${tokenFile}`);
  }
  const h = host.includes(":") ? `[${host}]` : host;
  const config: RestConfig = { server: `https://${h}:${port}`, tokenFile };
  const caFile = join(dir, "ca.crt");
  if (existsSync(caFile)) config.ca = readFileSync(caFile);
  const nsFile = join(dir, "namespace");
  if (existsSync(nsFile)) config.namespace = readFileSync(nsFile, "utf8").trim();
  return config;
}

function asRecord(v: unknown): Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : {};
}

function str(v: unknown): string | undefined {
  return typeof v === "string" && v.length > 0 ? v : undefined;
}

/** Makes every file reference in an entry absolute, relative to the file that holds it. */
function absolutize(entry: Record<string, unknown>, keys: string[], base: string): void {
  for (const k of keys) {
    const v = str(entry[k]);
    if (!v) continue;
    if (v.startsWith("~/")) entry[k] = join(homedir(), v.slice(2));
    else if (!isAbsolute(v)) entry[k] = resolve(base, v);
  }
}

function mergeFile(into: NamedEntries, file: string): void {
  let doc: Record<string, unknown>;
  try {
    doc = asRecord(parseYaml(readFileSync(file, "utf8")));
  } catch (e) {
    throw new KubeconfigError(`cannot read kubeconfig ${file}: ${(e as Error).message}`);
  }
  const base = dirname(resolve(file));
  const sections = [
    ["clusters", "cluster", into.clusters, ["certificate-authority"]],
    ["users", "user", into.users, ["client-certificate", "client-key", "tokenFile"]],
    ["contexts", "context", into.contexts, []],
  ] as const;
  for (const [listKey, itemKey, target, fileKeys] of sections) {
    const list = doc[listKey];
    if (!Array.isArray(list)) continue;
    for (const item of list) {
      const rec = asRecord(item);
      const name = str(rec.name);
      if (!name || target.has(name)) continue;
      const entry = { ...asRecord(rec[itemKey]) };
      absolutize(entry, [...fileKeys], base);
      target.set(name, entry);
    }
  }
  if (!into.currentContext) into.currentContext = str(doc["current-context"]);
}

function fromFiles(files: string[], context: string | undefined, mustExist: boolean): RestConfig {
  const merged: NamedEntries = { clusters: new Map(), users: new Map(), contexts: new Map() };
  let read = 0;
  for (const f of files) {
    if (!existsSync(f)) {
      if (mustExist) throw new KubeconfigError(`kubeconfig ${f} does not exist`);
      continue;
    }
    mergeFile(merged, f);
    read++;
  }
  if (read === 0)
    throw new KubeconfigError(`none of the kubeconfig files exist: ${files.join(", ")}`);
  const ctxName = context ?? merged.currentContext;
  if (!ctxName)
    throw new KubeconfigError("the kubeconfig has no current-context and none was given");
  const ctx = merged.contexts.get(ctxName);
  if (!ctx) throw new KubeconfigError(`context "${ctxName}" is not in the kubeconfig`);
  const clusterName = str(ctx.cluster);
  const cluster = clusterName ? merged.clusters.get(clusterName) : undefined;
  if (!cluster) {
    throw new KubeconfigError(
      `context "${ctxName}" names cluster "${clusterName ?? ""}", which is not defined`,
    );
  }
  const server = str(cluster.server);
  if (!server) throw new KubeconfigError(`cluster "${clusterName}" has no server`);
  const config: RestConfig = { server };
  const servers = serversExtension(cluster);
  if (servers.length > 0) config.servers = [server, ...servers.filter((s) => s !== server)];
  const ns = str(ctx.namespace);
  if (ns) config.namespace = ns;
  const ca = bytes(cluster, "certificate-authority");
  if (ca) config.ca = ca;
  if (cluster["insecure-skip-tls-verify"] === true) config.insecureSkipTLSVerify = true;
  const sni = str(cluster["tls-server-name"]);
  if (sni) config.tlsServerName = sni;

  const userName = str(ctx.user);
  if (userName) {
    const user = merged.users.get(userName);
    if (!user)
      throw new KubeconfigError(
        `context "${ctxName}" names user "${userName}", which is not defined`,
      );
    applyUser(config, user, userName);
    config.user = userName;
  }
  return config;
}

/** The addresses of a cluster entry's SERVERS_EXTENSION, if it has one. */
function serversExtension(cluster: Record<string, unknown>): string[] {
  const list = cluster.extensions;
  if (!Array.isArray(list)) return [];
  for (const item of list) {
    const rec = asRecord(item);
    if (rec.name !== SERVERS_EXTENSION) continue;
    const servers = asRecord(rec.extension).servers;
    if (!Array.isArray(servers)) {
      throw new KubeconfigError(`extension ${SERVERS_EXTENSION} has no list of servers`);
    }
    return servers.map((s) => {
      const url = str(s);
      if (!url) throw new KubeconfigError(`extension ${SERVERS_EXTENSION}: not a URL: ${s}`);
      return url;
    });
  }
  return [];
}

/** `<key>-data` (base64) or `<key>` (a file path) from an entry. */
function bytes(entry: Record<string, unknown>, key: string): Buffer | undefined {
  const data = str(entry[`${key}-data`]);
  if (data) return Buffer.from(data, "base64");
  const file = str(entry[key]);
  if (!file) return undefined;
  try {
    return readFileSync(file);
  } catch (e) {
    throw new KubeconfigError(`cannot read ${key} ${file}: ${(e as Error).message}`);
  }
}

function applyUser(config: RestConfig, user: Record<string, unknown>, name: string): void {
  const cert = bytes(user, "client-certificate");
  const key = bytes(user, "client-key");
  if (cert && !key) throw new KubeconfigError(`user "${name}" has a client certificate but no key`);
  if (key && !cert) throw new KubeconfigError(`user "${name}" has a client key but no certificate`);
  if (cert && key) {
    config.cert = cert;
    config.key = key;
  }
  const token = str(user.token);
  if (token) config.token = token;
  const tokenFile = str(user.tokenFile);
  if (tokenFile && !token) config.tokenFile = tokenFile;
  const username = str(user.username);
  if (username) {
    config.username = username;
    config.password = str(user.password) ?? "";
  }
  if (!cert && !token && !tokenFile && !username && (user.exec || user["auth-provider"])) {
    throw new KubeconfigError(
      `user "${name}" authenticates with an exec or auth-provider plugin, which is not supported; use a token or client certificate`,
    );
  }
}

/** The text of a one-context kubeconfig (JSON, which is YAML), for test environments and CLIs. */
export function kubeconfigYaml(opts: {
  server: string;
  /** Every address of the API, written as the SERVERS_EXTENSION when more than one. */
  servers?: readonly string[] | undefined;
  ca?: Buffer | undefined;
  cert?: Buffer | undefined;
  key?: Buffer | undefined;
  token?: string | undefined;
  insecureSkipTLSVerify?: boolean | undefined;
  namespace?: string | undefined;
  name?: string | undefined;
}): string {
  const name = opts.name ?? "setpoint";
  const cluster: Record<string, unknown> = { server: opts.server };
  if (opts.servers && opts.servers.length > 1) {
    cluster.extensions = [{ name: SERVERS_EXTENSION, extension: { servers: [...opts.servers] } }];
  }
  if (opts.ca) cluster["certificate-authority-data"] = opts.ca.toString("base64");
  if (opts.insecureSkipTLSVerify) cluster["insecure-skip-tls-verify"] = true;
  const user: Record<string, unknown> = {};
  if (opts.cert) user["client-certificate-data"] = opts.cert.toString("base64");
  if (opts.key) user["client-key-data"] = opts.key.toString("base64");
  if (opts.token) user.token = opts.token;
  const context: Record<string, unknown> = { cluster: name, user: name };
  if (opts.namespace) context.namespace = opts.namespace;
  return JSON.stringify(
    {
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name, cluster }],
      users: [{ name, user }],
      contexts: [{ name, context }],
      "current-context": name,
    },
    null,
    2,
  );
}
