/**
 * `setpoint service-proxy`: the service proxy process (src/proxy/service-proxy.ts)
 * the agent starts (src/agent/proxy-process.ts) and which outlives it: serves
 * the Services' cluster IPs and node ports from the table the agent keeps in
 * --data-dir, following the file, never asking the API server. Exits on
 * SIGTERM/SIGINT, or when the data directory is removed.
 */
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { ServiceProxy } from "../proxy/index.ts";
import { runUntilStopped } from "./helper-lifetime.ts";
import { createCliLogger, LOG_OPTIONS, logUsage } from "./logging.ts";
import { UsageError } from "./usage-error.ts";

export const SERVICE_PROXY_USAGE = `Usage: setpoint service-proxy --data-dir DIR [flags]

Serves Services' cluster IPs and node ports from the service table a node agent
keeps in DIR (services.json), following the file. The agent starts it; it keeps
running while the agent restarts.

Flags:
  --data-dir DIR             the agent's data directory (required)
  --node-address ADDR        where node ports listen (default 127.0.0.1)
${logUsage(29)}`;

export async function serviceProxy(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      "data-dir": { type: "string" },
      "node-address": { type: "string", default: "127.0.0.1" },
      ...LOG_OPTIONS,
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(SERVICE_PROXY_USAGE);
    return 0;
  }
  if (!values["data-dir"]) throw new UsageError("--data-dir is required");
  const { logger } = createCliLogger(values);
  const dataDir = resolve(values["data-dir"]);
  return runUntilStopped(logger, "service proxy", dataDir, async (onDataDirGone) => {
    const proxy = new ServiceProxy({
      dataDir,
      nodeAddress: values["node-address"],
      logger,
      onDataDirGone,
    });
    proxy.start();
    return proxy;
  });
}
