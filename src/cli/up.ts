/**
 * `setpoint up`: runs the control plane (startControlPlane, src/controlplane/) from
 * its flags: storage, the apiserver over https with the data dir's CA, admin token
 * and ServiceAccount key, the system namespaces, the built-in controllers, the
 * kubeconfig. Prints where it serves and the `export KUBECONFIG=...` line, and shuts
 * down cleanly on SIGINT/SIGTERM. A start that fails for a reason a person can fix
 * (the address is in use, the data dir is held by another process, etcd does not
 * answer) prints one line naming the flag to change and exits 1.
 *
 * Logs go to stderr (logging.ts). The banner goes to stdout; with JSON logs it is
 * also one log record (msg "serving"), and when stdout and stderr are one file it
 * is only that record, so the output is JSON lines only.
 */

import { mkdir, open, readFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { Logger } from "pino";
import {
  type AuditOptions,
  type Policy,
  PolicyError,
  parsePolicy,
} from "../apiserver/audit/index.ts";
import { parseTokenFile, TokenFileError, type UserInfo } from "../apiserver/server/auth.ts";
import { DEFAULT_KUBERNETES_MINOR } from "../apiserver/server/server.ts";
import { BUILTIN_CONTROLLER_NAMES, OFF_BY_DEFAULT_CONTROLLERS } from "../controllers/index.ts";
import {
  type ControlPlane,
  componentRestConfig,
  GATEWAY_IDENTITY,
  NODE_KUBECONFIG_FILE,
  nodeIdentity,
  StartupError,
  type StorageOptions,
  startControlPlane,
  writeComponentKubeconfig,
} from "../controlplane/index.ts";
import { DEFAULT_SERVICE_RANGES, parseClusterIPRange } from "../registry/builtin/index.ts";
import { DEFAULT_AGENT_SECURE_LISTEN } from "./agent-listen.ts";
import { parseControllerList, parseNodeFlags } from "./controller-manager.ts";
import { parseDuration, parseListen } from "./flags.ts";
import {
  createCliLogger,
  LOG_OPTIONS,
  type LogFormat,
  logUsage,
  stdoutIsStderr,
} from "./logging.ts";
import { defaultNodeName } from "./node-name.ts";
import { type NodeAgentProcess, startNodeAgent } from "./up-agent.ts";
import { DEFAULT_GATEWAY_LISTEN, startUpGateway } from "./up-gateway.ts";
import { UsageError } from "./usage-error.ts";

/** The admission plugins --disable-admission-plugins can switch off. */
const ADMISSION_PLUGINS = ["ServiceAccount"];

export const UP_USAGE = `Usage: setpoint up [flags]

Runs the Setpoint control plane.

Flags:
  --data-dir DIR              where state, certificates and the kubeconfig live (default ./.setpoint)
  --storage sqlite|etcd       storage backend (default sqlite, a file in the data dir)
  --etcd-endpoints URL,...    etcd client URLs (with --storage etcd)
  --etcd-prefix PREFIX        key prefix in etcd for this installation (default /setpoint/)
  --etcd-compaction-interval D
                              compact etcd's history this often, to the revision of one
                              interval earlier (default 5m; 0: never)
  --listen HOST:PORT          address to serve on (default 127.0.0.1:6443; port 0 picks one)
  --tls-san NAME,...          extra DNS names or IPs for the serving certificate
  --token-auth-file FILE      more bearer tokens: CSV lines token,user,uid[,"group1,group2"]
  --client-ca-file FILE       more CAs (PEM) whose client certificates authenticate: the
                              subject's CN is the user, each O a group (the data dir's CA
                              always does; the kubeconfig's admin presents one it signed)
  --service-cluster-ip-range CIDR
                              where Services' cluster IPs come from (default 127.100.0.0/16:
                              reachable on this machine with no setup; the first one is the
                              kubernetes Service's)
  --kubernetes-version 1.N    Kubernetes version to report, 1.27 to 1.33 (default 1.${DEFAULT_KUBERNETES_MINOR})
  --max-requests-inflight N   read-only requests served at once; more get 429 with Retry-After
                              (default 400; 0: no limit; watches do not count)
  --max-mutating-requests-inflight N
                              mutating requests served at once (default 200; 0: no limit)
  --audit-policy-file FILE    keep an audit log with this audit.k8s.io/v1 Policy (YAML or
                              JSON; rules matched in order, the first match gives the level)
  --audit-log-path PATH       where audit events go, one JSON line each ("-": stdout);
                              needed with --audit-policy-file
  --audit-log-maxsize MB      rotate the log before it grows past this size (default 100)
  --audit-log-maxbackup N     rotated logs kept, named with the time of rotation (default 0: all)
  --audit-log-maxage DAYS     days a rotated log is kept (default 0: no limit)
  --no-controllers            do not run the built-in controllers in this process
  --disable-admission-plugins NAMES
                              admission plugins to switch off (comma-separated; known:
                              ServiceAccount, which defaults Pods' service account, refuses
                              one that does not exist and mounts the kube-api-access volume)
  --no-agent                  do not run a node agent (by default one runs the Pods bound to
                              this host's Node as processes; see setpoint agent --help)
  --agent-listen HOST:PORT    the agent's authenticated endpoint, which serves kubectl logs
                              (default ${DEFAULT_AGENT_SECURE_LISTEN}; port 0 picks one)
  --gateway-listen HOST:PORT  where the gateway serves Ingresses (default ${DEFAULT_GATEWAY_LISTEN})
  --no-gateway                do not run the gateway (see setpoint gateway --help)
  --disable-controllers NAME,...  built-in controllers not to run (${BUILTIN_CONTROLLER_NAMES.join(", ")})
  --event-ttl DURATION        how long an Event lives after its latest occurrence (default 1h)
  --node-monitor-grace-period DURATION  how long a Node may go without renewing its Lease
                              before it is marked Unknown (default 50s)
  --terminated-pod-gc-threshold N  terminated Pods kept before the oldest are deleted
                              (default 12500; 0: no limit)
${logUsage(30)}`;

export function parseKubernetesVersion(s: string): number {
  const m = /^v?1\.(\d+)(?:\.\d+)?$/.exec(s);
  const minor = m ? Number(m[1]) : Number.NaN;
  if (!(minor >= 27 && minor <= 33)) {
    throw new UsageError(`--kubernetes-version must be 1.27 to 1.33, got ${JSON.stringify(s)}`);
  }
  return minor;
}

/** The flags of `up`, for parseArgs. */
const UP_OPTIONS = {
  "data-dir": { type: "string", default: ".setpoint" },
  storage: { type: "string", default: "sqlite" },
  "etcd-endpoints": { type: "string" },
  "etcd-prefix": { type: "string", default: "/setpoint/" },
  "etcd-compaction-interval": { type: "string" },
  listen: { type: "string", default: "127.0.0.1:6443" },
  "tls-san": { type: "string", default: "" },
  "token-auth-file": { type: "string" },
  "client-ca-file": { type: "string" },
  "kubernetes-version": { type: "string", default: `1.${DEFAULT_KUBERNETES_MINOR}` },
  "service-cluster-ip-range": { type: "string" },
  "max-requests-inflight": { type: "string" },
  "max-mutating-requests-inflight": { type: "string" },
  "audit-policy-file": { type: "string" },
  "audit-log-path": { type: "string" },
  "audit-log-maxsize": { type: "string" },
  "audit-log-maxbackup": { type: "string" },
  "audit-log-maxage": { type: "string" },
  ...LOG_OPTIONS,
  "no-controllers": { type: "boolean", default: false },
  "disable-admission-plugins": { type: "string", default: "" },
  "no-agent": { type: "boolean", default: false },
  "agent-listen": { type: "string", default: DEFAULT_AGENT_SECURE_LISTEN },
  "gateway-listen": { type: "string" },
  "no-gateway": { type: "boolean", default: false },
  "disable-controllers": { type: "string" },
  "event-ttl": { type: "string" },
  "node-monitor-grace-period": { type: "string" },
  "terminated-pod-gc-threshold": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/** A non-negative count flag as `{ [key]: n }`, or nothing when it is not given. */
function optionalCount<K extends string>(
  flag: string,
  value: string | undefined,
  key: K,
): Partial<Record<K, number>> {
  if (value === undefined) return {};
  if (!/^\d+$/.test(value)) {
    throw new UsageError(`--${flag} must be a whole number, got ${JSON.stringify(value)}`);
  }
  return { [key]: Number(value) } as Partial<Record<K, number>>;
}

/** `--storage` and its etcd flags as the control plane's storage options. */
export function parseStorage(values: {
  storage: string;
  "etcd-endpoints"?: string;
  "etcd-prefix": string;
  "etcd-compaction-interval"?: string;
}): StorageOptions {
  switch (values.storage) {
    case "sqlite":
      return { backend: "sqlite" };
    case "etcd": {
      const endpoints = (values["etcd-endpoints"] ?? "")
        .split(",")
        .map((e) => e.trim())
        .filter(Boolean);
      if (endpoints.length === 0) {
        throw new UsageError("--storage etcd needs --etcd-endpoints URL[,URL...]");
      }
      const interval = values["etcd-compaction-interval"];
      return {
        backend: "etcd",
        endpoints,
        prefix: values["etcd-prefix"],
        ...(interval !== undefined
          ? { compactionIntervalMs: interval.trim() === "0" ? 0 : parseDuration(interval) }
          : {}),
      };
    }
    default:
      throw new UsageError(
        `unknown --storage ${JSON.stringify(values.storage)}: use sqlite or etcd`,
      );
  }
}

/** The one line a failed start prints: what went wrong and the flag that changes it. */
export function startupMessage(err: StartupError, dataDir: string): string {
  switch (err.failure) {
    case "address-in-use":
    case "address-unavailable":
      return `${err.message}; serve on another address with --listen HOST:PORT`;
    case "store-locked":
      return `the data dir ${dataDir} is in use: ${err.message.replace(/^cannot open store \S+: /, "")}; stop that process or use another --data-dir`;
    case "store-unusable":
      return `${err.message}; use another --data-dir`;
    case "etcd-unreachable":
      return `${err.message}; check that etcd runs there, or set --etcd-endpoints`;
  }
}

/** The audit flags as the apiserver's audit options; undefined without them. */
export async function parseAuditFlags(values: {
  "audit-policy-file"?: string | undefined;
  "audit-log-path"?: string | undefined;
  "audit-log-maxsize"?: string | undefined;
  "audit-log-maxbackup"?: string | undefined;
  "audit-log-maxage"?: string | undefined;
}): Promise<AuditOptions | undefined> {
  const policyFile = values["audit-policy-file"];
  const path = values["audit-log-path"];
  const rotation = {
    ...optionalCount("audit-log-maxsize", values["audit-log-maxsize"], "maxSizeMB"),
    ...optionalCount("audit-log-maxbackup", values["audit-log-maxbackup"], "maxBackups"),
    ...optionalCount("audit-log-maxage", values["audit-log-maxage"], "maxAgeDays"),
  };
  if (policyFile === undefined && path === undefined) {
    if (Object.keys(rotation).length > 0) {
      throw new UsageError("--audit-log-maxsize, -maxbackup and -maxage need --audit-log-path");
    }
    return undefined;
  }
  if (policyFile === undefined) {
    throw new UsageError(
      "--audit-log-path needs --audit-policy-file: without a policy nothing is audited",
    );
  }
  if (path === undefined || path === "") {
    throw new UsageError("--audit-policy-file needs --audit-log-path (a file, or - for stdout)");
  }
  let text: string;
  try {
    text = await readFile(policyFile, "utf8");
  } catch (e) {
    throw new UsageError(`--audit-policy-file: ${e instanceof Error ? e.message : String(e)}`);
  }
  let policy: Policy;
  try {
    policy = parsePolicy(text);
  } catch (e) {
    if (e instanceof PolicyError) {
      throw new UsageError(`--audit-policy-file: invalid audit policy ${policyFile}: ${e.message}`);
    }
    throw e;
  }
  if (path === "-") return { policy, path, ...rotation };
  const file = resolve(path);
  try {
    // As kube-apiserver does at start: the directory made, the file openable for appending.
    await mkdir(dirname(file), { recursive: true });
    await (await open(file, "a", 0o600)).close();
  } catch (e) {
    throw new UsageError(`--audit-log-path: ${e instanceof Error ? e.message : String(e)}`);
  }
  return { policy, path: file, ...rotation };
}

export async function up(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: UP_OPTIONS, strict: true });
  if (values.help) {
    process.stdout.write(UP_USAGE);
    return 0;
  }
  const dataDir = resolve(values["data-dir"]);
  const { host, port } = parseListen(values.listen);
  parseListen(values["agent-listen"]);
  const kubernetesMinor = parseKubernetesVersion(values["kubernetes-version"]);
  const clusterIPRange = values["service-cluster-ip-range"];
  if (clusterIPRange !== undefined) {
    try {
      parseClusterIPRange(clusterIPRange);
    } catch (err) {
      throw new UsageError(`--service-cluster-ip-range: ${(err as Error).message}`);
    }
  }
  const inflight = {
    ...optionalCount("max-requests-inflight", values["max-requests-inflight"], "readOnly"),
    ...optionalCount(
      "max-mutating-requests-inflight",
      values["max-mutating-requests-inflight"],
      "mutating",
    ),
  };
  const storage = parseStorage(values);
  const audit = await parseAuditFlags(values);
  const { logger, format } = createCliLogger(values);
  let disabledControllers: string[];
  let eventTtlMs: number | undefined;
  let nodeFlags: { nodeMonitorGracePeriodMs?: number; terminatedPodGcThreshold?: number };
  try {
    disabledControllers = parseControllerList(values["disable-controllers"]);
    eventTtlMs = values["event-ttl"] ? parseDuration(values["event-ttl"]) : undefined;
    nodeFlags = parseNodeFlags(values);
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

  let clientCaCerts: string[] | undefined;
  const clientCaFile = values["client-ca-file"];
  if (clientCaFile !== undefined) {
    let text: string;
    try {
      text = await readFile(clientCaFile, "utf8");
    } catch (e) {
      throw new UsageError(`--client-ca-file: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (!text.includes("-----BEGIN CERTIFICATE-----")) {
      throw new UsageError(`--client-ca-file: ${clientCaFile} holds no PEM certificate`);
    }
    clientCaCerts = [text];
  }

  // Signals are taken from here on: one during the start lets the start finish (or
  // fail and clean up) and then stops, so an interrupted first start does not leave
  // a half-made data dir. A second one has the default effect and ends the process.
  let signalled: string | undefined;
  let wake = (): void => {};
  const onSignal = (signal: string): void => {
    signalled ??= signal;
    wake();
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);

  const disabledPlugins = values["disable-admission-plugins"].split(",").filter(Boolean);
  for (const name of disabledPlugins) {
    if (!ADMISSION_PLUGINS.includes(name)) {
      throw new UsageError(
        `--disable-admission-plugins: unknown plugin ${JSON.stringify(name)}; known: ${ADMISSION_PLUGINS.join(", ")}`,
      );
    }
  }
  let plane: ControlPlane;
  try {
    plane = await startControlPlane({
      dataDir,
      storage,
      host,
      port,
      tlsSans: values["tls-san"].split(",").filter(Boolean),
      extraTokens,
      kubernetesMinor,
      ...(clusterIPRange ? { serviceRanges: { ...DEFAULT_SERVICE_RANGES, clusterIPRange } } : {}),
      inflight,
      ...(clientCaCerts ? { clientCaCerts } : {}),
      ...(audit ? { audit } : {}),
      logger,
      identityLease: true,
      serviceAccountAdmission: !disabledPlugins.includes("ServiceAccount"),
      // The built-in controllers, in process, as loopback clients of the API. They
      // campaign for the controller managers' Lease, so a separate
      // `setpoint controller-manager --leader-elect` can stand by beside them.
      controllers: values["no-controllers"]
        ? false
        : {
            disabled: disabledControllers,
            enabled: OFF_BY_DEFAULT_CONTROLLERS,
            leaderElection: true,
            ...(eventTtlMs ? { eventTtlMs } : {}),
            ...nodeFlags,
          },
    });
  } catch (err) {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    if (!(err instanceof StartupError)) throw err;
    logger.flush?.();
    process.stderr.write(`setpoint up: ${startupMessage(err, dataDir)}\n`);
    return 1;
  }

  let agent: NodeAgentProcess | undefined;
  let gateway: Awaited<ReturnType<typeof startUpGateway>>;
  try {
    gateway = values["no-gateway"]
      ? undefined
      : await startUpGateway({
          config: plane.config,
          // The gateway is system:setpoint:gateway, not the admin (the class is made as the admin).
          gatewayConfig: await componentRestConfig(plane.dir, plane.url, GATEWAY_IDENTITY),
          dataDir,
          listen: values["gateway-listen"],
          logger,
        });
  } catch (err) {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await plane.stop();
    process.stderr.write(`setpoint up: the gateway cannot listen: ${(err as Error).message}\n`);
    return 1;
  }
  if (signalled === undefined) {
    printBanner(plane, values.storage, logger, format, gateway?.address);
    if (!values["no-agent"]) {
      // The agent is its node (system:node:NAME in system:nodes), not the admin.
      const nodeKubeconfig = join(plane.dir, NODE_KUBECONFIG_FILE);
      await writeComponentKubeconfig(
        nodeKubeconfig,
        plane.dir,
        plane.url,
        nodeIdentity(defaultNodeName()),
      );
      agent = startNodeAgent({
        dataDir,
        kubeconfig: nodeKubeconfig,
        secureListen: values["agent-listen"],
        logLevel: values["log-level"],
        logFormat: format,
      });
    }
    // A signal that came while the agent was being set up has already called wake().
    if (signalled === undefined) {
      await new Promise<void>((done) => {
        wake = done;
      });
    }
  }
  logger.info({ signal: signalled }, "shutting down");
  await agent?.stop();
  await gateway?.stop(5000);
  await plane.stop();
  return 0;
}

/** Where it serves and the `export KUBECONFIG=...` line; see the module comment. */
function printBanner(
  plane: ControlPlane,
  storage: string,
  logger: Logger,
  format: LogFormat,
  gatewayAddress?: string,
): void {
  const controllers = plane.controllers ? plane.controllers.names : undefined;
  if (format === "json") {
    logger.info(
      {
        url: plane.url,
        storage,
        kubeconfig: plane.kubeconfigPath,
        controllers: controllers ?? null,
        gateway: gatewayAddress ? `http://${gatewayAddress}` : null,
      },
      "serving",
    );
    if (stdoutIsStderr()) return;
  }
  process.stdout.write(
    `Setpoint is serving at ${plane.url} (storage: ${storage})\n` +
      `export KUBECONFIG=${plane.kubeconfigPath}\n` +
      `Built-in controllers: ${controllers ? controllers.join(", ") || "none" : "off"}\n` +
      (gatewayAddress ? `Gateway (IngressClass setpoint) at http://${gatewayAddress}\n` : ""),
  );
}
