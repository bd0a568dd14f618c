/**
 * The log relay (relay.ts) as the agent runs it: a detached helper
 * (../detached-process.ts) that outlives the agent as Pods do, its identity in
 * DATA/log-relay.json and its own output in DATA/log-relay.log; adopted when it
 * still runs, started again when it died.
 */
import type { RuntimeLogger } from "@setpoint/runtime";
import { DetachedProcess } from "../detached-process.ts";

/** The environment variable naming a log relay's data directory (to find it in /proc). */
export const LOG_RELAY_DATA_DIR_ENV = "SETPOINT_LOG_RELAY_DATA_DIR";

export class LogRelayProcess extends DetachedProcess {
  constructor(opts: {
    dataDir: string;
    logger: RuntimeLogger;
    command?: string[] | undefined;
    /** Rotation (default 10 MiB, 5 files). */
    maxBytes?: number | undefined;
    maxFiles?: number | undefined;
  }) {
    super({
      name: "log-relay",
      title: "log relay",
      dataDir: opts.dataDir,
      args: [
        ...(opts.maxBytes ? ["--log-max-bytes", String(opts.maxBytes)] : []),
        ...(opts.maxFiles ? ["--log-max-files", String(opts.maxFiles)] : []),
      ],
      envVar: LOG_RELAY_DATA_DIR_ENV,
      logger: opts.logger,
      command: opts.command,
    });
  }
}
