/**
 * The storage benchmark of one Store backend, independent of the backend: an opened
 * Store and the backend's baseline go in; figures for both come out, each rate phase
 * measured in alternating slices of baseline and store so that both see the same load
 * on a shared machine. `storeRows` turns them into printed rows.
 */
import {
  createHistogram,
  type EventLoopUtilization,
  performance,
  type RecordableHistogram,
} from "node:perf_hooks";
import type { Store } from "../../src/storage/index.ts";
import type { Row } from "./table.ts";
import { callersFor, interleaved, now, percentile, type Rate, Samples } from "./timing.ts";

export interface StoreBenchOptions {
  /** How long each measured phase runs. */
  durationMs: number;
  /** Concurrent callers in the concurrent phases. */
  callers: number;
  /** Watchers in the watch-latency phase. */
  watchers: number;
  /** Size of every written value. */
  valueBytes: number;
  /** Keys are written under this prefix (must be empty in the store). */
  prefix: string;
  /** Alternating baseline/store slices per rate phase. */
  rounds: number;
}

export const DEFAULT_STORE_BENCH: StoreBenchOptions = {
  durationMs: 2000,
  callers: 50,
  watchers: 100,
  valueBytes: 1024,
  prefix: "/bench",
  rounds: 4,
};

/** One baseline measurement: what it is and how to run a slice of it. */
export interface BaselinePhase {
  label: string;
  /** Runs the baseline for about `ms` with `callers` concurrent callers where that applies. */
  run: (ms: number, callers: number) => Rate | Promise<Rate>;
}

/** What a backend's rates are compared with, measured in the same run. */
export interface StoreBaseline {
  createsSequential: BaselinePhase;
  createsConcurrent: BaselinePhase;
  casUpdates: BaselinePhase;
}

/** The baseline's rates, measured beside the store's. */
export interface BaselineFigures {
  createsSequential: Rate;
  createsConcurrent: Rate;
  casUpdates: Rate;
}

export interface LatencyFigures {
  p50: number;
  p99: number;
  max: number;
  samples: number;
}

export interface StoreFigures {
  createsSequential: Rate;
  createsConcurrent: Rate;
  casUpdates: Rate;
  /** Write rate sustained while the watchers were attached. */
  writesUnderWatch: Rate;
  /** From a create call to its event reaching a watcher, over every watcher. */
  watchDelivery: LatencyFigures;
  /** From a create call to its promise resolving, for the same writes. */
  writeAck: LatencyFigures;
  /** Watches that ended with an error (for example overflow) during the phase. */
  watchErrors: string[];
}

function latency(samples: Samples): LatencyFigures {
  const values = samples.values();
  return {
    p50: percentile(values, 50),
    p99: percentile(values, 99),
    max: values.length > 0 ? values[values.length - 1] : Number.NaN,
    samples: values.length,
  };
}

/** A value of exactly `bytes` ASCII bytes. */
export function benchValue(bytes: number): string {
  return JSON.stringify({ data: "x".repeat(Math.max(0, bytes - 11)) }).slice(0, bytes);
}

/** Runs every phase against `store`, interleaved with `baseline`, and returns both. */
export async function benchStore(
  store: Store,
  baseline: StoreBaseline,
  options: Partial<StoreBenchOptions> = {},
): Promise<{ store: StoreFigures; baseline: BaselineFigures }> {
  const opts = { ...DEFAULT_STORE_BENCH, ...options };
  const value = benchValue(opts.valueBytes);
  const p = opts.prefix;
  const { durationMs: ms, callers, rounds } = opts;

  // Warm up (page cache, JIT) outside the measured phases.
  await callersFor(callers, Math.min(300, ms), (c, i) =>
    store.create(`${p}/warm/${c}/${i}`, value),
  );
  await baseline.createsConcurrent.run(Math.min(300, ms), callers);

  let seq = 0;
  const [baseSequential, createsSequential] = await interleaved(
    ms,
    rounds,
    (slice) => baseline.createsSequential.run(slice, 1),
    (slice) => callersFor(1, slice, () => store.create(`${p}/seq/${seq++}`, value)),
  );
  let conc = 0;
  const [baseConcurrent, createsConcurrent] = await interleaved(
    ms,
    rounds,
    (slice) => baseline.createsConcurrent.run(slice, callers),
    (slice) => callersFor(callers, slice, () => store.create(`${p}/conc/${conc++}`, value)),
  );
  const casRevisions = await Promise.all(
    Array.from({ length: callers }, (_, c) => store.create(`${p}/cas/${c}`, value)),
  );
  const [baseCas, casUpdates] = await interleaved(
    ms,
    rounds,
    (slice) => baseline.casUpdates.run(slice, callers),
    (slice) =>
      callersFor(callers, slice, async (c) => {
        casRevisions[c] = await store.update(`${p}/cas/${c}`, value, casRevisions[c]);
      }),
  );

  const watch = await watchPhase(store, opts, value);
  return {
    store: { createsSequential, createsConcurrent, casUpdates, ...watch },
    baseline: {
      createsSequential: baseSequential,
      createsConcurrent: baseConcurrent,
      casUpdates: baseCas,
    },
  };
}

