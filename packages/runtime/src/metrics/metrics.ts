/**
 * Prometheus metrics of the runtime, under controller-runtime's names and labels
 * so existing dashboards and alerts work unchanged:
 *
 * - controller_runtime_reconcile_total{controller,result}  result: success | error | requeue_after
 * - controller_runtime_reconcile_errors_total{controller}
 * - controller_runtime_terminal_reconcile_errors_total{controller}
 * - controller_runtime_reconcile_time_seconds{controller}  (histogram)
 * - controller_runtime_max_concurrent_reconciles{controller}
 * - controller_runtime_active_workers{controller}
 * - workqueue_depth, workqueue_adds_total, workqueue_queue_duration_seconds,
 *   workqueue_work_duration_seconds, workqueue_retries_total,
 *   workqueue_unfinished_work_seconds, workqueue_longest_running_processor_seconds
 *   (labels {name, controller}, both the controller's name)
 * - leader_election_master_status{name}  1 while this process holds the lease
 *
 * Each `RuntimeMetrics` owns its registry, so several managers can live in one
 * process (tests) without clashing over global metric names.
 *
 * What every reconcile reports (its outcome and time, active workers, queue
 * adds, depth, queue and work durations) costs no label lookup: counts and
 * gauges are plain numbers per controller, read into prom-client at each
 * scrape, and histograms observe into series bound once per controller
 * (`LabelledHistogram`).
 */
import { Counter, collectDefaultMetrics, Gauge, Registry } from "prom-client";
import type { QueueMetricsSink } from "../controller/work-queue.ts";
import { type HistogramChild, LabelledHistogram } from "./histogram.ts";

/** controller-runtime's reconcile time buckets (seconds). */
export const RECONCILE_TIME_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
  1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];

/** Work queue duration buckets: 10 ns to 1000 s by factors of ten, as client-go. */
export const QUEUE_DURATION_BUCKETS = Array.from({ length: 12 }, (_, i) => 1e-8 * 10 ** i);

/** The `result` label of controller_runtime_reconcile_total. */
export type ReconcileOutcome = "success" | "error" | "requeue_after";

/** What a controller reports about its reconciles. */
export interface ControllerMetrics {
  reconciled(outcome: ReconcileOutcome, seconds: number): void;
  /** A reconcile failed (counted in errors_total; terminal ones also in terminal_..._total). */
  failed(terminal: boolean): void;
  maxConcurrent(n: number): void;
  activeWorkers(delta: number): void;
}

interface InFlightSource {
  inFlightTimes(): { totalMs: number; longestMs: number };
}

/** A controller's counts, read at scrape time. */
interface ControllerTally {
  results: Record<ReconcileOutcome, number>;
  activeWorkers: number;
}

/** A work queue's counts, read at scrape time. */
interface QueueTally {
  adds: number;
  depth: number;
}

export interface RuntimeMetricsOptions {
  /** Registry to register into; a fresh one by default. */
  registry?: Registry | undefined;
  /** Also collect Node.js process metrics (process_*, nodejs_*). Default true. */
  processMetrics?: boolean | undefined;
}

export class RuntimeMetrics {
  readonly registry: Registry;
  private readonly queues = new Map<string, InFlightSource>();
  private readonly controllerTallies = new Map<string, ControllerTally>();
  private readonly queueTallies = new Map<string, QueueTally>();
  private readonly reconcileErrors: Counter<"controller">;
  private readonly terminalErrors: Counter<"controller">;
  private readonly reconcileTime: LabelledHistogram;
  private readonly maxConcurrentGauge: Gauge<"controller">;
  private readonly queueDuration: LabelledHistogram;
  private readonly workDuration: LabelledHistogram;
  private readonly retries: Counter<"name" | "controller">;
  private readonly leader: Gauge<"name">;

