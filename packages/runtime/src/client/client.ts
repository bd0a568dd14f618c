/**
 * The runtime's HTTP client for any Kubernetes-compatible API server: typed
 * get/list/watch/create/update/patch/apply/delete/deleteCollection for built-in
 * and custom kinds (and their subresources), discovery of every served
 * resource, and `raw` requests for the paths no typed verb covers (`/version`,
 * `/livez`, `/readyz`, the discovery roots), all over keep-alive connections,
 * with bearer tokens, client certificates and a CA. Every non-2xx answer to a
 * typed verb becomes an ApiError carrying the server's Status.
 *
 * This file holds the verbs; their options are in options.ts, the URL paths
 * in paths.ts, sending, credentials and retries in transport.ts.
 */
import type { KubeList, KubeObject } from "@setpoint/api";
import { Discovery, type ResourceInfo, type ServerResources, type TypeRef } from "./discovery.ts";
import type { Kind } from "./kind.ts";
import { type LoadKubeconfigOptions, loadKubeconfig, type RestConfig } from "./kubeconfig.ts";
import type {
  ApplyOptions,
  CallOptions,
  CreateOptions,
  DeleteCollectionOptions,
  DeleteOptions,
  GetOptions,
  ListOptions,
  PatchOptions,
  PatchType,
  RawMethod,
  RawOptions,
  RawResponse,
  UpdateOptions,
  WatchOptions,
  WriteOptions,
} from "./options.ts";
import { collectionPath, nameOf, namespaceOf, objectPath } from "./paths.ts";
import { type ClientStats, Transport } from "./transport.ts";
import { WatchStream } from "./watch-stream.ts";

export type { ResourceInfo, ServedResource, ServerResources, TypeRef } from "./discovery.ts";
export type { RestConfig } from "./kubeconfig.ts";
export type {
  ApplyOptions,
  CallOptions,
  CreateOptions,
  DeleteCollectionOptions,
  DeleteOptions,
  GetOptions,
  ListOptions,
  PatchOptions,
  PatchType,
  RawMethod,
  RawOptions,
  RawResponse,
  UpdateOptions,
  WatchOptions,
  WriteOptions,
} from "./options.ts";
export { collectionPath, objectPath } from "./paths.ts";
export {
  type ClientStats,
  DEFAULT_REQUEST_TIMEOUT_MS,
  DEFAULT_USER_AGENT,
  MAX_RESPONSE_BYTES,
  MAX_RETRY_AFTER_ATTEMPTS,
  MAX_RETRY_AFTER_MS,
  TOKEN_FILE_REFRESH_MS,
  UnexpectedResponseError,
} from "./transport.ts";
export type { WatchEvent } from "./watch-stream.ts";
export { WatchStream } from "./watch-stream.ts";

/** Page size of `listAll` when the caller sets none. */
export const DEFAULT_PAGE_SIZE = 500;
/** Accept header asking for objects reduced to their metadata (PartialObjectMetadata), full objects as fallback. */
export const ACCEPT_METADATA =
  "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
/** The same for lists. */
export const ACCEPT_METADATA_LIST =
  "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

/** Reads objects: the Client reads the server, the InformerCache its local copies. */
export interface Reader {
  get<T extends KubeObject = KubeObject>(
    type: Kind<T>,
    name: string,
    namespace?: string,
  ): Promise<T>;
  list<T extends KubeObject = KubeObject>(type: Kind<T>, opts?: ListOptions): Promise<KubeList<T>>;
}

const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  merge: "application/merge-patch+json",
  json: "application/json-patch+json",
  strategic: "application/strategic-merge-patch+json",
  apply: "application/apply-patch+yaml",
};

/** The type's apiVersion and kind, from an object. */
export function typeOf(obj: KubeObject): TypeRef {
  if (!obj.apiVersion || !obj.kind) {
    throw new Error(`object ${obj.metadata?.name ?? ""} has no apiVersion/kind`);
  }
  return { apiVersion: obj.apiVersion, kind: obj.kind };
}

/** `obj` reduced to type and metadata (what a metadata-only read returns). */
export function toMetadataOnly<T extends KubeObject>(obj: KubeObject, type: TypeRef): T {
  return { apiVersion: type.apiVersion, kind: type.kind, metadata: obj.metadata } as T;
}

function fillType<T extends KubeObject>(obj: KubeObject, type: TypeRef, metadataOnly: boolean): T {
  if (metadataOnly) return toMetadataOnly<T>(obj, type);
  if (!obj.apiVersion) obj.apiVersion = type.apiVersion;
  if (!obj.kind) obj.kind = type.kind;
  return obj as T;
}

