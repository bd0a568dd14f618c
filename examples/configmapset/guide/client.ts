/**
 * The client part of the runtime guide (docs/runtime.md quotes the region
 * below; guide.test.ts runs it against a real apiserver).
 */
import type { KubeObject } from "../../../src/api/index.ts";
import { type Client, isNotFound, retryOnConflict } from "../../../src/runtime/index.ts";

type ConfigMapObject = KubeObject & { data?: Record<string, string> };

/** Creates, reads, lists, updates, patches, applies and deletes a ConfigMap in `namespace`. */
export async function clientTour(client: Client, namespace: string): Promise<string[]> {
  const log: string[] = [];
  // #region client
  const ConfigMap = { apiVersion: "v1", kind: "ConfigMap" };

  await client.create({
    ...ConfigMap,
    metadata: { name: "app-config", namespace, labels: { app: "web" } },
    data: { mode: "fast" },
  });
  const cm = await client.get<ConfigMapObject>(ConfigMap, "app-config", namespace);
  log.push(`created at resourceVersion ${cm.metadata.resourceVersion}`);

  // One page of a list; pass `continue` for the next, or use listAll.
  const page = await client.list<ConfigMapObject>(ConfigMap, {
    namespace,
    labelSelector: "app=web",
    limit: 100,
  });
  log.push(`listed ${page.items.length}`);

  // Read-modify-write, retried when someone else wrote in between (409 Conflict).
  await retryOnConflict(async () => {
    const current = await client.get<ConfigMapObject>(ConfigMap, "app-config", namespace);
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
