/**
 * `setpoint dev-cluster`: the several-machine layout on this one, for trying and
 * testing: three etcd members, two apiservers on them (sharing CA, admin token and
 * ServiceAccount key), two controller managers (one leads; the built-in scheduler is
 * one of their controllers), two node agents and a gateway, each a process of its
 * own on 127.0.0.1. Writes the admin's kubeconfig naming both apiservers, prints
 * where everything is, and stops everything (the agents' Pods too) on
 * SIGINT/SIGTERM. Each part authenticates as itself with a client certificate from
 * the apiservers' CA: the controller managers as system:kube-controller-manager
 * (each controller as its own ServiceAccount), their scheduler as
 * system:kube-scheduler, the agents as system:node:node-N, the gateway as
 * system:setpoint:gateway.
 *
 * Everything lives under --data-dir: layout.json (the ports, kept for the next
 * start), processes.json (names, roles, pids, addresses, log files), one directory
 * per process, logs/NAME.log, the kubeconfig, and NAME.kubeconfig for each part.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import https from "node:https";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { Node } from "@setpoint/api";
import { Client, loadKubeconfig } from "@setpoint/runtime";
import type { Logger } from "pino";
import { CLIENT_CERT_FILES, TLS_FILES } from "../../apiserver/server/certs.ts";
import {
  ADMIN_TOKEN_FILE,
  CONTROLLER_MANAGER_IDENTITY,
  type ComponentIdentity,
  CreatedFiles,
  dataDirCredentials,
  GATEWAY_IDENTITY,
  issueComponentCertificate,
  nodeIdentity,
  SCHEDULER_IDENTITY,
  SERVICE_ACCOUNT_KEY_FILE,
} from "../../controlplane/index.ts";
import { createCliLogger, LOG_OPTIONS, logUsage } from "../logging.ts";
import { ensureIngressClass } from "../up-gateway.ts";
import { UsageError } from "../usage-error.ts";
import { writeDevClusterKubeconfig } from "./kubeconfig.ts";
import {
  AGENTS,
  apiserverUrl,
  CONTROLLER_MANAGERS,
  etcdClientUrl,
  FIRST_POD_RANGE,
  type Layout,
  loadOrCreateLayout,
} from "./layout.ts";
import { ManagedProcess, type ProcessSpec } from "./processes.ts";

export const DEV_CLUSTER_USAGE = `Usage: setpoint dev-cluster [flags]

Runs a whole cluster on this machine, each part a process of its own on 127.0.0.1:
three etcd members, two apiservers (setpoint up --storage etcd), two controller
managers (--leader-elect: one leads, one stands by), two node agents (nodes
node-0 and node-1) and a gateway. Writes DATA-DIR/kubeconfig, which names both
apiservers (kubectl uses the first; --context apiserver-1 the second; Setpoint's
clients fail over between them), prints where everything is, and stops it all,
the agents' Pods included, on Ctrl-C (SIGINT) or SIGTERM.

Flags:
  --data-dir DIR             state, logs and kubeconfig (default ./.setpoint/dev-cluster);
                             ports are picked at the first start and kept in DIR/layout.json
  --etcd-bin PATH            the etcd binary (default: $ETCD_BIN, then etcd on PATH)
  --gateway-listen PORT      the gateway's HTTP port (default: a free port, kept)
  --ready-timeout DURATION   how long to wait for the cluster to be ready (default 120s)
${logUsage(29)}`;

/** Interval between readiness checks while the cluster starts. */
const POLL_MS = 200;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function devCluster(argv: string[]): Promise<number> {
  try {
    return await run(argv);
  } catch (err) {
    if (
      err instanceof UsageError ||
      (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")
    ) {
      process.stderr.write(
        `setpoint dev-cluster: ${(err as Error).message}\n\n${DEV_CLUSTER_USAGE}`,
      );
      return 2;
    }
    throw err;
  }
}

function parseSeconds(text: string): number {
  const m = /^(\d+)(s|m)?$/.exec(text);
  if (!m)
    throw new UsageError(`--ready-timeout must be like 90s or 2m, got ${JSON.stringify(text)}`);
  return Number(m[1]) * (m[2] === "m" ? 60_000 : 1_000);
}

async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      "data-dir": { type: "string", default: join(".setpoint", "dev-cluster") },
      "etcd-bin": { type: "string" },
      "gateway-listen": { type: "string" },
      "ready-timeout": { type: "string", default: "120s" },
      ...LOG_OPTIONS,
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(DEV_CLUSTER_USAGE);
    return 0;
  }
  const gatewayPort =
    values["gateway-listen"] === undefined ? undefined : Number(values["gateway-listen"]);
  if (
    gatewayPort !== undefined &&
    !(Number.isInteger(gatewayPort) && gatewayPort > 0 && gatewayPort < 65536)
  ) {
    throw new UsageError(
      `--gateway-listen must be a port, got ${JSON.stringify(values["gateway-listen"])}`,
    );
  }
  const readyTimeoutMs = parseSeconds(values["ready-timeout"]);
  const etcdBin = values["etcd-bin"] ?? process.env.ETCD_BIN ?? "etcd";
  const { logger } = createCliLogger(values);
  const dir = resolve(values["data-dir"]);
  const logs = join(dir, "logs");
  mkdirSync(logs, { recursive: true, mode: 0o700 });
  const { layout } = await loadOrCreateLayout(dir, { gatewayPort });

  const processes: ManagedProcess[] = [];
  let stopping = false;
  const onExit = (p: ManagedProcess, code: number | null, signal: string | null) => {
    if (stopping) return;
    logger.warn(
      { process: p.spec.name, pid: p.pid, code, signal, log: p.spec.logFile },
      `${p.spec.name} exited`,
    );
  };
  const start = (spec: ProcessSpec): ManagedProcess => {
    const p = new ManagedProcess(spec, onExit);
    processes.push(p);
    return p;
  };

  let signalled: string | undefined;
  let wake = (): void => {};
  const onSignal = (signal: string) => {
    signalled ??= signal;
    wake();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  const interrupted = () => signalled !== undefined;

  const stopAll = async () => {
    stopping = true;
    // The reverse of the start order: clients before apiservers before etcd.
    for (const p of [...processes].reverse()) await p.stop();
  };

  try {
    const kubeconfig = await startCluster({
      dir,
      logs,
      layout,
      etcdBin,
      logLevel: values["log-level"],
      start,
      interrupted,
      readyTimeoutMs,
      deadline: Date.now() + readyTimeoutMs,
      logger,
    });
    if (kubeconfig !== undefined) {
      writeFileSync(
        join(dir, "processes.json"),
        `${JSON.stringify(
          processes.map((p) => ({ ...p.spec, pid: p.pid, args: undefined, command: undefined })),
          null,
          2,
        )}\n`,
      );
      process.stdout.write(banner(dir, processes, kubeconfig));
      await waitNodesReady(kubeconfig, Date.now() + readyTimeoutMs, interrupted);
      if (!interrupted()) {
        process.stdout.write(`Dev cluster ready: ${AGENTS} nodes Ready. Ctrl-C stops it all.\n`);
        await new Promise<void>((done) => {
          wake = done;
          if (interrupted()) done();
        });
      }
    }
  } catch (err) {
    process.stderr.write(`setpoint dev-cluster: ${(err as Error).message}\n`);
    await stopAll();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    return 1;
  }
  logger.info({ signal: signalled }, "stopping the dev cluster");
  await stopAll();
  process.off("SIGINT", onSignal);
  process.off("SIGTERM", onSignal);
  process.stdout.write("Dev cluster stopped.\n");
  return 0;
}

