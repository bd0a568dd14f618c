/**
 * Storage benchmark: `npm run bench:storage`.
 *
 * For each backend, in one run: creates/s with 1 and with 50 concurrent callers (1 KiB
 * values), CAS updates/s with 50 callers, and watch delivery latency p50/p99 with 100
 * watchers under write load, each beside a baseline measured in the same run (in
 * alternating slices with the store) and the ratio.
 *
 * A backend is one `Section` in SECTIONS: it opens its Store, builds its baseline (a
 * StoreBaseline: one runnable phase per rate), calls `benchStore(store, baseline)` and
 * turns the figures into rows with `storeRows`.
 *
 * BENCH_MS sets the length of each measured phase (default 2000).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { SqliteStore } from "../src/storage/sqlite.ts";
import { rawSqliteBaseline } from "./lib/raw-sqlite.ts";
import { benchStore, benchValue, DEFAULT_STORE_BENCH, storeRows } from "./lib/store-bench.ts";
import { printTable, type Row } from "./lib/table.ts";

const DURATION_MS = Number(process.env.BENCH_MS ?? DEFAULT_STORE_BENCH.durationMs);

/** One backend's part of the benchmark. */
interface Section {
  name: string;
  run: () => Promise<Row[]>;
}

/** Embedded SQLite, durable (WAL + synchronous=FULL), against raw better-sqlite3. */
async function sqliteSection(): Promise<Row[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "setpoint-bench-storage-"));
  const baseline = rawSqliteBaseline(path.join(dir, "raw.db"), {
    value: benchValue(DEFAULT_STORE_BENCH.valueBytes),
    durable: true,
  });
  const store = SqliteStore.open(path.join(dir, "store.db"));
  try {
    const figures = await benchStore(store, baseline, { durationMs: DURATION_MS });
    const stats = store.stats();
    console.log(
      `sqlite: ${stats.writes.toLocaleString("en-US")} writes in ${stats.commits.toLocaleString("en-US")} commits (largest ${stats.largestBatch})`,
    );
    if (figures.store.watchErrors.length > 0) {
      console.log(`sqlite: watch errors: ${figures.store.watchErrors.join("; ")}`);
    }
    return storeRows("sqlite (durable)", figures.store, figures.baseline, baseline, {
      concurrentRatio: 3,
      concurrentPerSecond: 20_000,
      watchP99Ms: 20,
    });
  } finally {
    await store.close();
    baseline.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const SECTIONS: Section[] = [{ name: "sqlite", run: sqliteSection }];

const rows: Row[] = [];
for (const section of SECTIONS) {
  console.log(`--- ${section.name}`);
  rows.push(...(await section.run()));
}
printTable(`Storage benchmark (${DURATION_MS} ms per phase, ${os.cpus().length} CPUs)`, rows);