async function watchPhase(
  store: Store,
  opts: StoreBenchOptions,
  value: string,
): Promise<Pick<StoreFigures, "writesUnderWatch" | "watchDelivery" | "writeAck" | "watchErrors">> {
  const prefix = `${opts.prefix}/watch/`;
  const sentinel = `${prefix}~end`;
  const started = new Map<string, number>();
  const delivery = new Samples();
  const ack = new Samples();
  const watchErrors: string[] = [];
  const watches = Array.from({ length: opts.watchers }, () => store.watch(prefix, 0));
  const consumers = watches.map(async (watch) => {
    try {
      for await (const ev of watch) {
        if (ev.key === sentinel) break;
        const t = started.get(ev.key);
        if (t !== undefined) delivery.push(now() - t);
      }
    } catch (error) {
      watchErrors.push(String(error));
    }
  });
  const writesUnderWatch = await callersFor(opts.callers, opts.durationMs, async (c, i) => {
    const key = `${prefix}${c}/${i}`;
    const t = now();
    started.set(key, t);
    await store.create(key, value);
    ack.push(now() - t);
  });
  await store.create(sentinel, "end");
  await Promise.all(consumers);
  for (const watch of watches) watch.cancel();
  return {
    writesUnderWatch,
    watchDelivery: latency(delivery),
    writeAck: latency(ack),
    watchErrors,
  };
}

/** Goals a backend's figures are held to (absent: no goal printed). */
export interface StoreGoals {
  /** Concurrent creates must reach this multiple of the baseline. */
  concurrentRatio?: number;
  /** Concurrent creates must reach this rate. */
  concurrentPerSecond?: number;
  /** Watch delivery p99 must stay under this many ms. */
  watchP99Ms?: number;
}

/** Turns a backend's figures and its baseline into printed rows. */
export function storeRows(
  backend: string,
  f: StoreFigures,
  measured: BaselineFigures,
  base: StoreBaseline,
  goals: StoreGoals,
  callers = DEFAULT_STORE_BENCH.callers,
  watchers = DEFAULT_STORE_BENCH.watchers,
): Row[] {
  const rows: Row[] = [];
  const rateRow = (metric: string, value: number, baseline: number, label: string): Row => ({
    backend,
    metric,
    value,
    unit: "/s",
    baseline,
    baselineLabel: label,
    better: "higher",
  });
  rows.push(
    rateRow(
      "creates/s, 1 caller",
      f.createsSequential.perSecond,
      measured.createsSequential.perSecond,
      base.createsSequential.label,
    ),
  );
  const concurrent = rateRow(
    `creates/s, ${callers} callers`,
    f.createsConcurrent.perSecond,
    measured.createsConcurrent.perSecond,
    base.createsConcurrent.label,
  );
  const wanted: string[] = [];
  let met = true;
  if (goals.concurrentRatio !== undefined) {
    wanted.push(`>= ${goals.concurrentRatio}x`);
    met &&=
      f.createsConcurrent.perSecond >= goals.concurrentRatio * measured.createsConcurrent.perSecond;
  }
  if (goals.concurrentPerSecond !== undefined) {
    wanted.push(`>= ${goals.concurrentPerSecond.toLocaleString("en-US")}/s`);
    met &&= f.createsConcurrent.perSecond >= goals.concurrentPerSecond;
  }
  if (wanted.length > 0) concurrent.goal = { text: wanted.join(" and "), met };
  rows.push(concurrent);
  rows.push(
    rateRow(
      `CAS updates/s, ${callers} callers`,
      f.casUpdates.perSecond,
      measured.casUpdates.perSecond,
      base.casUpdates.label,
    ),
  );
  const label = `write ack (same writes)`;
  const underLoad = `${watchers} watchers, ${callers} writers at ${Math.round(f.writesUnderWatch.perSecond).toLocaleString("en-US")}/s`;
  rows.push({
    backend,
    metric: `watch delivery p50 (${underLoad})`,
    value: f.watchDelivery.p50,
    unit: "ms",
    baseline: f.writeAck.p50,
    baselineLabel: `${label} p50`,
    better: "lower",
  });
  const p99: Row = {
    backend,
    metric: `watch delivery p99 (${underLoad})`,
    value: f.watchDelivery.p99,
    unit: "ms",
    baseline: f.writeAck.p99,
    baselineLabel: `${label} p99`,
    better: "lower",
  };
  if (goals.watchP99Ms !== undefined) {
    p99.goal = { text: `< ${goals.watchP99Ms} ms`, met: f.watchDelivery.p99 < goals.watchP99Ms };
  }
  rows.push(p99);
  return rows;
}

/** How often the event-loop delay is sampled, in ms (the sampling timer's period). */
export const LOOP_DELAY_RESOLUTION_MS = 1;

