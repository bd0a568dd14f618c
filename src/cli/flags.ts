/**
 * Flag values the commands share: a listen address and a Go-style duration. Kept
 * apart from the commands so that one command's module does not load another's
 * (the agent's process does not hold the control plane's code).
 */
import { UsageError } from "./usage-error.ts";

/** HOST:PORT (or [IPv6]:PORT; an empty host is 127.0.0.1). */
export function parseListen(s: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(s);
  if (!m) throw new UsageError(`--listen must be HOST:PORT, got ${JSON.stringify(s)}`);
  const port = Number(m[3]);
  if (port > 65535) throw new UsageError(`--listen port out of range: ${port}`);
  return { host: m[1] ?? (m[2] || "127.0.0.1"), port };
}

const UNITS_MS: Record<string, number> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
};

/** Parses a Go-style duration ("1h", "90s", "1h30m", "500ms") into milliseconds. */
export function parseDuration(text: string): number {
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/y;
  let total = 0;
  let pos = 0;
  while (pos < text.length) {
    re.lastIndex = pos;
    const m = re.exec(text);
    if (!m) break;
    total += Number(m[1]) * UNITS_MS[m[2]];
    pos = re.lastIndex;
  }
  if (text.length === 0 || pos !== text.length || !(total > 0)) {
    throw new UsageError(`invalid duration ${JSON.stringify(text)} (e.g. 1h, 30m, 90s, 1h30m)`);
  }
  return total;
}
