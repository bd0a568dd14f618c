/**
 * Storage benchmark: `npm run bench:storage`.
 *
 * For each backend, in one run: creates/s with 1 and with 50 concurrent callers (1 KiB
 * values), CAS updates/s with 50 callers, and watch delivery latency p50/p99 with 100
 * watchers under write load, each beside a baseline measured in the same run (in
 * alternating slices with the store) and the ratio.
 *
 * For etcd the baseline is etcd's own conditional transaction (the create-if-absent Txn
 * a store create sends), through the same client with the same callers; the goal is
 * creates through the store >= 0.9x that rate.
 *
 * For SQLite also: the event-loop delay (perf_hooks.monitorEventLoopDelay) during the
 * 50-caller create load with commits on the writer thread (the default), beside the
 * same store committing on the event loop (writerThread: false), in alternating slices.
 *
 * A backend is one `Section` in SECTIONS: it opens its Store, builds its baseline (a
 * StoreBaseline: one runnable phase per rate), calls `benchStore(store, baseline)` and
 * turns the figures into rows with `storeRows`.
 *
 * Environment:
 *   BENCH_MS        length of each measured phase (default 2000)
 *   BENCH_BACKENDS  comma list of sqlite,etcd (default both)
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  DEFAULT_DIAL_TIMEOUT_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  EtcdClient,
  EtcdStore,
} from "../src/storage/etcd/index.ts";
import { CompareResult, CompareTarget } from "../src/storage/etcd/messages.ts";
import { SqliteStore } from "../src/storage/sqlite/index.ts";
import { ETCD_INSTALL_HINT, etcdBinary, startEtcd } from "../test/helpers/etcd.ts";
import { rawSqliteBaseline } from "./lib/raw-sqlite.ts";
import {
  benchStore,
  benchValue,
  createsWithLoopDelay,
  DEFAULT_STORE_BENCH,
  loopDelayRows,
  type StoreBaseline,
  storeRows,
} from "./lib/store-bench.ts";
import { printTable, type Row } from "./lib/table.ts";
import { callersFor, interleaved } from "./lib/timing.ts";

const DURATION_MS = Number(process.env.BENCH_MS ?? DEFAULT_STORE_BENCH.durationMs);
const BACKENDS = new Set(
  (process.env.BENCH_BACKENDS ?? "sqlite,etcd").split(",").map((b) => b.trim()),
);

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
  const onLoop = SqliteStore.open(path.join(dir, "on-loop.db"), { writerThread: false });
  try {
    const figures = await benchStore(store, baseline, { durationMs: DURATION_MS });
    const stats = store.stats();
    console.log(
      `sqlite: ${stats.writes.toLocaleString("en-US")} writes in ${stats.commits.toLocaleString("en-US")} commits (largest ${stats.largestBatch}), on the writer thread: ${stats.writerThread}`,
    );
    if (figures.store.watchErrors.length > 0) {
      console.log(`sqlite: watch errors: ${figures.store.watchErrors.join("; ")}`);
    }
    const [threaded, sameThread] = await createsWithLoopDelay(
      { store, prefix: "/bench/loop-delay" },
      { store: onLoop, prefix: "/bench/loop-delay" },
      { durationMs: DURATION_MS },
    );
    return [
      ...storeRows("sqlite (durable)", figures.store, figures.baseline, baseline, {
        concurrentRatio: 3,
        concurrentPerSecond: 20_000,
        watchP99Ms: 20,
      }),
      ...loopDelayRows(
        "sqlite (durable)",
        threaded,
        sameThread,
        "same store, commits on the event loop (writerThread: false)",
      ),
    ];
  } finally {
    await store.close();
    await onLoop.close();
    baseline.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Alternating store/baseline slices per etcd phase: more than SQLite's, because two
 * processes (etcd and this one) share the machine's cores and other load.
 */
const ETCD_ROUNDS = 8;

/** Creates through the store must reach this multiple of etcd's raw create-if-absent Txn rate. */
const ETCD_CREATE_GOAL = 0.9;

/**
 * etcd (a throwaway one-member etcd, fsync on, as tests start it) against etcd's own
 * conditional transactions sent through the same gRPC client (EtcdClient) with the same
 * number of callers: a store create is one create-if-absent Txn and a CAS update one
 * compare-modRevision Txn, so the baseline is that very Txn without the store around it
 * (key space, checks, revision bookkeeping). Goal: creates through the store >= 0.9x
 * the raw create-if-absent Txn rate. Raw Puts are printed for context only: etcd
 * serves a Txn at about 0.7x a Put, a ceiling no store that must refuse duplicates
 * can pass.
 */
