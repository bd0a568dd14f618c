/**
 * Storage request latency, as Kubernetes' etcd_request_duration_seconds: a Store
 * wrapped so that every call is timed by operation (get, list, create, update,
 * delete, ...) and type (the resource the key belongs to, e.g. "configmaps").
 */
import type { Histogram } from "prom-client";
import { REGISTRY_ROOT } from "../../registry/storage-keys.ts";
import type { Store } from "../../storage/store.ts";

/** "/registry/core/configmaps/ns/name" → "configmaps"; "/registry/apps.x/widgets/" → "widgets.apps.x". */
export function storageType(key: string): string {
  if (!key.startsWith(REGISTRY_ROOT)) return "unknown";
  const [group, resource] = key.slice(REGISTRY_ROOT.length).split("/");
  if (!resource) return "unknown";
  return group === "core" ? resource : `${resource}.${group}`;
}

const TIMED = ["get", "list", "create", "update", "delete", "compact", "currentRevision"] as const;

/** A Store that times every call of `store` into `histogram` (labels operation, type). */
export function instrumentStore(store: Store, histogram: Histogram<"operation" | "type">): Store {
  const timed = new Map<string, unknown>();
  for (const op of TIMED) {
    const fn = (store[op] as (...args: unknown[]) => Promise<unknown>).bind(store);
    timed.set(op, (...args: unknown[]) => {
      const start = process.hrtime.bigint();
      const key = typeof args[0] === "string" ? args[0] : "";
      const done = () => {
        const seconds = Number(process.hrtime.bigint() - start) / 1e9;
        histogram.observe({ operation: op, type: storageType(key) }, seconds);
      };
      const p = fn(...args);
      p.then(done, done);
      return p;
    });
  }
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (typeof prop === "string" && timed.has(prop)) return timed.get(prop);
      const v = Reflect.get(target, prop, receiver);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}