  constructor(opts: RuntimeMetricsOptions = {}) {
    this.registry = opts.registry ?? new Registry();
    const registers = [this.registry];
    if (opts.processMetrics ?? true) collectDefaultMetrics({ register: this.registry });
    const controllers = this.controllerTallies;
    const queueTallies = this.queueTallies;
    new Counter({
      name: "controller_runtime_reconcile_total",
      help: "Total number of reconciliations per controller",
      labelNames: ["controller", "result"],
      registers,
      collect() {
        this.reset();
        for (const [controller, t] of controllers) {
          for (const [result, n] of Object.entries(t.results)) this.inc({ controller, result }, n);
        }
      },
    });
    this.reconcileErrors = new Counter({
      name: "controller_runtime_reconcile_errors_total",
      help: "Total number of reconciliation errors per controller",
      labelNames: ["controller"],
      registers,
    });
    this.terminalErrors = new Counter({
      name: "controller_runtime_terminal_reconcile_errors_total",
      help: "Total number of terminal reconciliation errors per controller",
      labelNames: ["controller"],
      registers,
    });
    this.reconcileTime = new LabelledHistogram({
      name: "controller_runtime_reconcile_time_seconds",
      help: "Length of time per reconciliation per controller",
      buckets: RECONCILE_TIME_BUCKETS,
      registers,
    });
    this.maxConcurrentGauge = new Gauge({
      name: "controller_runtime_max_concurrent_reconciles",
      help: "Maximum number of concurrent reconciles per controller",
      labelNames: ["controller"],
      registers,
    });
    new Gauge({
      name: "controller_runtime_active_workers",
      help: "Number of currently used workers per controller",
      labelNames: ["controller"],
      registers,
      collect() {
        for (const [controller, t] of controllers) this.set({ controller }, t.activeWorkers);
      },
    });
    const queueLabels = ["name", "controller"] as const;
    new Gauge({
      name: "workqueue_depth",
      help: "Current depth of workqueue",
      labelNames: queueLabels,
      registers,
      collect() {
        for (const [name, t] of queueTallies) this.set({ name, controller: name }, t.depth);
      },
    });
    new Counter({
      name: "workqueue_adds_total",
      help: "Total number of adds handled by workqueue",
      labelNames: queueLabels,
      registers,
      collect() {
        this.reset();
        for (const [name, t] of queueTallies) this.inc({ name, controller: name }, t.adds);
      },
    });
    this.queueDuration = new LabelledHistogram({
      name: "workqueue_queue_duration_seconds",
      help: "How long in seconds an item stays in workqueue before being requested",
      buckets: QUEUE_DURATION_BUCKETS,
      registers,
    });
    this.workDuration = new LabelledHistogram({
      name: "workqueue_work_duration_seconds",
      help: "How long in seconds processing an item from workqueue takes",
      buckets: QUEUE_DURATION_BUCKETS,
      registers,
    });
    this.retries = new Counter({
      name: "workqueue_retries_total",
      help: "Total number of retries handled by workqueue",
      labelNames: queueLabels,
      registers,
    });
    const queues = this.queues;
    new Gauge({
      name: "workqueue_unfinished_work_seconds",
      help: "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads.",
      labelNames: queueLabels,
      registers,
      collect() {
        for (const [name, q] of queues) {
          this.set({ name, controller: name }, q.inFlightTimes().totalMs / 1000);
        }
      },
    });
    new Gauge({
      name: "workqueue_longest_running_processor_seconds",
      help: "How many seconds has the longest running processor for workqueue been running.",
      labelNames: queueLabels,
      registers,
      collect() {
        for (const [name, q] of queues) {
          this.set({ name, controller: name }, q.inFlightTimes().longestMs / 1000);
        }
      },
    });
    this.leader = new Gauge({
      name: "leader_election_master_status",
      help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
      labelNames: ["name"],
      registers,
    });
  }

  /** The sink a controller's work queue reports to. */
  queueSink(name: string): QueueMetricsSink {
    const labels = { name, controller: name };
    const tally: QueueTally = { adds: 0, depth: 0 };
    this.queueTallies.set(name, tally);
    this.retries.inc(labels, 0);
    const queued: HistogramChild = this.queueDuration.child(labels);
    const worked: HistogramChild = this.workDuration.child(labels);
    return {
      added: () => {
        tally.adds++;
      },
      depth: (n) => {
        tally.depth = n;
      },
      queued: (ms) => queued.observe(ms / 1000),
      worked: (ms) => worked.observe(ms / 1000),
      retried: () => this.retries.inc(labels),
    };
  }

  /** Reports the in-flight times of `queue` under `name` at each scrape. */
  trackQueue(name: string, queue: InFlightSource): void {
    this.queues.set(name, queue);
  }

  /** What the controller `name` reports. */
  controller(name: string): ControllerMetrics {
    const labels = { controller: name };
    this.reconcileErrors.inc(labels, 0);
    this.terminalErrors.inc(labels, 0);
    const tally: ControllerTally = {
      results: { success: 0, error: 0, requeue_after: 0 },
      activeWorkers: 0,
    };
    this.controllerTallies.set(name, tally);
    const time = this.reconcileTime.child(labels);
    return {
      reconciled: (result, seconds) => {
        tally.results[result]++;
        time.observe(seconds);
      },
      failed: (terminal) => {
        this.reconcileErrors.inc(labels);
        if (terminal) this.terminalErrors.inc(labels);
      },
      maxConcurrent: (n) => this.maxConcurrentGauge.set(labels, n),
      activeWorkers: (delta) => {
        tally.activeWorkers += delta;
      },
    };
  }

  /** Sets leader_election_master_status for the lease `name`. */
  leaderStatus(name: string, leading: boolean): void {
    this.leader.set({ name }, leading ? 1 : 0);
  }

  /** The Prometheus text exposition of every metric. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  /** The Content-Type of `text()`. */
  get contentType(): string {
    return this.registry.contentType;
  }
}