interface StartContext {
  dir: string;
  logs: string;
  layout: Layout;
  etcdBin: string;
  logLevel: string;
  start: (spec: ProcessSpec) => ManagedProcess;
  interrupted: () => boolean;
  readyTimeoutMs: number;
  deadline: number;
  logger: Logger;
}

/** Starts every process in order, waiting for each tier; the kubeconfig path, or undefined if interrupted. */
async function startCluster(c: StartContext): Promise<string | undefined> {
  const { dir, logs, layout } = c;
  const setpoint = [process.argv[1]];
  const log = (name: string) => join(logs, `${name}.log`);
  const logFlags = ["--log-level", c.logLevel, "--log-format", "json"];

  // etcd: all members at once (each is healthy only once the cluster has a leader).
  const initialCluster = layout.etcd
    .map((m) => `${m.name}=http://127.0.0.1:${m.peerPort}`)
    .join(",");
  const etcds = layout.etcd.map((m) =>
    c.start({
      name: m.name,
      role: "etcd",
      command: c.etcdBin,
      args: [
        `--name=${m.name}`,
        `--data-dir=${join(dir, m.name)}`,
        `--listen-client-urls=${etcdClientUrl(m)}`,
        `--advertise-client-urls=${etcdClientUrl(m)}`,
        `--listen-peer-urls=http://127.0.0.1:${m.peerPort}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${m.peerPort}`,
        `--initial-cluster=${initialCluster}`,
        `--initial-cluster-token=${layout.clusterToken}`,
        "--initial-cluster-state=new",
        "--logger=zap",
        "--log-level=warn",
      ],
      logFile: log(m.name),
      address: etcdClientUrl(m),
    }),
  );
  for (const [i, m] of layout.etcd.entries()) {
    await waitFor(`${m.name} healthy`, c, () => etcdHealthy(etcdClientUrl(m)), etcds[i]);
  }
  if (c.interrupted()) return undefined;

  // Apiservers: the same CA, serving certificate, admin token and ServiceAccount key.
  const apiDirs = layout.apiservers.map((_, i) => join(dir, `apiserver-${i}`));
  for (const d of apiDirs) mkdirSync(d, { recursive: true, mode: 0o700 });
  const creds = await dataDirCredentials(apiDirs[0], ["127.0.0.1"], new CreatedFiles());
  const shared = [
    ...Object.values(TLS_FILES),
    ...Object.values(CLIENT_CERT_FILES),
    ADMIN_TOKEN_FILE,
    SERVICE_ACCOUNT_KEY_FILE,
  ];
  for (const d of apiDirs.slice(1)) {
    for (const f of shared)
      if (!existsSync(join(d, f))) copyFileSync(join(apiDirs[0], f), join(d, f));
  }
  const endpoints = layout.etcd.map(etcdClientUrl).join(",");
  const apiservers = layout.apiservers.map((port, i) =>
    c.start({
      name: `apiserver-${i}`,
      role: "apiserver",
      command: process.execPath,
      args: [
        ...setpoint,
        "up",
        "--data-dir",
        apiDirs[i],
        "--storage",
        "etcd",
        "--etcd-endpoints",
        endpoints,
        "--listen",
        `127.0.0.1:${port}`,
        "--no-controllers",
        "--no-agent",
        "--no-gateway",
        ...logFlags,
      ],
      logFile: log(`apiserver-${i}`),
      address: apiserverUrl(port),
    }),
  );
  const ca = creds.tls?.caCert ?? "";
  for (const [i, port] of layout.apiservers.entries()) {
    await waitFor(
      `apiserver-${i} ready`,
      c,
      () => httpsOk(`${apiserverUrl(port)}/readyz`, ca),
      apiservers[i],
    );
  }
  if (c.interrupted()) return undefined;

  const kubeconfig = join(dir, "kubeconfig");
  await writeDevClusterKubeconfig(kubeconfig, {
    servers: layout.apiservers.map(apiserverUrl),
    caCert: ca,
    token: creds.adminToken ?? "",
  });
  await ensureIngressClass(loadKubeconfig({ path: kubeconfig }), c.logger);
  // Each part as itself, with a certificate from the apiservers' CA (as `setpoint credentials`).
  const servers = layout.apiservers.map(apiserverUrl);
  const identity = async (name: string, who: ComponentIdentity): Promise<string> => {
    const made = await issueComponentCertificate(apiDirs[0], who);
    const path = join(dir, `${name}.kubeconfig`);
    await writeDevClusterKubeconfig(path, {
      servers,
      caCert: ca,
      clientCertificate: { cert: made.cert, key: made.key },
      user: who.user,
    });
    return path;
  };
  const managerKubeconfig = await identity("controller-manager", CONTROLLER_MANAGER_IDENTITY);
  const schedulerKubeconfig = await identity("scheduler", SCHEDULER_IDENTITY);
  const gatewayKubeconfig = await identity("gateway", GATEWAY_IDENTITY);

  for (let i = 0; i < CONTROLLER_MANAGERS; i++) {
    c.start({
      name: `controller-manager-${i}`,
      role: "controller-manager",
      command: process.execPath,
      args: [
        ...setpoint,
        "controller-manager",
        "--kubeconfig",
        managerKubeconfig,
        "--use-service-account-credentials",
        "--scheduler-kubeconfig",
        schedulerKubeconfig,
        "--leader-elect",
        "--health-addr",
        `127.0.0.1:${layout.controllerManagers[i]}`,
        ...logFlags,
      ],
      logFile: log(`controller-manager-${i}`),
      address: `http://127.0.0.1:${layout.controllerManagers[i]}/healthz`,
    });
  }
  for (let i = 0; i < AGENTS; i++) {
    const nodeKubeconfig = await identity(`node-${i}`, nodeIdentity(`node-${i}`));
    c.start({
      name: `agent-${i}`,
      role: "agent",
      command: process.execPath,
      args: [
        ...setpoint,
        "agent",
        "--kubeconfig",
        nodeKubeconfig,
        "--node-name",
        `node-${i}`,
        "--data-dir",
        join(dir, `agent-${i}`),
        "--image-dir",
        join(dir, "images"),
        "--pod-range",
        String(FIRST_POD_RANGE + i),
        // Two agents on one machine: each its own endpoint port.
        "--secure-listen",
        "127.0.0.1:0",
        "--stop-pods-on-exit",
        "--parent-pid",
        String(process.pid),
        // One service proxy per machine: two would bind the same cluster IPs and node ports.
        ...(i === 0 ? [] : ["--no-service-proxy"]),
        ...logFlags,
      ],
      logFile: log(`agent-${i}`),
      address: `node node-${i}, Pods on 127.${FIRST_POD_RANGE + i}.x.y`,
    });
  }
  c.start({
    name: "gateway",
    role: "gateway",
    command: process.execPath,
    args: [
      ...setpoint,
      "gateway",
      "--kubeconfig",
      gatewayKubeconfig,
      "--data-dir",
      join(dir, "gateway"),
      "--listen",
      `127.0.0.1:${layout.gateway.port}`,
      "--admin-listen",
      `127.0.0.1:${layout.gateway.adminPort}`,
      ...logFlags,
    ],
    logFile: log("gateway"),
    address: `http://127.0.0.1:${layout.gateway.port}`,
  });
  return kubeconfig;
}

