/**
 * The informer part of the runtime guide (docs/runtime.md quotes the region
 * below; guide.test.ts runs it against a real apiserver).
 */
import { deepClone, type KubeObject } from "@setpoint/api";
import { type Client, Informer } from "@setpoint/runtime";

type ConfigMapObject = KubeObject & { data?: Record<string, string> };

/** Follows the labelled ConfigMaps of `namespace` while `change` runs; returns what it saw. */
export async function informerTour(
  client: Client,
  namespace: string,
  change: () => Promise<void>,
): Promise<{ events: string[]; fast: string[]; frozen: boolean; cloneMode?: string }> {
  const events: string[] = [];
  // #region informer
  const informer = new Informer<ConfigMapObject>(
    client,
    { apiVersion: "v1", kind: "ConfigMap" },
    { namespace, labelSelector: "app=web" },
  );
  informer.addIndex("by-mode", (cm) => [cm.data?.mode ?? ""]);
  // Handlers should only note what changed (e.g. enqueue a key): events are hints.
  informer.addEventHandler({
    onAdd: (cm) => events.push(`add ${cm.metadata.name}`),
    onUpdate: (_old, cm) => events.push(`update ${cm.metadata.name}`),
    onDelete: (cm) => events.push(`delete ${cm.metadata.name}`),
  });
  const stop = new AbortController();
  informer.start(stop.signal);
  await informer.waitForSync();
  // #endregion
  await change();
  await new Promise((r) => setTimeout(r, 300));
  // #region informer-read
  const fast = informer.byIndex("by-mode", "fast").map((cm) => cm.metadata.name ?? "");
  const held = informer.get("web-1", namespace);
  // What the cache hands out is deep-frozen: clone it to change it.
  const frozen = held !== undefined && Object.isFrozen(held.data);
  const copy = held && deepClone(held);
  if (copy) copy.data = { ...copy.data, mode: "slow" };
  stop.abort();
  // #endregion
  return { events, fast, frozen, cloneMode: copy?.data?.mode };
}
