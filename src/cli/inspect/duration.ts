/**
 * Durations on the command line ("90s", "10m", "1h30m", "500ms") and ages in
 * output ("3s", "4m12s", "2h5m", "3d4h"), as kubectl prints them.
 */
import { UsageError } from "../usage-error.ts";

const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/**
 * Parses a duration: one or more `<number><unit>` parts with units ms, s, m, h, d
 * ("1h30m", "2.5s"); a bare "0" is zero. Throws UsageError naming `flag`.
 */
export function parseDuration(text: string, flag: string): number {
  const s = text.trim();
  if (s === "0") return 0;
  const part = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/y;
  let total = 0;
  let at = 0;
  while (at < s.length) {
    part.lastIndex = at;
    const m = part.exec(s);
    if (!m) break;
    total += Number(m[1]) * UNIT_MS[m[2]];
    at = part.lastIndex;
  }
  if (at === 0 || at !== s.length) {
    throw new UsageError(
      `${flag} must be a duration such as 30s, 10m or 1h30m, got ${JSON.stringify(text)}`,
    );
  }
  return total;
}

/** A short age: "850ms" under a second, then "12s", "4m12s", "2h5m", "3d4h". */
export function formatAge(ms: number): string {
  if (!Number.isFinite(ms)) return "?";
  if (ms < 0) ms = 0;
  if (ms < 1_000) return `${Math.round(ms)}ms`;
  const s = Math.floor(ms / 1_000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  const d = Math.floor(h / 24);
  return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
}

/** Milliseconds since an RFC 3339 timestamp (NaN when absent or unparsable). */
export function ageOf(timestamp: string | undefined, now: number): number {
  if (!timestamp) return Number.NaN;
  const t = Date.parse(timestamp);
  return Number.isNaN(t) ? Number.NaN : now - t;
}
