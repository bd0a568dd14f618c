/**
 * The resource store's services on their own, with no HTTP: a real SQLite file in
 * a directory of its own, the watch caches (started and ready) and the built-in
 * registry, for tests that drive ResourceStore's methods directly.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_API_LIMITS } from "../../src/apiserver/endpoints/limits.ts";
import { DecodedObjects } from "../../src/apiserver/store/decoded-objects.ts";
import type { StoreServices } from "../../src/apiserver/store/index.ts";
import { NamespaceLifecycle } from "../../src/apiserver/store/namespaces.ts";
import { WatchCacheSet } from "../../src/apiserver/watchcache/watch-caches.ts";
import { createBuiltinRegistry, type Registry } from "../../src/registry/registry.ts";
import { SqliteStore } from "../../src/storage/sqlite/index.ts";

export interface StoreRig {
  store: SqliteStore;
  registry: Registry;
  caches: WatchCacheSet;
  services: StoreServices;
  /** Closes the caches and the store, and removes the directory. */
  close(): Promise<void>;
}

/** Opens a store in a new temporary directory named after `name`, with its services ready. */
export async function openStoreServices(name: string): Promise<StoreRig> {
  const dir = mkdtempSync(join(tmpdir(), `setpoint-${name}-`));
  const store = SqliteStore.open(join(dir, "data.db"), { durable: false });
  const registry = createBuiltinRegistry();
  const caches = new WatchCacheSet(store, registry, DEFAULT_API_LIMITS);
  caches.start();
  const services: StoreServices = {
    store,
    caches,
    decoded: new DecodedObjects(),
    namespaces: new NamespaceLifecycle(store, registry, caches),
    limits: DEFAULT_API_LIMITS,
  };
  await caches.whenReady();
  return {
    store,
    registry,
    caches,
    services,
    async close() {
      await caches.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
