/**
 * The writer of the fan-out benchmark, as its own process so that the offered load
 * keeps its pace however busy the process reading the watches is:
 *
 *   node --import tsx bench/lib/fanout-writer.ts <url> <collection path> <rate/s> <ms> <bytes> [ca file]
 *
 * It creates ConfigMaps named `f-<seq>-<µs>`, where µs is the wall-clock time the
 * request was sent (microseconds since the epoch), at `rate` per second for `ms`
 * milliseconds, then reports `{ sent, failed, seconds }` over IPC and exits.
 */
import { readFileSync } from "node:fs";
import { HttpClient } from "./http-load.ts";

/** Keep-alive connections the writer spreads its requests over. */
const WRITER_SOCKETS = 100;

/** Microseconds since the epoch, comparable across processes on one machine. */
export function epochMicros(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000);
}

export interface WriterReport {
  sent: number;
  failed: number;
  seconds: number;
  /** How long the creates took to be answered (ms): p50 and p99 of the successful ones. */
  createMs: { p50: number; p99: number };
}

/** The p-th percentile (0..100) of sorted `values`, nearest-rank; NaN when empty. */
function percentileOf(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  return values[Math.min(values.length - 1, Math.max(0, Math.ceil((p / 100) * values.length) - 1))];
}

async function main(): Promise<void> {
  const [url, path, rateText, msText, bytesText, caFile] = process.argv.slice(2);
  const rate = Number(rateText);
  const ms = Number(msText);
  const bytes = Number(bytesText);
  const client = new HttpClient(url, {
    sockets: WRITER_SOCKETS,
    ...(caFile ? { ca: readFileSync(caFile, "utf8") } : {}),
  });
  const body = (name: string) => {
    const shell = (v: string) =>
      `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"${name}"},"data":{"v":"${v}"}}`;
    return shell("x".repeat(Math.max(0, bytes - shell("").length)));
  };
  const pending = new Set<Promise<void>>();
  let sent = 0;
  let failed = 0;
  const answered: number[] = [];
  const start = performance.now();
  while (performance.now() - start < ms) {
    const due = Math.floor(((performance.now() - start) / 1000) * rate);
    while (sent < due) {
      const t0 = performance.now();
      const p = client
        .expect(201, "POST", path, body(`f-${sent++}-${epochMicros()}`))
        .then(
          () => {
            answered.push(performance.now() - t0);
          },
          () => {
            failed++;
          },
        )
        .finally(() => pending.delete(p));
      pending.add(p);
    }
    await new Promise((r) => setTimeout(r, 1));
  }
  await Promise.all(pending);
  answered.sort((a, b) => a - b);
  const report: WriterReport = {
    sent,
    failed,
    seconds: (performance.now() - start) / 1000,
    createMs: { p50: percentileOf(answered, 50), p99: percentileOf(answered, 99) },
  };
  client.close();
  process.send?.(report, () => process.exit(0));
}

if (process.argv[1]?.endsWith("fanout-writer.ts")) await main();
