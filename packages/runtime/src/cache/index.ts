/**
 * The shared cache: informers (a list, then a watch, of one kind in one scope)
 * and the InformerCache that holds one per kind and scope for every controller
 * of a manager, with indexes by namespace, owner and controller.
 *
 * - Scoped reads: in a reconcile, `ctx.reader` reads a kind the controller
 *   watches (`for`, `owns`, `watches`) from that watch's informer unless the
 *   read names another scope, so a scoped watch never leads to a second,
 *   unscoped list and watch of the kind.
 * - `mgr.cache.removeInformer` stops one shared informer (e.g. when its kind
 *   stops being served); `transform` in an informer's scope reduces what it
 *   stores.
 */

export {
  type CachedInformerHealth,
  type CacheListOptions,
  InformerCache,
  type InformerCacheOptions,
  type InformerScope,
} from "./cache.ts";
export {
  compareResourceVersions,
  type EventHandler,
  Informer,
  type InformerHealth,
  type InformerOptions,
} from "./informer.ts";
export { CONTROLLER_UID_INDEX, NAMESPACE_INDEX, OWNER_UID_INDEX } from "./object-store.ts";
export type { RuntimeLogger } from "./reflector.ts";