/**
 * Samples the event-loop delay into `histogram` (ns) until the returned stop function
 * is called: a timer due every LOOP_DELAY_RESOLUTION_MS records how late it fired, as
 * perf_hooks.monitorEventLoopDelay does. (That monitor cannot be paused between
 * alternating slices without counting the pause as delay, nor merged, hence this.)
 */
function sampleLoopDelay(histogram: RecordableHistogram): () => void {
  let due = now() + LOOP_DELAY_RESOLUTION_MS;
  let timer: NodeJS.Timeout;
  const tick = () => {
    const at = now();
    histogram.record(Math.max(1, Math.round((at - due) * 1e6)));
    due = at + LOOP_DELAY_RESOLUTION_MS;
    timer = setTimeout(tick, LOOP_DELAY_RESOLUTION_MS);
  };
  timer = setTimeout(tick, LOOP_DELAY_RESOLUTION_MS);
  return () => clearTimeout(timer);
}

/** Event-loop delay (ms) while callers created, and the rate they reached. */
export interface LoopDelayFigures {
  creates: Rate;
  p50: number;
  p99: number;
  max: number;
  /** Time the event loop was busy (not waiting for I/O) per create, in nanoseconds. */
  busyNanosPerCreate: number;
}

/** One store measured by `createsWithLoopDelay`. */
export interface LoopDelaySubject {
  store: Store;
  /** Keys are written under this prefix (must be empty in the store). */
  prefix: string;
}

/**
 * Event-loop delay during a create load of `callers` concurrent callers, for two stores
 * measured in alternating slices (`rounds` of each): how long the loop was held up by
 * work it could not interleave (such as a commit's fsync), beside the create rate.
 */
export async function createsWithLoopDelay(
  a: LoopDelaySubject,
  b: LoopDelaySubject,
  options: Partial<StoreBenchOptions> = {},
): Promise<[LoopDelayFigures, LoopDelayFigures]> {
  const opts = { ...DEFAULT_STORE_BENCH, ...options };
  const value = benchValue(opts.valueBytes);
  const histograms = [a, b].map(() => createHistogram());
  const busyMs = [0, 0];
  const counters = [0, 0];
  const slice = (index: number, subject: LoopDelaySubject) => async (ms: number) => {
    const stop = sampleLoopDelay(histograms[index]);
    const start: EventLoopUtilization = performance.eventLoopUtilization();
    try {
      return await callersFor(opts.callers, ms, () =>
        subject.store.create(`${subject.prefix}/${counters[index]++}`, value),
      );
    } finally {
      busyMs[index] += performance.eventLoopUtilization(start).active;
      stop();
    }
  };
  // Warm up both outside the measured slices.
  await slice(0, a)(Math.min(300, opts.durationMs));
  await slice(1, b)(Math.min(300, opts.durationMs));
  for (const histogram of histograms) histogram.reset();
  busyMs.fill(0);
  const [ra, rb] = await interleaved(opts.durationMs, opts.rounds, slice(0, a), slice(1, b));
  return [delayFigures(ra, histograms[0], busyMs[0]), delayFigures(rb, histograms[1], busyMs[1])];
}

function delayFigures(
  creates: Rate,
  histogram: RecordableHistogram,
  busyMs: number,
): LoopDelayFigures {
  const ms = (ns: number) => ns / 1e6;
  return {
    creates,
    p50: ms(histogram.percentile(50)),
    p99: ms(histogram.percentile(99)),
    max: ms(histogram.max),
    busyNanosPerCreate: creates.ops > 0 ? (busyMs * 1e6) / creates.ops : Number.NaN,
  };
}

/** Rows comparing a store's event-loop delay and rate under load with another's. */
export function loopDelayRows(
  backend: string,
  measured: LoopDelayFigures,
  baseline: LoopDelayFigures,
  baselineLabel: string,
  callers = DEFAULT_STORE_BENCH.callers,
): Row[] {
  const load = `${callers} callers creating`;
  return [
    {
      backend,
      metric: `event-loop delay p50 (${load})`,
      value: measured.p50,
      unit: "ms",
      baseline: baseline.p50,
      baselineLabel,
      better: "lower",
    },
    {
      backend,
      metric: `event-loop delay p99 (${load})`,
      value: measured.p99,
      unit: "ms",
      baseline: baseline.p99,
      baselineLabel,
      better: "lower",
    },
    {
      backend,
      metric: `event-loop delay max (${load})`,
      value: measured.max,
      unit: "ms",
      baseline: baseline.max,
      baselineLabel,
      better: "lower",
    },
    {
      backend,
      metric: `event-loop busy per create (${load})`,
      value: measured.busyNanosPerCreate,
      unit: "ns",
      baseline: baseline.busyNanosPerCreate,
      baselineLabel,
      better: "lower",
    },
    {
      backend,
      metric: `creates/s while measuring (${load})`,
      value: measured.creates.perSecond,
      unit: "/s",
      baseline: baseline.creates.perSecond,
      baselineLabel,
      better: "higher",
    },
  ];
}
