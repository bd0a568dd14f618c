/**
 * A Prometheus histogram whose label sets are resolved once: `child(labels)`
 * returns an observer bound to its own bucket counts, so observing a value is a
 * bucket search and two additions, with no label hashing or validation per
 * call (prom-client's `observe`, even through `labels()`, hashes and checks the
 * labels on every call, which showed in the cost of every reconcile).
 *
 * It registers with a prom-client Registry and is exposed in the same text
 * format as prom-client's Histogram (`_bucket{le}` cumulative, `+Inf`, `_sum`,
 * `_count`), so `/metrics` reads the same. Children are kept for the life of the
 * histogram (one per controller or queue: a few per process).
 */
import type { Metric, Registry } from "prom-client";

/** Observes values into one label set of a histogram. */
export interface HistogramChild {
  observe(value: number): void;
}

/** One sample line, in the shape prom-client's registry formats. */
export interface HistogramSample {
  metricName: string;
  labels: Record<string, string | number>;
  value: number;
}

interface Series {
  labels: Record<string, string>;
  /** Per bucket (not cumulative); the last slot counts values above every bound. */
  counts: Float64Array;
  sum: number;
  count: number;
}

export interface LabelledHistogramOptions {
  name: string;
  help: string;
  /** Upper bounds, ascending. */
  buckets: readonly number[];
  registers: Registry[];
}

export class LabelledHistogram {
  readonly name: string;
  readonly help: string;
  readonly type = "histogram";
  readonly aggregator = "sum";
  private readonly bounds: readonly number[];
  private readonly series = new Map<string, Series>();

  constructor(opts: LabelledHistogramOptions) {
    this.name = opts.name;
    this.help = opts.help;
    this.bounds = [...opts.buckets].sort((a, b) => a - b);
    // The registry reads metrics through `get()` and `reset()` only.
    for (const r of opts.registers) r.registerMetric(this as unknown as Metric);
  }

  /** The observer of one label set (created with zero counts, so it is exposed at once). */
  child(labels: Record<string, string>): HistogramChild {
    const key = JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)));
    let s = this.series.get(key);
    if (!s) {
      s = {
        labels: { ...labels },
        counts: new Float64Array(this.bounds.length + 1),
        sum: 0,
        count: 0,
      };
      this.series.set(key, s);
    }
    const series = s;
    const bounds = this.bounds;
    return {
      observe(value: number): void {
        if (!Number.isFinite(value)) return;
        let i = 0;
        while (i < bounds.length && value > bounds[i]) i++;
        series.counts[i]++;
        series.sum += value;
        series.count++;
      },
    };
  }

  /** The samples of every label set, as prom-client's metrics give them to the registry. */
  async get(): Promise<{
    name: string;
    help: string;
    type: "histogram";
    aggregator: "sum";
    values: HistogramSample[];
  }> {
    const values: HistogramSample[] = [];
    const bucket = `${this.name}_bucket`;
    for (const s of this.series.values()) {
      let acc = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        acc += s.counts[i];
        values.push({
          metricName: bucket,
          labels: { le: this.bounds[i], ...s.labels },
          value: acc,
        });
      }
      values.push({ metricName: bucket, labels: { le: "+Inf", ...s.labels }, value: s.count });
      values.push({ metricName: `${this.name}_sum`, labels: { ...s.labels }, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: { ...s.labels }, value: s.count });
    }
    return { name: this.name, help: this.help, type: "histogram", aggregator: "sum", values };
  }

  /** Zeroes every label set (what the registry's `resetMetrics` asks for). */
  reset(): void {
    for (const s of this.series.values()) {
      s.counts.fill(0);
      s.sum = 0;
      s.count = 0;
    }
  }
}