async function etcdSection(): Promise<Row[]> {
  if (!etcdBinary()) {
    console.log(`etcd: skipped, no etcd binary (install it with: ${ETCD_INSTALL_HINT})`);
    return [];
  }
  const etcd = await startEtcd();
  const client = new EtcdClient({
    endpoints: etcd.endpoints,
    dialTimeoutMs: DEFAULT_DIAL_TIMEOUT_MS,
    requestTimeoutMs: DEFAULT_REQUEST_TIMEOUT_MS,
  });
  const store = await EtcdStore.open({ endpoints: etcd.endpoints, prefix: "/setpoint-bench/" });
  try {
    const value = Buffer.from(benchValue(DEFAULT_STORE_BENCH.valueBytes));
    const put = (key: string) => client.put({ key: Buffer.from(key), value });
    /** The request a store create sends: put if the key was never created, else read it. */
    const createIfAbsent = async (name: string) => {
      const key = Buffer.from(name);
      const res = await client.txn({
        compare: [
          { target: CompareTarget.CREATE, result: CompareResult.EQUAL, key, create_revision: 0 },
        ],
        success: [{ request_put: { key, value } }],
        failure: [{ request_range: { key } }],
      });
      if (!res.succeeded) throw new Error(`raw create-if-absent of ${name}: key exists`);
      return res.header.revision;
    };
    /** The request a store CAS update sends: put if modRevision matches, else read it. */
    const casRevisions: number[] = [];
    const casUpdate = async (caller: number) => {
      const key = Buffer.from(`/raw-bench/cas/${caller}`);
      const res = await client.txn({
        compare: [
          {
            target: CompareTarget.MOD,
            result: CompareResult.EQUAL,
            key,
            mod_revision: casRevisions[caller] ?? 0,
          },
        ],
        success: [{ request_put: { key, value } }],
        failure: [{ request_range: { key } }],
      });
      casRevisions[caller] = res.succeeded
        ? res.header.revision
        : (res.responses[0]?.response_range?.kvs[0]?.mod_revision ?? 0);
    };
    let n = 0;
    const label = "raw etcd create-if-absent Txn, same gRPC client and callers";
    const baseline: StoreBaseline = {
      createsSequential: {
        label,
        run: (ms) => callersFor(1, ms, () => createIfAbsent(`/raw-bench/seq/${n++}`)),
      },
      createsConcurrent: {
        label,
        run: (ms, callers) =>
          callersFor(callers, ms, () => createIfAbsent(`/raw-bench/conc/${n++}`)),
      },
      casUpdates: {
        label: "raw etcd compare-modRevision Txn, same client and callers, a key per caller",
        run: (ms, callers) => callersFor(callers, ms, (c) => casUpdate(c)),
      },
    };
    // For context: etcd's own price of a transaction over a Put (a read view for the
    // compare, a bigger raft entry), with the very request a store create sends.
    const [rawPut, rawTxn] = await interleaved(
      DURATION_MS,
      ETCD_ROUNDS,
      (ms) => callersFor(DEFAULT_STORE_BENCH.callers, ms, () => put(`/raw-bench/put/${n++}`)),
      (ms) =>
        callersFor(DEFAULT_STORE_BENCH.callers, ms, () => createIfAbsent(`/raw-bench/txn/${n++}`)),
    );
    console.log(
      `etcd: raw Txn (create-if-absent) ${Math.round(rawTxn.perSecond).toLocaleString("en-US")}/s vs raw Put ${Math.round(rawPut.perSecond).toLocaleString("en-US")}/s, ${DEFAULT_STORE_BENCH.callers} callers: ${(rawTxn.perSecond / rawPut.perSecond).toFixed(2)}x (etcd's own cost of a transaction; context, not the baseline)`,
    );
    const figures = await benchStore(store, baseline, {
      durationMs: DURATION_MS,
      rounds: ETCD_ROUNDS,
    });
    if (figures.store.watchErrors.length > 0) {
      console.log(`etcd: watch errors: ${figures.store.watchErrors.join("; ")}`);
    }
    const ratio =
      figures.store.createsConcurrent.perSecond / figures.baseline.createsConcurrent.perSecond;
    console.log(
      `etcd: creates through the store / raw create-if-absent Txn, ${DEFAULT_STORE_BENCH.callers} callers: ${ratio.toFixed(2)}x (goal >= ${ETCD_CREATE_GOAL}x)`,
    );
    return storeRows("etcd", figures.store, figures.baseline, baseline, {
      concurrentRatio: ETCD_CREATE_GOAL,
    });
  } finally {
    await store.close();
    client.close();
    await etcd.destroy();
  }
}

const SECTIONS: Section[] = [
  { name: "sqlite", run: sqliteSection },
  { name: "etcd", run: etcdSection },
];

const rows: Row[] = [];
for (const section of SECTIONS.filter((s) => BACKENDS.has(s.name))) {
  console.log(`--- ${section.name}`);
  rows.push(...(await section.run()));
}
printTable(`Storage benchmark (${DURATION_MS} ms per phase, ${os.cpus().length} CPUs)`, rows);
