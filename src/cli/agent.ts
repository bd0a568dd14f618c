/**
 * `setpoint agent`: runs a node agent (src/agent/) against an API server: it
 * registers its Node, runs the Pods bound to it as processes, and keeps them
 * running when the API server is gone. On SIGINT/SIGTERM it exits and leaves its
 * Pods running (their state is in the data dir for the next start), unless
 * --stop-pods-on-exit.
 */
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { Client, KubeconfigError, loadKubeconfig } from "@setpoint/runtime";
import { Agent, DEFAULT_POD_RANGE } from "../agent/index.ts";
import { createCliLogger, LOG_OPTIONS, logUsage } from "./logging.ts";
import { defaultNodeName } from "./node-name.ts";
import { parseListen } from "./up.ts";
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
  --listen HOST:PORT         the agent's endpoint, /healthz and /pods (default 127.0.0.1:0)
  --stop-pods-on-exit        stop every Pod when the agent exits (default: leave them running)
${logUsage(29)}`;

export async function agent(argv: string[]): Promise<number> {
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
      "stop-pods-on-exit": { type: "boolean", default: false },
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
  const range = values["pod-range"] === undefined ? DEFAULT_POD_RANGE : Number(values["pod-range"]);
  if (!Number.isInteger(range) || range < 1 || range > 254) {
    throw new UsageError(
      `--pod-range must be 1 to 254, got ${JSON.stringify(values["pod-range"])}`,
    );
  }
  const nodeName = values["node-name"] ?? defaultNodeName();
  const listen = parseListen(values.listen);
  const restConfig = loadKubeconfig({ path: values.kubeconfig, context: values.context });
  const { logger } = createCliLogger(values);
  const dataDir = resolve(values["data-dir"]);
  const instance = new Agent({
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
    logger,
  });
  await instance.start();
  process.stdout.write(
    `agent ${nodeName} running ${instance.workers.size} pods from ${dataDir}; endpoint http://${listen.host}:${instance.port} (pods 127.${range}.x.y) against ${restConfig.server}\n`,
  );
  await new Promise<void>((done) => {
    const onSignal = (signal: string) => {
      logger.info({ signal, stopPods: values["stop-pods-on-exit"] }, "shutting down");
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      done();
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    const parent = values["parent-pid"] ? Number(values["parent-pid"]) : undefined;
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
  await instance.stop({ stopPods: values["stop-pods-on-exit"] });
  return 0;
}