/** Combines several signals into one (any aborting aborts it). */
function anySignal(signals: (AbortSignal | undefined)[]): AbortSignal | undefined {
  const list = signals.filter((s): s is AbortSignal => s !== undefined);
  if (list.length <= 1) return list[0];
  return AbortSignal.any(list);
}

export class Client implements Reader {
  /** Request counts, for benchmarks and tests that count API calls. */
  readonly stats: ClientStats;
  private readonly wire: Transport;
  private readonly discovery: Discovery;

  constructor(readonly config: RestConfig) {
    this.wire = new Transport(config);
    this.stats = this.wire.stats;
    this.discovery = new Discovery((path, opts) =>
      this.wire.request({ verb: "discovery", method: "GET", path, ...opts }),
    );
  }

  /** A client for the kubeconfig `loadKubeconfig(opts)` finds. */
  static fromKubeconfig(opts?: LoadKubeconfigOptions): Client {
    return new Client(loadKubeconfig(opts));
  }

  /** Closes idle keep-alive connections; in-flight requests and watches are cut. */
  close(): void {
    this.wire.close();
  }

  /** Where `type` is served (from discovery, cached; re-read once on a miss). */
  async resourceFor(type: TypeRef): Promise<ResourceInfo> {
    return this.discovery.resourceFor(type);
  }

  /** Where `type` is served, if discovery already said so (no request). */
  cachedResource(type: TypeRef): ResourceInfo | undefined {
    return this.discovery.cached(type);
  }

  /** Forgets cached discovery (e.g. after a CRD's versions changed). */
  invalidateDiscovery(apiVersion?: string): void {
    this.discovery.invalidate(apiVersion);
  }

  /**
   * Every resource the server serves, in every version, with its verbs, scope
   * and subresources (two requests against a server with aggregated discovery).
   * A group-version that cannot be read is listed in `failed`; `/api` or `/apis`
   * failing throws. Refreshes the cache `resourceFor` reads.
   */
  serverResources(opts: CallOptions = {}): Promise<ServerResources> {
    return this.discovery.serverResources(opts.signal);
  }

