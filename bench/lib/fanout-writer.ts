/**
 * The writer of the fan-out benchmark, as its own process so that the offered load
 * keeps its pace however busy the process reading the watches is:
 *
 * It creates ConfigMaps named `f-<first + seq>-<µs>`, where µs is the wall-clock
 * time the request was sent (microseconds since the epoch), at `rate` per second for
 * `ms` milliseconds, then reports `{ sent, failed, seconds, ackedMicros }` over IPC
 * and exits.
 *
 *   node --import tsx bench/lib/fanout-writer.ts <url> <collection path> <rate/s> <ms> <bytes> <first> [ca file]
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
  /** How long each successful create took to be answered (ms). */
  answeredMs: number[];
  /**
   * When each create's answer was read (µs since the epoch), by seq (0 for the first
   * this writer sent); 0 for a create that failed.
   */
  ackedMicros: number[];
}

async function main(): Promise<void> {
  const [url, path, rateText, msText, bytesText, firstText, caFile] = process.argv.slice(2);
  const first = Number(firstText);
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
  const ackedMicros: number[] = [];
  const start = performance.now();
  while (performance.now() - start < ms) {
    const due = Math.floor(((performance.now() - start) / 1000) * rate);
    while (sent < due) {
      const t0 = performance.now();
      const seq = sent++;
      ackedMicros[seq] = 0;
      const p = client
        .expect(201, "POST", path, body(`f-${first + seq}-${epochMicros()}`))
        .then(
          () => {
            ackedMicros[seq] = epochMicros();
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
  const report: WriterReport = {
    sent,
    failed,
    seconds: (performance.now() - start) / 1000,
    answeredMs: answered,
    ackedMicros,
  };
  client.close();
  process.send?.(report, () => process.exit(0));
}

if (process.argv[1]?.endsWith("fanout-writer.ts")) await main();
