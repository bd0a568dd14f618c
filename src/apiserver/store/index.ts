/**
 * The resource store: the layer between the HTTP endpoints and storage, for every
 * type (Kubernetes' generic registry store). `ResourceStore` is made per call for a
 * plain scope (type, version, namespace, name, subresource, caller) and reads,
 * lists, watches and writes objects under the rules every write follows
 * (lifecycle.ts, update-decision.ts, delete-decision.ts, new-object.ts), with
 * optimistic concurrency (writes.ts), storage errors in Kubernetes' words
 * (store-errors.ts), where objects live (keys.ts), continue tokens, field
 * ownership, namespace lifecycle admission, and the caches of decoded objects and
 * no-op applies. Nothing here sees an HTTP request or response; per-type behaviour
 * comes from the definitions' strategies (src/registry/).
 */

/** What a watch reads from the type's watch cache, handed out by ResourceStore.watchCache. */
export type {
  CacheEntry,
  CacheEvent,
  CacheWatcher,
  EventSide,
  EventType,
  SharedChunks,
  WatchCache,
} from "../watchcache/watch-cache.ts";
export { CLAIMS_ROOT } from "./claims.ts";
export {
  CLAIMS_REPAIR_GRACE_MS,
  CLAIMS_REPAIR_INTERVAL_MS,
  repairClaims,
} from "./claims-repair.ts";
export { decodeContinueToken } from "./continue-token.ts";
export {
  type DeleteOptions,
  deletionFinalizers,
  type PropagationPolicy,
} from "./delete-decision.ts";
export { entryMatches, type ObjectFilter, objectMatches } from "./filter.ts";
export {
  type ListRequest,
  type ListVisitor,
  listsRaw,
  type StorageListResult,
} from "./list-storage.ts";
export {
  type CachedList,
  type CreateOptions,
  type DeleteOutcome,
  GENERATE_NAME_ATTEMPTS,
  ResourceStore,
  type UpdatedObject,
  type UpdateOptions,
} from "./resource-store.ts";
export {
  type ResourceScope,
  SERVER_USER,
  type StoreContext,
  type StoreServices,
  type StoreUser,
} from "./scope.ts";
export type { UpdatePlan } from "./update-decision.ts";
export type { WriteDecision, WriteOutcome } from "./writes.ts";
