/**
 * Prometheus metrics of the runtime, served on the manager's `/metrics` under
 * controller-runtime's metric names: reconciles, their durations and errors,
 * the work queues, and the client's requests.
 */

export { RuntimeMetrics, type RuntimeMetricsOptions } from "./metrics.ts";
