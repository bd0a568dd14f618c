/**
 * `setpoint agent`: runs a node agent (src/agent/) against an API server: it
 * registers its Node, runs the Pods bound to it as processes, serves Services'
 * cluster IPs and node ports (src/proxy/), and keeps both going when the API
 * server is gone. On SIGINT/SIGTERM it exits and leaves its
 * Pods running (their state is in the data dir for the next start), unless
 * --stop-pods-on-exit.
 *
 * With --simulate N it runs N simulated nodes instead (src/agent/simulate/):
 * Nodes with Lease heartbeats whose Pods become Running and Ready (and
 * Succeeded, for restartPolicy Never/OnFailure) without any process.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { setFlagsFromString } from "node:v8";
import { Client, KubeconfigError, loadKubeconfig } from "@setpoint/runtime";
import { Agent, DEFAULT_POD_RANGE } from "../agent/index.ts";
import {
  DEFAULT_CLUSTER_IP_RANGE,
  ISOLATED_POD_NET,
  ISOLATION_MODES,
  type IsolationMode,
  IsolationUnavailableError,
  parseCidr,
} from "../agent/sandbox/index.ts";
import { DEFAULT_SIMULATED_RUN_MS, Simulator } from "../agent/simulate/index.ts";
import { DEFAULT_AGENT_SECURE_LISTEN } from "./agent-listen.ts";
import { parseDuration, parseListen } from "./flags.ts";
import { createCliLogger, LOG_OPTIONS, logUsage } from "./logging.ts";
import { defaultNodeName } from "./node-name.ts";
import { UsageError } from "./usage-error.ts";

export const AGENT_USAGE = `Usage: setpoint agent [--kubeconfig FILE] [flags]

Runs a node agent: registers the Node, runs the Pods bound to it as local
processes, and keeps them running while the API server is away.

Flags:
  --kubeconfig FILE          kubeconfig of the API server (default: $KUBECONFIG, then ~/.kube/config)
  --context NAME             kubeconfig context to use
  --node-name NAME           the Node's name (default: this machine's hostname)
  --data-dir DIR             state, logs and images of this agent (default ./.setpoint/agent)
  --image-dir DIR            the image store (default DATA-DIR/images)
  --pod-range N              Pod addresses are 127.N.x.y (default ${DEFAULT_POD_RANGE}); one range per agent
  --listen HOST:PORT         the agent's local status endpoint, /healthz and /pods over plain
                             HTTP (default 127.0.0.1:0)
  --secure-listen HOST:PORT  the authenticated HTTPS endpoint the API server calls for
                             kubectl logs, published in the Node (default ${DEFAULT_AGENT_SECURE_LISTEN};
                             port 0 picks one); only the API server's client certificate is let in
  --client-ca-file FILE      CA (PEM) that signs the API server's client certificate
                             (default: the kubeconfig's certificate-authority)
  --stop-pods-on-exit        stop every Pod when the agent exits (default: leave them running)
  --no-service-proxy         do not serve Services' cluster IPs and node ports on this machine
  --isolation MODE           none (default), or namespaces: each Pod in a network namespace of its
                             own (addresses 10.N.x.y behind the bridge spbrN) and each container in
                             a mount namespace with its volumes at their mountPaths (root on Linux)
  --service-cluster-ip-range CIDR
                             the Services' cluster IPs, routed from isolated Pods to this host's
                             service proxy (default ${DEFAULT_CLUSTER_IP_RANGE}, the apiserver's default)

Simulated nodes (no processes; for tests and benchmarks):
  --simulate N               run N simulated nodes named PREFIX0..PREFIX{N-1} instead of a real one
  --node-prefix PREFIX       their names' prefix (default sim-)
  --heartbeat DURATION       how often they renew their Leases (default 10s)
  --run-time DURATION        how long a Pod with restartPolicy Never/OnFailure runs before it succeeds (default ${DEFAULT_SIMULATED_RUN_MS / 1000}s)
${logUsage(29)}`;

export async function agent(argv: string[]): Promise<number> {
  // The agent lives as long as its node and is idle most of the time: V8's young
  // generation stays at its starting size instead of growing under a burst of work
  // (Pods starting) and being held from then on (about 30 MiB resident with 200 Pods).
  // The flag is read each time the young generation would grow, so setting it now counts.
  setFlagsFromString("--semi-space-growth-factor=1");
  try {
    return await run(argv);
  } catch (err) {
    if (
      err instanceof UsageError ||
      err instanceof KubeconfigError ||
      (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")
    ) {
      process.stderr.write(`setpoint agent: ${(err as Error).message}\n\n${AGENT_USAGE}`);
      return 2;
    }
    throw err;
  }
}

async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      kubeconfig: { type: "string" },
      context: { type: "string" },
      "node-name": { type: "string" },
      "data-dir": { type: "string", default: ".setpoint/agent" },
      "image-dir": { type: "string" },
      "pod-range": { type: "string" },
      listen: { type: "string", default: "127.0.0.1:0" },
      "secure-listen": { type: "string", default: DEFAULT_AGENT_SECURE_LISTEN },
      "client-ca-file": { type: "string" },
      "stop-pods-on-exit": { type: "boolean", default: false },
      simulate: { type: "string" },
      "node-prefix": { type: "string", default: "sim-" },
      heartbeat: { type: "string" },
      "run-time": { type: "string" },
      "no-service-proxy": { type: "boolean", default: false },
      isolation: { type: "string", default: "none" },
      "service-cluster-ip-range": { type: "string" },
      // Internal (setpoint up): exit when this process is no longer the parent.
      "parent-pid": { type: "string" },
      ...LOG_OPTIONS,
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(AGENT_USAGE);
    return 0;
  }
  if (values.simulate !== undefined) return simulate(values);
  const range = values["pod-range"] === undefined ? DEFAULT_POD_RANGE : Number(values["pod-range"]);
  if (!Number.isInteger(range) || range < 1 || range > 254) {
    throw new UsageError(
      `--pod-range must be 1 to 254, got ${JSON.stringify(values["pod-range"])}`,
    );
  }
  const isolation = values.isolation as IsolationMode;
  if (!ISOLATION_MODES.includes(isolation)) {
    throw new UsageError(
      `--isolation must be one of ${ISOLATION_MODES.join(", ")}, got ${JSON.stringify(values.isolation)}`,
    );
  }
  const clusterIPRange = values["service-cluster-ip-range"];
  if (clusterIPRange !== undefined && !parseCidr(clusterIPRange)?.bits) {
    throw new UsageError(
      `--service-cluster-ip-range must be an IPv4 CIDR such as ${DEFAULT_CLUSTER_IP_RANGE}, got ${JSON.stringify(clusterIPRange)}`,
    );
  }
  const nodeName = values["node-name"] ?? defaultNodeName();
  const listen = parseListen(values.listen);
  const secure = parseListen(values["secure-listen"]);
  const restConfig = loadKubeconfig({ path: values.kubeconfig, context: values.context });
  let clientCa = restConfig.ca?.toString("utf8");
  if (values["client-ca-file"] !== undefined) {
    try {
      clientCa = readFileSync(values["client-ca-file"], "utf8");
    } catch (err) {
      throw new UsageError(`--client-ca-file: ${(err as Error).message}`);
    }
  }
  const { logger } = createCliLogger(values);
  const dataDir = resolve(values["data-dir"]);
  const refuse = (err: unknown) => {
    process.stderr.write(`setpoint agent: --isolation=${isolation}: ${(err as Error).message}\n`);
    return 1;
  };
  let instance: Agent;
  try {
    instance = newAgent();
  } catch (err) {
    if (err instanceof IsolationUnavailableError) return refuse(err);
    throw err;
  }
  function newAgent(): Agent {
    return new Agent({
      client: new Client({
        ...restConfig,
        userAgent: `setpoint-agent/${nodeName}`,
      }),
      nodeName,
      dataDir,
      imageDir: values["image-dir"] ? resolve(values["image-dir"]) : undefined,
      podRange: range,
      listenHost: listen.host,
      listenPort: listen.port,
      secureListenHost: secure.host,
      secureListenPort: secure.port,
      ...(clientCa ? { clientCa } : {}),
      logger,
      serviceProxy: !values["no-service-proxy"],
      isolation,
      ...(clusterIPRange ? { serviceClusterIPRange: clusterIPRange } : {}),
    });
  }
  try {
    await instance.start();
  } catch (err) {
    if (err instanceof IsolationUnavailableError) {
      await instance.stop();
      return refuse(err);
    }
    if ((err as NodeJS.ErrnoException).code === "EADDRINUSE") {
      process.stderr.write(
        `setpoint agent: ${(err as Error).message}; serve on another address with --secure-listen HOST:PORT (or --listen)\n`,
      );
      await instance.stop();
      return 1;
    }
    throw err;
  }
  process.stdout.write(
    `agent ${nodeName} running ${instance.workers.size} pods from ${dataDir}; endpoint http://${listen.host}:${instance.port} and secure endpoint https://${secure.host}:${instance.securePort} (pods ${instance.isolation ? `${ISOLATED_POD_NET}.${range}.x.y in their own namespaces` : `127.${range}.x.y`}) against ${restConfig.server}\n`,
  );
  await untilSignal(logger, values["parent-pid"], values["stop-pods-on-exit"]);
  await instance.stop({ stopPods: values["stop-pods-on-exit"] });
  return 0;
}

/** Parses a duration flag (Go syntax); a usage error names the flag. */
function durationFlag(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  try {
    return parseDuration(text);
  } catch {
    throw new UsageError(
      `--${flag} must be a duration such as 1s or 500ms, got ${JSON.stringify(text)}`,
    );
  }
}

