/** The gateway's Prometheus metrics, served on the admin listener's /metrics. */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

export interface GatewayMetrics {
  registry: Registry;
  requests: Counter<"ingress" | "backend" | "code">;
  duration: Histogram<"ingress" | "backend">;
  retries: Counter<"backend">;
  ejections: Counter<"backend">;
  tableAge: Gauge;
  routes: Gauge;
  tableUpdates: Counter;
}

export function createGatewayMetrics(tableAgeSeconds: () => number | undefined): GatewayMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    requests: new Counter({
      name: "setpoint_gateway_requests_total",
      help: "Requests served, by Ingress (namespace/name), backend (namespace/service:port) and status code.",
      labelNames: ["ingress", "backend", "code"],
      registers: [registry],
    }),
    duration: new Histogram({
      name: "setpoint_gateway_request_duration_seconds",
      help: "Time from a request's arrival to the end of its response.",
      labelNames: ["ingress", "backend"],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    retries: new Counter({
      name: "setpoint_gateway_retries_total",
      help: "Requests retried on another endpoint after a connect failure.",
      labelNames: ["backend"],
      registers: [registry],
    }),
    ejections: new Counter({
      name: "setpoint_gateway_endpoint_ejections_total",
      help: "Endpoints ejected by passive health checking.",
      labelNames: ["backend"],
      registers: [registry],
    }),
    tableAge: new Gauge({
      name: "setpoint_gateway_route_table_age_seconds",
      help: "Seconds since the route table was last known to match the API (absent without a table).",
      registers: [registry],
      collect() {
        const age = tableAgeSeconds();
        if (age === undefined) this.reset();
        else this.set(age);
      },
    }),
    routes: new Gauge({
      name: "setpoint_gateway_routes",
      help: "Routes (host and path rules) in the current table.",
      registers: [registry],
    }),
    tableUpdates: new Counter({
      name: "setpoint_gateway_route_table_updates_total",
      help: "Route tables swapped in.",
      registers: [registry],
    }),
  };
}
