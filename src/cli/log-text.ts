/**
 * Pino's JSON log records as readable lines, for a person at a terminal:
 *
 *   16:31:22.188 INFO  controller-manager: became leader lease=kube-system/setpoint-controller-manager
 *
 * time of day (local), level, the record's `component` (if any), the message, then
 * the other fields as key=value (strings quoted when they hold spaces, quotes or
 * `=`; objects as JSON). An `err` comes last; its stack follows, indented, on
 * records of level error and above. Colour only when asked (a terminal without
 * NO_COLOR).
 */

/** Pino's numeric levels by name. */
const LEVELS: Record<number, string> = {
  10: "TRACE",
  20: "DEBUG",
  30: "INFO",
  40: "WARN",
  50: "ERROR",
  60: "FATAL",
};

/** ANSI colours of the level names. */
const COLOURS: Record<number, string> = {
  10: "\x1b[90m",
  20: "\x1b[36m",
  30: "\x1b[32m",
  40: "\x1b[33m",
  50: "\x1b[31m",
  60: "\x1b[35m",
};
const RESET = "\x1b[0m";
const DIM = "\x1b[2m";

/** Fields every record has, shown in the line's fixed parts or not at all. */
const FIXED = new Set(["level", "time", "pid", "hostname", "msg", "component", "err", "v"]);

function pad2(n: number, width = 2): string {
  return String(n).padStart(width, "0");
}

function clock(time: unknown): string {
  const d = typeof time === "number" ? new Date(time) : new Date();
  return `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}.${pad2(d.getMilliseconds(), 3)}`;
}

function value(v: unknown): string {
  if (typeof v === "string") return v === "" || /[\s"=]/.test(v) ? JSON.stringify(v) : v;
  if (v === null || typeof v !== "object") return String(v);
  return JSON.stringify(v);
}

/** One JSON record (a line pino wrote) as a readable line; a line that is not JSON is kept. */
export function formatRecord(line: string, colour = false): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line.endsWith("\n") ? line : `${line}\n`;
  }
  const level = typeof rec.level === "number" ? rec.level : 30;
  const name = (LEVELS[level] ?? `L${level}`).padEnd(5);
  const parts = [
    colour ? `${DIM}${clock(rec.time)}${RESET}` : clock(rec.time),
    colour ? `${COLOURS[level] ?? ""}${name}${RESET}` : name,
  ];
  const component = typeof rec.component === "string" ? `${rec.component}: ` : "";
  parts.push(`${component}${typeof rec.msg === "string" ? rec.msg : ""}`);
  for (const [k, v] of Object.entries(rec)) {
    if (!FIXED.has(k) && v !== undefined) parts.push(`${k}=${value(v)}`);
  }
  let stack = "";
  const err = rec.err as { message?: unknown; stack?: unknown } | undefined;
  if (err && typeof err === "object") {
    parts.push(`err=${value(typeof err.message === "string" ? err.message : err)}`);
    if (level >= 50 && typeof err.stack === "string") {
      stack = err.stack
        .split("\n")
        .slice(1)
        .map((l) => `    ${l.trim()}\n`)
        .join("");
    }
  }
  return `${parts.join(" ")}\n${stack}`;
}
