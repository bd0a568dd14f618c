/**
 * The gateway: Setpoint's data-plane HTTP(S) reverse proxy for Ingresses of its
 * IngressClass. It routes by a table built from the API (table.ts), saved on
 * disk and served from there when the apiserver is gone (store.ts), forwards
 * with retries and passive ejection (proxy.ts), and exports Prometheus metrics
 * (metrics.ts). gateway.ts composes them; `setpoint gateway` runs it. An
 * ordinary API client: it imports only @setpoint/runtime and @setpoint/api.
 */
export {
  DEFAULT_INGRESS_CLASS,
  GATEWAY_CONTROLLER_NAME,
  Gateway,
  type GatewayOptions,
  splitHostPort,
} from "./gateway.ts";
export { loadTable, saveTable, TABLE_FILE } from "./store.ts";
export {
  buildTable,
  CompiledTable,
  ingressInClass,
  pathMatches,
  type Route,
  type RouteTable,
  type TableInputs,
} from "./table.ts";
