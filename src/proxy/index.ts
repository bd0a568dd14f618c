/**
 * The service proxy (the data plane's kube-proxy, run by the agent): each
 * Service's cluster IP and node ports accept TCP and forward to its ready
 * endpoints. The table (table.ts) is built from Services and EndpointSlices,
 * saved on disk and served from there without the apiserver (store.ts); the
 * forwarder (forwarder.ts) listens and forwards with retries and passive
 * ejection; service-proxy.ts composes them; env.ts gives Pods the Service
 * environment variables from the same table. Built on @setpoint/runtime,
 * @setpoint/api and the shared data-plane parts (src/dataplane/) only.
 */
export { serviceEnv } from "./env.ts";
export {
  DEFAULT_ATTEMPTS,
  DEFAULT_CONNECT_TIMEOUT_MS,
  Forwarder,
  type ForwarderOptions,
  RELISTEN_MS,
} from "./forwarder.ts";
export { DEFAULT_DEBOUNCE_MS, ServiceProxy, type ServiceProxyOptions } from "./service-proxy.ts";
export { loadServiceTable, SERVICE_TABLE_FILE, saveServiceTable } from "./store.ts";
export {
  buildServiceTable,
  hasClusterIP,
  SERVICE_TABLE_VERSION,
  type ServiceEntry,
  type ServicePortEntry,
  type ServiceTable,
  type ServiceTableInputs,
  sameServices,
} from "./table.ts";
