/**
 * `setpoint log-relay`: the log relay process (src/agent/log-relay/relay.ts) the
 * agent starts and which outlives it: reads the containers' output from their
 * named pipes and writes their log files in the CRI format, each line stamped
 * with the time it was written. Exits on SIGTERM/SIGINT, or when the data
 * directory is removed.
 */
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { LogRelay } from "../agent/log-relay/index.ts";
import { runUntilStopped } from "./helper-lifetime.ts";
import { createCliLogger, LOG_OPTIONS, logUsage } from "./logging.ts";
import { UsageError } from "./usage-error.ts";

export const LOG_RELAY_USAGE = `Usage: setpoint log-relay --data-dir DIR [flags]

Writes the log files of the containers a node agent runs from DIR: reads each
container's stdout and stderr from its named pipes and appends every line in the
CRI log format, stamped with the time it was written. The agent starts it; it
keeps running while the agent restarts.

Flags:
  --data-dir DIR             the agent's data directory (required)
  --log-max-bytes N          rotate a container's log past N bytes (default 10 MiB)
  --log-max-files N          keep N files of a container's log, rotated ones included (default 5)
${logUsage(29)}`;

function positive(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new UsageError(`--${name} must be a positive integer`);
  return n;
}

export async function logRelay(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      "data-dir": { type: "string" },
      "log-max-bytes": { type: "string" },
      "log-max-files": { type: "string" },
      ...LOG_OPTIONS,
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(LOG_RELAY_USAGE);
    return 0;
  }
  if (!values["data-dir"]) throw new UsageError("--data-dir is required");
  const maxBytes = positive("log-max-bytes", values["log-max-bytes"]);
  const maxFiles = positive("log-max-files", values["log-max-files"]);
  const { logger } = createCliLogger(values);
  const dataDir = resolve(values["data-dir"]);
  return runUntilStopped(logger, "log relay", dataDir, async (onDataDirGone) => {
    const relay = new LogRelay({
      dataDir,
      logger,
      ...(maxBytes ? { maxBytes } : {}),
      ...(maxFiles ? { maxFiles } : {}),
      onDataDirGone,
    });
    await relay.start();
    return relay;
  });
}
