/**
 * The runnable part of the runtime guide (docs/runtime.md quotes the region
 * below; guide.test.ts runs it against a real apiserver): a component that
 * runs with the manager whether or not it leads, reading a side informer of
 * the shared cache that keeps only what it needs.
 */
import type { KubeObject } from "@setpoint/api";
import type { InformerScope, Manager } from "@setpoint/runtime";
import { ConfigMapKind } from "../types.ts";

/** Keeps of each ConfigMap only what the counter reads. */
function nameOnly(obj: KubeObject): KubeObject {
  return {
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    metadata: { name: obj.metadata.name, namespace: obj.metadata.namespace },
  };
}

/** The counter's informer: ConfigMaps' metadata, reduced to names. */
export const COUNTER_SCOPE: InformerScope = { metadataOnly: true, transform: nameOnly };

/** Adds a runnable that keeps `counts` (ConfigMaps per namespace) up to date. */
export function addConfigMapCounter(mgr: Manager, counts: Map<string, number>): void {
  // #region runnable
  const informer = mgr.cache.informerFor(ConfigMapKind, COUNTER_SCOPE);
  const recount = () => {
    counts.clear();
    for (const cm of informer.list()) {
      const ns = cm.metadata.namespace ?? "";
      counts.set(ns, (counts.get(ns) ?? 0) + 1);
    }
  };
  mgr.add({
    name: "configmap-counter",
    start(signal) {
      recount();
      const off = informer.addEventHandler({
        onAdd: recount,
        onUpdate: recount,
        onDelete: recount,
      });
      signal.addEventListener(
        "abort",
        () => {
          off();
          mgr.cache.removeInformer(ConfigMapKind, COUNTER_SCOPE);
        },
        { once: true },
      );
    },
    ready: () => (informer.hasSynced() ? { ok: true } : { ok: false, reason: "not synced" }),
  });
  // #endregion
}
