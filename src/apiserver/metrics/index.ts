/**
 * The apiserver's own Prometheus metrics, served at /metrics: Kubernetes' names
 * where Kubernetes has the metric (apiserver_request_total,
 * apiserver_request_duration_seconds, apiserver_current_inflight_requests,
 * apiserver_longrunning_requests, apiserver_storage_objects,
 * etcd_request_duration_seconds, ...), and Setpoint's own, prefixed `setpoint_`,
 * where it has none (lists by client, which `setpoint doctor` reads).
 */
export { type ApiMetrics, createApiMetrics, type RequestLabels } from "./api-metrics.ts";
export { classifyRequest, clientOf, MAX_CLIENTS, type RequestInfo } from "./request-info.ts";
export { instrumentStore } from "./storage-metrics.ts";
