/**
 * The client part of the runtime guide (docs/runtime.md quotes the regions
 * below; guide.test.ts runs them against a real apiserver).
 */
import type { KubeObject } from "@setpoint/api";
import {
  type Client,
  isNotFound,
  kind,
  mapLimit,
  preferredResources,
  retryOnConflict,
} from "@setpoint/runtime";

type ConfigMapObject = KubeObject & { data?: Record<string, string> };
type NamespaceObject = KubeObject & { status?: { phase?: string } };

/** Creates, reads, lists, updates, patches, applies and deletes a ConfigMap in `namespace`. */
export async function clientTour(client: Client, namespace: string): Promise<string[]> {
  const log: string[] = [];
  // #region client
  const ConfigMap = kind<ConfigMapObject>("v1", "ConfigMap");

  await client.create({
    ...ConfigMap,
    metadata: { name: "app-config", namespace, labels: { app: "web" } },
    data: { mode: "fast" },
  });
  const cm = await client.get(ConfigMap, "app-config", namespace);
  log.push(`created at resourceVersion ${cm.metadata.resourceVersion}`);

  // One page of a list; pass `continue` for the next, or use listAll.
  const page = await client.list(ConfigMap, {
    namespace,
    labelSelector: "app=web",
    limit: 100,
  });
  log.push(`listed ${page.items.length}`);

  // Read-modify-write, retried when someone else wrote in between (409 Conflict).
  await retryOnConflict(async () => {
    const current = await client.get(ConfigMap, "app-config", namespace);
    current.data = { ...current.data, mode: "safe" };
    await client.update(current);
  });

  // A merge patch needs no resourceVersion; server-side apply owns the fields it sends.
  await client.patch(
    ConfigMap,
    "app-config",
    namespace,
    { metadata: { annotations: { note: "hi" } } },
    {
      type: "merge",
    },
  );
  await client.apply(
    { ...ConfigMap, metadata: { name: "app-config", namespace }, data: { owner: "guide" } },
    { fieldManager: "guide" },
  );

  // Errors are ApiErrors carrying the server's Status; test them with the predicates.
  try {
    await client.get(ConfigMap, "missing", namespace);
  } catch (e) {
    if (!isNotFound(e)) throw e;
    log.push("missing is not found");
  }
  await client.delete(ConfigMap, "app-config", namespace);
  // #endregion
  return log;
}

/** Writes in bulk, a collection delete, a subresource, discovery and a raw request. */
export async function clientMoreTour(client: Client, namespace: string): Promise<string[]> {
  const log: string[] = [];
  // #region client-more
  const ConfigMap = kind<ConfigMapObject>("v1", "ConfigMap");
  const Namespace = kind<NamespaceObject>("v1", "Namespace");

  // Many calls, at most 2 in flight; every item is attempted even if one fails.
  const created = await mapLimit(["a", "b", "c"], 2, (name) =>
    client.create({ ...ConfigMap, metadata: { name, namespace, labels: { batch: "1" } } }),
  );
  log.push(`created ${created.map((cm) => cm.metadata.name).join(",")}`);
  // One request deletes everything a selector picks (finalizers are honoured).
  await client.deleteCollection(ConfigMap, { namespace, labelSelector: "batch=1" });

  // get, update and patch reach a subresource through `subresource`.
  const ns = await client.get(Namespace, namespace, undefined, {
    subresource: "status",
  });
  log.push(`phase ${ns.status?.phase}`);

  // What the server serves (every version), and one preferred version per resource.
  const { resources } = await client.serverResources();
  const configMaps = preferredResources(resources).filter((r) => r.plural === "configmaps");
  log.push(`configmaps in ${configMaps.map((r) => r.apiVersion).join(",")}`);

  // Paths no typed verb covers, with the client's credentials, deadline and counts.
  const version = await client.raw("GET", "/version");
  log.push(`GET /version: ${version.status}`);
  // #endregion
  return log;
}
