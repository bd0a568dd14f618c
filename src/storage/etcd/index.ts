/** The etcd backend of the Store contract (several machines). */
export { EtcdClient, type EtcdClientOptions, EtcdRpcError } from "./client.ts";
export {
  DEFAULT_DIAL_TIMEOUT_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  DEFAULT_WATCH_RETRY_TIMEOUT_MS,
  ETCD_MAX_REQUEST_BYTES,
  EtcdStore,
  type EtcdStoreOptions,
} from "./store.ts";
