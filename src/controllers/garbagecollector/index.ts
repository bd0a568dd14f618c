/**
 * The garbage collector: deletes objects whose owners are gone and carries out
 * Foreground and Orphan deletion, as an ordinary controller of the API.
 *
 * - collector.ts: the controller, wiring the parts below into the runtime's Manager,
 *   and its reconcile;
 * - resource-discovery.ts and monitors.ts: which kinds it follows, each with a
 *   metadata-only informer;
 * - graph.ts: the ownership graph (objects and owner UID → dependents);
 *   graph-events.ts: the monitors' events applied to it, choosing keys to look at;
 * - decision.ts: what to do with a dependent (keep, drop references, delete with
 *   which policy) or with an owner being deleted; owner-lookup.ts: whether an owner
 *   is there;
 * - operations.ts: the deletes and patches, guarded by preconditions and tests.
 */
export {
  DEFAULT_GC_WORKERS,
  DEFAULT_ORPHAN_CONCURRENCY,
  GARBAGE_COLLECTOR,
  GarbageCollector,
  type GarbageCollectorOptions,
  SYNC_RETRY_MS,
} from "./collector.ts";
export {
  type Classification,
  classifyOwners,
  type DependentDecision,
  decideDependent,
  decideOwner,
  type OwnerDecision,
  policyOf,
} from "./decision.ts";
export {
  FINALIZER_FOREGROUND,
  FINALIZER_ORPHAN,
  Graph,
  type GraphNode,
  isDeletingDependents,
  isOrphaning,
  referenceTo,
  sameOwners,
} from "./graph.ts";
export { MONITOR_SCOPE, reduceToMetadata } from "./monitors.ts";
export type { Policy } from "./operations.ts";
export { ABSENT_OWNER_CACHE_SIZE, MONITOR_SYNC_WAIT_MS, type OwnerState } from "./owner-lookup.ts";
export {
  DEFAULT_DISCOVERY_INTERVAL_MS,
  DEFAULT_IGNORED_RESOURCES,
  DISCOVERY_DEBOUNCE_MS,
} from "./resource-discovery.ts";