/** Polls `check` until it holds; fails if `proc` exits or the deadline passes. */
async function waitFor(
  what: string,
  c: StartContext,
  check: () => Promise<boolean>,
  proc: ManagedProcess,
): Promise<void> {
  while (!c.interrupted()) {
    if (await check()) return;
    if (!proc.running) {
      throw new Error(
        `${proc.spec.name} exited while starting; the end of ${proc.spec.logFile}:\n${logTail(proc.spec.logFile)}`,
      );
    }
    if (Date.now() > c.deadline) {
      throw new Error(`${what}: not after ${c.readyTimeoutMs / 1000}s; see ${proc.spec.logFile}`);
    }
    await sleep(POLL_MS);
  }
}

/** The last lines of a log file, for a failed start. */
function logTail(file: string, lines = 8): string {
  try {
    return readFileSync(file, "utf8").trim().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

async function etcdHealthy(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(1_000) });
    return ((await res.json()) as { health?: string }).health === "true";
  } catch {
    return false;
  }
}

/** An https GET answered 200, verified against `ca`. */
function httpsOk(url: string, ca: string): Promise<boolean> {
  return new Promise((done) => {
    const req = https.get(url, { ca, timeout: 1_000 }, (res) => {
      res.resume();
      done(res.statusCode === 200);
    });
    req.on("error", () => done(false));
    req.on("timeout", () => req.destroy());
  });
}

