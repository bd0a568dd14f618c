/**
 * How the commands that run for a while (`up`, `controller-manager`) log: pino
 * records on stderr, as readable lines when stderr is a terminal (log-text.ts),
 * as JSON, one record a line, when it is not (a file, a pipe, a log collector) or
 * with `--log-format json`. `--log-level` and `--log-format` mean the same on
 * every command; LOG_OPTIONS is their shared parseArgs definition.
 */
import { fstatSync } from "node:fs";
import { type Logger, type LoggerOptions, pino } from "pino";
import { formatRecord } from "./log-text.ts";
import { UsageError } from "./usage-error.ts";

export type LogFormat = "text" | "json";

/** The log levels `--log-level` accepts. */
export const LOG_LEVELS = ["trace", "debug", "info", "warn", "error", "fatal", "silent"] as const;

/** The flags every logging command takes, for parseArgs. */
export const LOG_OPTIONS = {
  "log-level": { type: "string", default: "info" },
  "log-format": { type: "string" },
} as const;

/** Usage lines of LOG_OPTIONS, aligned with a command's other flags at `width`. */
export function logUsage(width: number): string {
  return (
    `${"  --log-level LEVEL".padEnd(width)}trace, debug, info, warn, error (default info)\n` +
    `${"  --log-format text|json".padEnd(width)}readable lines, or one JSON record a line\n` +
    `${"".padEnd(width)}(default: text on a terminal, json otherwise)\n`
  );
}

/** The format to log in: as asked, else text when stderr is a terminal. */
export function chooseLogFormat(flag: string | undefined, stderrIsTty: boolean): LogFormat {
  if (flag === undefined || flag === "") return stderrIsTty ? "text" : "json";
  if (flag === "text" || flag === "json") return flag;
  throw new UsageError(`--log-format must be text or json, got ${JSON.stringify(flag)}`);
}

/** Checks `--log-level`. */
export function checkLogLevel(level: string): string {
  if (!(LOG_LEVELS as readonly string[]).includes(level)) {
    throw new UsageError(
      `--log-level must be one of ${LOG_LEVELS.join(", ")}, got ${JSON.stringify(level)}`,
    );
  }
  return level;
}

export interface CliLogger {
  logger: Logger;
  format: LogFormat;
}

/** The logger of a command, from its `--log-level` and `--log-format` values. */
export function createCliLogger(values: { "log-level": string; "log-format"?: string }): CliLogger {
  const level = checkLogLevel(values["log-level"]);
  const format = chooseLogFormat(values["log-format"], process.stderr.isTTY === true);
  const opts: LoggerOptions = { level };
  if (format === "json") return { logger: pino(opts, pino.destination(2)), format };
  const colour = process.stderr.isTTY === true && !process.env.NO_COLOR;
  const stream = { write: (line: string) => process.stderr.write(formatRecord(line, colour)) };
  return { logger: pino(opts, stream), format };
}

/** Whether stdout and stderr are one file (e.g. `2>&1` into a file or a pipe). */
export function stdoutIsStderr(): boolean {
  try {
    const out = fstatSync(1);
    const err = fstatSync(2);
    return out.dev === err.dev && out.ino === err.ino;
  } catch {
    return false;
  }
}
