/**
 * The service proxy (the data plane's kube-proxy, started by the agent as a
 * process that outlives it): each Service's cluster IP and node ports accept
 * TCP and forward to its ready endpoints. The table (table.ts) is built from
 * Services and EndpointSlices in the agent (sync.ts) and saved on disk
 * (store.ts); the proxy process (service-proxy.ts) follows that file and serves
 * it through the forwarder (forwarder.ts), which listens and forwards with
 * retries and passive ejection, never asking the apiserver; env.ts gives Pods
 * the Service environment variables from the same table. Built on @setpoint/runtime,
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
export { CHECK_MS, ServiceProxy, type ServiceProxyOptions } from "./service-proxy.ts";
export { loadServiceTable, SERVICE_TABLE_FILE, saveServiceTable } from "./store.ts";
export { DEFAULT_DEBOUNCE_MS, ServiceTableSync, type ServiceTableSyncOptions } from "./sync.ts";
export {
  buildServiceTable,
  emptiesTable,
  hasClusterIP,
  SERVICE_TABLE_VERSION,
  type ServiceEntry,
  type ServicePortEntry,
  type ServiceTable,
  type ServiceTableInputs,
  sameServices,
} from "./table.ts";