/** Waits until every agent's Node is Ready (reported, not fatal, when it takes too long). */
async function waitNodesReady(
  kubeconfig: string,
  deadline: number,
  interrupted: () => boolean,
): Promise<void> {
  const client = new Client(loadKubeconfig({ path: kubeconfig }));
  try {
    while (!interrupted() && Date.now() < deadline) {
      try {
        const nodes = await client.list<Node>({ apiVersion: "v1", kind: "Node" });
        const ready = nodes.items.filter((n) =>
          n.status?.conditions?.some((cond) => cond.type === "Ready" && cond.status === "True"),
        );
        if (ready.length >= AGENTS) return;
      } catch {
        // an apiserver restarting: try again
      }
      await sleep(POLL_MS * 2);
    }
    if (!interrupted())
      throw new Error(`the ${AGENTS} nodes were not Ready in time; see the agents' logs`);
  } finally {
    client.close();
  }
}

/** What runs where, and the export line. */
function banner(dir: string, processes: ManagedProcess[], kubeconfig: string): string {
  const width = Math.max(...processes.map((p) => p.spec.name.length));
  const lines = processes.map(
    (p) =>
      `  ${p.spec.name.padEnd(width)}  pid ${String(p.pid ?? "-").padEnd(7)} ${p.spec.address ?? ""}`,
  );
  return (
    `Setpoint dev cluster in ${dir} (logs in ${join(dir, "logs")}, pids in ${join(dir, "processes.json")})\n` +
    `${lines.join("\n")}\n` +
    `Gateway (IngressClass setpoint) at ${processes.find((p) => p.spec.role === "gateway")?.spec.address}\n` +
    `export KUBECONFIG=${kubeconfig}\n`
  );
}
