/**
 * The metric set of one apiserver, on its own prom-client Registry (several servers
 * in one process, as in tests, do not share counts).
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { MAX_CLIENTS } from "./request-info.ts";

/** The labels Kubernetes puts on apiserver_request_total (without code). */
export interface RequestLabels {
  verb: string;
  dry_run: string;
  group: string;
  version: string;
  resource: string;
  subresource: string;
  scope: string;
  component: string;
}

const REQUEST_LABELS = [
  "verb",
  "dry_run",
  "group",
  "version",
  "resource",
  "subresource",
  "scope",
  "component",
] as const;

/** kube-apiserver's buckets for apiserver_request_duration_seconds. */
const REQUEST_BUCKETS = [
  0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45,
  60,
];
/** kube-apiserver's buckets for etcd_request_duration_seconds. */
const STORAGE_BUCKETS = [
  0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45,
  60,
];

/** Objects and watchers of one type, as the watch caches hold them. */
export interface TypeStats {
  /** "configmaps", or "widgets.example.com" for a group's type (Kubernetes' naming). */
  resource: string;
  objects: number;
  watchers: number;
}

export interface ApiMetrics {
  readonly registry: Registry;
  readonly requests: Counter<keyof RequestLabels | "code">;
  readonly durations: Histogram<keyof RequestLabels>;
  readonly inflight: Gauge<"request_kind">;
  readonly longRunning: Gauge<keyof RequestLabels>;
  readonly storageDurations: Histogram<"operation" | "type">;
  readonly clientLists: Counter<"client" | "group" | "resource">;
  /** The client label to use for `client` (bounded by MAX_CLIENTS). */
  clientLabel(client: string): string;
}

export function createApiMetrics(typeStats: () => readonly TypeStats[]): ApiMetrics {
  const registry = new Registry();
  const requests = new Counter({
    name: "apiserver_request_total",
    help: "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
    labelNames: [...REQUEST_LABELS, "code"],
    registers: [registry],
  });
  const durations = new Histogram({
    name: "apiserver_request_duration_seconds",
    help: "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
    labelNames: [...REQUEST_LABELS],
    buckets: REQUEST_BUCKETS,
    registers: [registry],
  });
  const inflight = new Gauge({
    name: "apiserver_current_inflight_requests",
    help: "Maximal number of currently used inflight request limit of this apiserver per request kind in last second.",
    labelNames: ["request_kind"],
    registers: [registry],
  });
  inflight.set({ request_kind: "readOnly" }, 0);
  inflight.set({ request_kind: "mutating" }, 0);
  const longRunning = new Gauge({
    name: "apiserver_longrunning_requests",
    help: "Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.",
    labelNames: [...REQUEST_LABELS],
    registers: [registry],
  });
  new Gauge({
    name: "apiserver_storage_objects",
    help: "Number of stored objects at the time of last check split by kind.",
    labelNames: ["resource"],
    registers: [registry],
    collect() {
      this.reset();
      for (const t of typeStats()) this.set({ resource: t.resource }, t.objects);
    },
  });
  new Gauge({
    name: "apiserver_watch_cache_watchers",
    help: "Number of client watches served from the watch cache, by resource (Setpoint's count of Kubernetes' apiserver_registered_watchers).",
    labelNames: ["resource"],
    registers: [registry],
    collect() {
      this.reset();
      for (const t of typeStats()) this.set({ resource: t.resource }, t.watchers);
    },
  });
  const storageDurations = new Histogram({
    name: "etcd_request_duration_seconds",
    help: "Storage request latency in seconds for each operation and object type (the SQLite or etcd backend alike).",
    labelNames: ["operation", "type"],
    buckets: STORAGE_BUCKETS,
    registers: [registry],
  });
  const clientLists = new Counter({
    name: "setpoint_apiserver_client_list_requests_total",
    help: `Lists of a whole collection (no label or field selector, first page) by client (the user agent's product name; at most ${MAX_CLIENTS} named, the rest "other"), group and resource. A client whose count grows with every object it handles lists inside its reconcile loop.`,
    labelNames: ["client", "group", "resource"],
    registers: [registry],
  });
  const clients = new Set<string>();
  const clientLabel = (client: string): string => {
    if (clients.has(client)) return client;
    if (clients.size >= MAX_CLIENTS) return "other";
    clients.add(client);
    return client;
  };
  return {
    registry,
    requests,
    durations,
    inflight,
    longRunning,
    storageDurations,
    clientLists,
    clientLabel,
  };
}
