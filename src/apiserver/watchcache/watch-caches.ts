/**
 * The watch caches of every served type, kept in step with the registry: a cache
 * starts for each type when the handler starts or the type is added, and stops
 * when the type goes away.
 */
import type { Logger } from "pino";
import type { Registry } from "../../registry/registry.ts";
import { resourcePrefix } from "../../registry/storage-keys.ts";
import { type ResourceDefinition, resourceVerbs } from "../../registry/types.ts";
import type { Store } from "../../storage/store.ts";
import { WatchCache, type WatchCacheLimits } from "./watch-cache.ts";

export class WatchCacheSet {
  readonly #caches = new Map<string, WatchCache>();
  /** Each definition's storage prefix, worked out once (forDef runs on every request). */
  readonly #prefixes = new WeakMap<ResourceDefinition, string>();
  #unsubscribe: (() => void) | null = null;
  #closed = false;

  constructor(
    readonly store: Store,
    readonly registry: Registry,
    readonly limits: WatchCacheLimits,
    readonly logger?: Logger,
  ) {}

  /** Starts a cache for every registered type and follows registry changes. */
  start(): void {
    this.#sync();
    this.#unsubscribe = this.registry.onChange(() => this.#sync());
  }

  /** The cache of a type (started on first use). */
  forDef(def: ResourceDefinition): WatchCache {
    let prefix = this.#prefixes.get(def);
    if (prefix === undefined) {
      prefix = resourcePrefix(def);
      this.#prefixes.set(def, prefix);
    }
    let cache = this.#caches.get(prefix);
    if (!cache) {
      cache = new WatchCache(this.store, def, this.limits, this.logger);
      this.#caches.set(prefix, cache);
      if (!this.#closed) cache.start();
    } else if (cache.def !== def && this.registry.get(def.group, def.names.plural) === def) {
      // Only the registry's current definition replaces the cache's (a request may
      // still hold the one it looked up before a change).
      const reread = cache.def.strategy.onRead !== def.strategy.onRead;
      cache.def = def;
      if (reread) cache.reload();
    }
    return cache;
  }

  /** Objects and client watches of each type (for metrics). */
  stats(): { group: string; resource: string; objects: number; watchers: number }[] {
    return [...this.#caches.values()].map((c) => ({
      group: c.def.group,
      resource: c.def.names.plural,
      objects: c.size,
      watchers: c.watcherCount,
    }));
  }

  /** True once every cache has loaded its first listing. */
  ready(): boolean {
    for (const c of this.#caches.values()) if (!c.isReady) return false;
    return true;
  }

  /** Resolves when every current cache is ready. */
  async whenReady(): Promise<void> {
    await Promise.all([...this.#caches.values()].map((c) => c.ready()));
  }

  /** Stops every cache, ending their watches. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#unsubscribe?.();
    const caches = [...this.#caches.values()];
    this.#caches.clear();
    await Promise.all(caches.map((c) => c.stop()));
  }

  #sync(): void {
    if (this.#closed) return;
    const wanted = new Set<string>();
    for (const def of this.registry.all()) {
      if (!resourceVerbs(def).includes("watch")) continue; // e.g. reviews: never stored
      wanted.add(resourcePrefix(def));
      this.forDef(def);
    }
    for (const [prefix, cache] of this.#caches) {
      if (!wanted.has(prefix)) {
        this.#caches.delete(prefix);
        void cache.stop();
      }
    }
  }
}