/** `setpoint agent --simulate N`: simulated nodes until SIGINT/SIGTERM (or the parent exits). */
async function simulate(values: {
  simulate?: string;
  "node-prefix"?: string;
  heartbeat?: string;
  "run-time"?: string;
  kubeconfig?: string;
  context?: string;
  "parent-pid"?: string;
  "log-level": string;
  "log-format"?: string;
}): Promise<number> {
  const count = Number(values.simulate);
  if (!Number.isInteger(count) || count < 1 || count > 10_000) {
    throw new UsageError(
      `--simulate must be 1 to 10000 nodes, got ${JSON.stringify(values.simulate)}`,
    );
  }
  const heartbeatMs = durationFlag("heartbeat", values.heartbeat);
  const runMs = durationFlag("run-time", values["run-time"]);
  const restConfig = loadKubeconfig({ path: values.kubeconfig, context: values.context });
  const { logger } = createCliLogger(values);
  const prefix = values["node-prefix"] ?? "sim-";
  const sim = new Simulator({
    client: new Client({ ...restConfig, userAgent: "setpoint-agent/simulated" }),
    nodes: count,
    prefix,
    heartbeatMs,
    runMs,
    logger,
  });
  await sim.start();
  process.stdout.write(
    `agent simulating ${count} node${count > 1 ? "s" : ""} ${prefix}0${count > 1 ? `..${prefix}${count - 1}` : ""} against ${restConfig.server}\n`,
  );
  await untilSignal(logger, values["parent-pid"]);
  await sim.stop();
  return 0;
}

/** Resolves on SIGINT or SIGTERM, or once `parentPid` is no longer this process's parent. */
function untilSignal(
  logger: { info(o: object, msg: string): void },
  parentPid: string | undefined,
  stopPods?: boolean,
): Promise<void> {
  return new Promise<void>((done) => {
    const onSignal = (signal: string) => {
      logger.info({ signal, ...(stopPods === undefined ? {} : { stopPods }) }, "shutting down");
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      done();
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    const parent = parentPid ? Number(parentPid) : undefined;
    if (parent) {
      const watch = setInterval(() => {
        if (process.ppid !== parent) {
          clearInterval(watch);
          onSignal("parent exited");
        }
      }, 1_000);
      watch.unref();
    }
  });
}
