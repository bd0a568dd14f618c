/**
 * Reading a whole cluster over its API, as the inspection commands do: connect
 * with a kubeconfig, discover every served resource, list each (bounded
 * concurrency, paged), and read the controllers' leader Leases.
 */
import type { KubeObject } from "@setpoint/api";
import {
  Client,
  groupResource,
  LEASE_TYPE,
  loadKubeconfig,
  mapLimit,
  preferredResources,
  type RestConfig,
  type ServedResource,
} from "@setpoint/runtime";
import type { ResourceObject } from "./stuck.ts";

/** Resources listed at once. */
export const LIST_CONCURRENCY = 4;
/** Page size of each list. */
export const LIST_PAGE_SIZE = 500;

/** How to reach the server: the kubeconfig flags every inspection command takes. */
export interface ConnectFlags {
  kubeconfig?: string;
  context?: string;
}

/** A connection to one API server. */
export interface Connection {
  readonly config: RestConfig;
  readonly client: Client;
  close(): void;
}

/** Connects with `--kubeconfig` / `--context`, else $KUBECONFIG, else ~/.kube/config. */
export function connect(flags: ConnectFlags): Connection {
  const config = loadKubeconfig({ path: flags.kubeconfig, context: flags.context });
  config.userAgent ??= "setpoint-cli";
  const client = new Client(config);
  return { config, client, close: () => client.close() };
}

/** What discovery found: one version of each served resource, and the group-versions it could not read. */
export interface ServedResources {
  /** Each resource at its group's preferred version (or the version that serves it). */
  resources: ServedResource[];
  /** Group-versions whose discovery document could not be read, with why. */
  failures: { resource: string; message: string }[];
}

/** Every resource the server serves (see ServedResources); throws when /api or /apis cannot be read. */
export async function servedResources(client: Client): Promise<ServedResources> {
  const found = await client.serverResources();
  return {
    resources: preferredResources(found.resources),
    failures: [...found.failed].map(([gv, message]) => ({ resource: gv, message })),
  };
}

/** What listing every resource found. */
export interface ClusterListing {
  items: ResourceObject[];
  /** The list resourceVersion of each resource listed (to watch from). */
  listed: { resource: ServedResource; resourceVersion: string }[];
  /** Resources that could not be listed (e.g. forbidden), with why. */
  failures: { resource: string; message: string }[];
}

export interface ListEverythingOptions {
  /** Only this namespace (cluster-scoped resources are then skipped). */
  namespace?: string;
  /**
   * Only metadata of each object (cheaper; enough for deletion state), for every
   * resource or those the function accepts. Namespaces are always read whole:
   * their spec.finalizers also hold deletion back.
   */
  metadataOnly?: boolean | ((r: ServedResource) => boolean);
  /** Leave these resources out. */
  skip?: (r: ServedResource) => boolean;
}

/** Lists every listable resource. */
export async function listEverything(
  client: Client,
  resources: ServedResource[],
  opts: ListEverythingOptions = {},
): Promise<ClusterListing> {
  const todo = resources.filter(
    (r) =>
      r.verbs.includes("list") && !(opts.namespace && !r.namespaced) && !(opts.skip?.(r) ?? false),
  );
  const listing: ClusterListing = { items: [], listed: [], failures: [] };
  await mapLimit(todo, LIST_CONCURRENCY, async (resource) => {
    try {
      const list = await client.listAll<KubeObject>(
        { apiVersion: resource.apiVersion, kind: resource.kind },
        {
          namespace: opts.namespace,
          metadataOnly: readsMetadataOnly(resource, opts.metadataOnly),
          limit: LIST_PAGE_SIZE,
        },
      );
      for (const obj of list.items) listing.items.push({ resource, obj });
      listing.listed.push({ resource, resourceVersion: list.metadata.resourceVersion ?? "" });
    } catch (e) {
      listing.failures.push({
        resource: groupResource(resource),
        message: e instanceof Error ? e.message : String(e),
      });
    }
  });
  return listing;
}

/** Whether `r` is listed as metadata only under the option. */
export function readsMetadataOnly(
  r: ServedResource,
  option: ListEverythingOptions["metadataOnly"],
): boolean {
  if (r.group === "" && r.kind === "Namespace") return false;
  return typeof option === "function" ? option(r) : option === true;
}

/** Every Lease in the cluster. */
export async function listLeases(client: Client): Promise<KubeObject[]> {
  return (await client.listAll<KubeObject>(LEASE_TYPE, { limit: LIST_PAGE_SIZE })).items;
}