  /**
   * A request to any path (`/version`, `/livez`, `/readyz?verbose`, `/apis`),
   * with this client's server, credentials, timeout, rate limit and request
   * counts (verb "raw"). Answers whatever status the server sends; only network
   * failures and timeouts throw.
   */
  async raw(method: RawMethod, path: string, opts: RawOptions = {}): Promise<RawResponse> {
    const q = path.indexOf("?");
    const query = new URLSearchParams(q < 0 ? "" : path.slice(q + 1));
    for (const [k, v] of new URLSearchParams(opts.query ?? {})) query.append(k, v);
    const r = await this.wire.exchange({
      verb: "raw",
      method,
      path: q < 0 ? path : path.slice(0, q),
      query,
      body: opts.body,
      contentType: opts.contentType,
      accept: opts.accept,
      signal: opts.signal,
    });
    let json: unknown;
    try {
      json = r.text ? JSON.parse(r.text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: r.status, headers: r.headers, text: r.text, json };
  }

  async get<T extends KubeObject = KubeObject>(
    type: Kind<T>,
    name: string,
    namespace?: string,
    opts: GetOptions = {},
  ): Promise<T> {
    const info = await this.resourceFor(type);
    const query = new URLSearchParams();
    if (opts.resourceVersion !== undefined) query.set("resourceVersion", opts.resourceVersion);
    const obj = await this.wire.request<KubeObject>({
      verb: "get",
      method: "GET",
      path: objectPath(info, namespace, name, opts.subresource),
      query,
      accept: opts.metadataOnly ? ACCEPT_METADATA : undefined,
      signal: opts.signal,
    });
    return fillType<T>(obj, type, opts.metadataOnly === true);
  }

  /** One page (or all, without `limit`) of a collection. Items carry apiVersion and kind. */
  async list<T extends KubeObject = KubeObject>(
    type: Kind<T>,
    opts: ListOptions = {},
  ): Promise<KubeList<T>> {
    const info = await this.resourceFor(type);
    const query = new URLSearchParams();
    if (opts.labelSelector) query.set("labelSelector", opts.labelSelector);
    if (opts.fieldSelector) query.set("fieldSelector", opts.fieldSelector);
    if (opts.limit) query.set("limit", String(opts.limit));
    if (opts.continue) query.set("continue", opts.continue);
    if (opts.resourceVersion !== undefined && opts.resourceVersion !== "") {
      query.set("resourceVersion", opts.resourceVersion);
      if (opts.resourceVersionMatch) query.set("resourceVersionMatch", opts.resourceVersionMatch);
    }
    const list = await this.wire.request<KubeList<KubeObject>>({
      verb: "list",
      method: "GET",
      path: collectionPath(info, opts.namespace),
      query,
      accept: opts.metadataOnly ? ACCEPT_METADATA_LIST : undefined,
      signal: opts.signal,
    });
    const meta = opts.metadataOnly === true;
    const items = Array.isArray(list?.items) ? list.items : [];
    for (let i = 0; i < items.length; i++) items[i] = fillType(items[i], type, meta);
    return {
      apiVersion: type.apiVersion,
      kind: `${type.kind}List`,
      metadata: list?.metadata ?? {},
      items: items as T[],
    };
  }

  /**
   * The whole collection, read page by page (`limit` per page, default
   * DEFAULT_PAGE_SIZE). Continue requests carry no resourceVersion, as the API requires.
   */
  async listAll<T extends KubeObject = KubeObject>(
    type: Kind<T>,
    opts: ListOptions = {},
  ): Promise<KubeList<T>> {
    const limit = opts.limit ?? DEFAULT_PAGE_SIZE;
    const first = await this.list<T>(type, { ...opts, limit });
    let token = first.metadata.continue;
    while (token) {
      const page = await this.list<T>(type, {
        ...opts,
        limit,
        continue: token,
        resourceVersion: undefined,
        resourceVersionMatch: undefined,
      });
      for (const item of page.items) first.items.push(item);
      token = page.metadata.continue;
    }
    first.metadata = { resourceVersion: first.metadata.resourceVersion };
    return first;
  }

  /** Starts a watch; iterate the returned stream. Errors (including HTTP ones) surface while iterating. */
  watch<T extends KubeObject = KubeObject>(type: Kind<T>, opts: WatchOptions = {}): WatchStream<T> {
    const meta = opts.metadataOnly === true;
    return new WatchStream<T>(
      async (signal) => {
        const info = await this.resourceFor(type);
        const query = new URLSearchParams({ watch: "true" });
        if (opts.labelSelector) query.set("labelSelector", opts.labelSelector);
        if (opts.fieldSelector) query.set("fieldSelector", opts.fieldSelector);
        if (opts.resourceVersion !== undefined && opts.resourceVersion !== "") {
          query.set("resourceVersion", opts.resourceVersion);
        }
        if (opts.resourceVersionMatch) query.set("resourceVersionMatch", opts.resourceVersionMatch);
        if (opts.allowWatchBookmarks) query.set("allowWatchBookmarks", "true");
        if (opts.timeoutSeconds !== undefined) {
          query.set("timeoutSeconds", String(Math.max(1, Math.round(opts.timeoutSeconds))));
        }
        if (opts.sendInitialEvents !== undefined) {
          query.set("sendInitialEvents", String(opts.sendInitialEvents));
        }
        return this.wire.openStream({
          verb: "watch",
          method: "GET",
          path: collectionPath(info, opts.namespace),
          query,
          accept: meta ? ACCEPT_METADATA : undefined,
          signal: anySignal([signal, opts.signal]),
          timeoutMs: 0,
        });
      },
      {
        idleTimeoutMs: opts.idleTimeoutMs,
        onOpen: opts.onOpen,
        transform: (o) => fillType<T>(o, type, meta),
      },
    );
  }

  /**
   * Creates `obj` (apiVersion and kind from the object), or with
   * `opts.subresource` posts it to that subresource of the object it names
   * (a Binding to a Pod's "binding"; the answer may be a Status).
   */
  async create<T extends KubeObject>(obj: T, opts: CreateOptions = {}): Promise<T> {
    const type = typeOf(obj);
    const info = await this.resourceFor(
      opts.subresource && opts.parentType ? opts.parentType : type,
    );
    const namespace = namespaceOf(info, obj);
    const created = await this.wire.request<KubeObject>({
      verb: "create",
      method: "POST",
      path: opts.subresource
        ? objectPath(info, namespace, nameOf(obj), opts.subresource)
        : collectionPath(info, namespace),
      query: writeQuery(opts),
      body: obj,
      signal: opts.signal,
    });
    return fillType<T>(created, type, false);
  }

  /**
   * Replaces `obj` (or, with `opts.subresource`, one of its subresources); a
   * stale metadata.resourceVersion fails with 409 Conflict.
   */
  async update<T extends KubeObject>(obj: T, opts: UpdateOptions = {}): Promise<T> {
    const type = typeOf(obj);
    const info = await this.resourceFor(
      opts.subresource && opts.parentType ? opts.parentType : type,
    );
    const updated = await this.wire.request<KubeObject>({
      verb: "update",
      method: "PUT",
      path: objectPath(info, namespaceOf(info, obj), nameOf(obj), opts.subresource),
      query: writeQuery(opts),
      body: obj,
      signal: opts.signal,
    });
    return fillType<T>(updated, type, false);
  }

  /** Replaces `obj`'s status through the status subresource. */
  async updateStatus<T extends KubeObject>(obj: T, opts: WriteOptions = {}): Promise<T> {
    return this.update(obj, { ...opts, subresource: "status" });
  }

  /**
   * Patches an object. `patch` is sent as JSON (a string is sent as is, e.g. YAML
   * for apply); the content type follows `opts.type`.
   */
  async patch<T extends KubeObject = KubeObject>(
    type: Kind<T>,
    name: string,
    namespace: string | undefined,
    patch: unknown,
    opts: PatchOptions,
  ): Promise<T> {
    const info = await this.resourceFor(type);
    const query = writeQuery(opts);
    if (opts.force !== undefined) query.set("force", String(opts.force));
    const patched = await this.wire.request<KubeObject>({
      verb: "patch",
      method: "PATCH",
      path: objectPath(info, namespace, name, opts.subresource),
      query,
      body: patch,
      contentType: PATCH_CONTENT_TYPES[opts.type],
      signal: opts.signal,
    });
    return fillType<T>(patched, type, false);
  }

  /**
   * Server-side apply: `obj` states the fields `fieldManager` owns; the server
   * merges them, creating the object if absent. `managedFields` is not sent.
   */
  async apply<T extends KubeObject>(obj: T, opts: ApplyOptions): Promise<T> {
    const type = typeOf(obj);
    const info = await this.resourceFor(type);
    const { managedFields: _drop, ...metadata } = obj.metadata;
    return this.patch<T>(
      type,
      nameOf(obj),
      namespaceOf(info, obj),
      { ...obj, metadata },
      {
        type: "apply",
        fieldManager: opts.fieldManager,
        force: opts.force,
        subresource: opts.subresource,
        dryRun: opts.dryRun,
        signal: opts.signal,
      },
    );
  }

  /** Deletes an object (with finalizers it lingers, with deletionTimestamp set, until they are removed). */
  async delete(
    type: TypeRef,
    name: string,
    namespace?: string,
    opts: DeleteOptions = {},
  ): Promise<void> {
    const info = await this.resourceFor(type);
    await this.wire.request({
      verb: "delete",
      method: "DELETE",
      path: objectPath(info, namespace, name),
      body: deleteBody(opts),
      signal: opts.signal,
    });
  }

  /**
   * Deletes every object of a kind that the options select (deletecollection),
   * in one request; each is deleted as `delete` would (finalizers honoured).
   */
  async deleteCollection(type: TypeRef, opts: DeleteCollectionOptions = {}): Promise<void> {
    const info = await this.resourceFor(type);
    const query = new URLSearchParams();
    if (opts.labelSelector) query.set("labelSelector", opts.labelSelector);
    if (opts.fieldSelector) query.set("fieldSelector", opts.fieldSelector);
    await this.wire.request({
      verb: "deletecollection",
      method: "DELETE",
      path: collectionPath(info, opts.namespace),
      query,
      body: deleteBody(opts),
      signal: opts.signal,
    });
  }
}

/** The body of a DELETE: DeleteOptions. */
function deleteBody(opts: DeleteOptions): Record<string, unknown> {
  const body: Record<string, unknown> = { kind: "DeleteOptions", apiVersion: "v1" };
  if (opts.propagationPolicy) body.propagationPolicy = opts.propagationPolicy;
  if (opts.preconditions) body.preconditions = opts.preconditions;
  if (opts.gracePeriodSeconds !== undefined) body.gracePeriodSeconds = opts.gracePeriodSeconds;
  if (opts.dryRun) body.dryRun = ["All"];
  return body;
}

function writeQuery(opts: WriteOptions): URLSearchParams {
  const q = new URLSearchParams();
  if (opts.fieldManager) q.set("fieldManager", opts.fieldManager);
  if (opts.dryRun) q.set("dryRun", "All");
  if (opts.fieldValidation) q.set("fieldValidation", opts.fieldValidation);
  return q;
}
