/**
 * The etcd backend of the Store contract (several machines): the store
 * (store.ts) on a thin gRPC client of etcd's v3 API (client.ts, messages.ts,
 * proto/), keys under a per-installation prefix (key-space.ts), paged lists
 * (continue-token.ts), and watches: one resumable etcd stream per prefix
 * (watch-stream.ts) fanned out (watch-fanout.ts) to each consumer's own queue
 * (store-watch.ts).
 */
export { EtcdClient, type EtcdClientOptions, EtcdRpcError } from "./client.ts";
export {
  COMPACT_REV_KEY,
  Compactor,
  DEFAULT_COMPACTION_INTERVAL_MS,
} from "./compactor.ts";
export {
  DEFAULT_DIAL_TIMEOUT_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  DEFAULT_WATCH_RETRY_TIMEOUT_MS,
  ETCD_MAX_REQUEST_BYTES,
  EtcdStore,
  type EtcdStoreOptions,
} from "./store.ts";
