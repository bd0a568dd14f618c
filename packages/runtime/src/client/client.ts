/**
 * The runtime's HTTP client for any Kubernetes-compatible API server: typed
 * get/list/watch/create/update/patch/apply/delete/deleteCollection for built-in
 * and custom kinds (and their subresources), discovery of every served
 * resource, and `raw` requests for the paths no typed verb covers (`/version`,
 * `/livez`, `/readyz`, the discovery roots), all over keep-alive connections,
 * with bearer tokens, client certificates and a CA. Every non-2xx answer to a
 * typed verb becomes an ApiError carrying the server's Status.
 */
import { readFileSync } from "node:fs";
import http, { type IncomingMessage } from "node:http";
import https from "node:https";
import type { Readable } from "node:stream";
import type { KubeList, KubeObject } from "@setpoint/api";
import { isStatus, type Status } from "@setpoint/api";
import { Discovery, type ResourceInfo, type ServerResources, type TypeRef } from "./discovery.ts";
import {
  ApiError,
  isTooManyRequests,
  isUnauthorized,
  RequestTimeoutError,
  retryAfterMs,
  sleep,
  synthesizeStatus,
} from "./errors.ts";
import type { Kind } from "./kind.ts";
import { type LoadKubeconfigOptions, loadKubeconfig, type RestConfig } from "./kubeconfig.ts";
import { TokenBucket } from "./throttle.ts";
import { WatchStream } from "./watch-stream.ts";

export type { ResourceInfo, ServedResource, ServerResources, TypeRef } from "./discovery.ts";
export type { RestConfig } from "./kubeconfig.ts";
export type { WatchEvent } from "./watch-stream.ts";
export { WatchStream } from "./watch-stream.ts";

/** Deadline of a non-watch request when the config sets none. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/** How often a token file is re-read (service account tokens are rotated in place). */
export const TOKEN_FILE_REFRESH_MS = 60_000;
/** Times a request rejected with 429 and a Retry-After is sent again. */
export const MAX_RETRY_AFTER_ATTEMPTS = 3;
/** Longest Retry-After honoured before giving the 429 to the caller, in ms. */
export const MAX_RETRY_AFTER_MS = 10_000;
/** Largest response body read into memory for a non-watch request. */
export const MAX_RESPONSE_BYTES = 512 * 1024 * 1024;
/** Page size of `listAll` when the caller sets none. */
export const DEFAULT_PAGE_SIZE = 500;
/** User-Agent when the config sets none. */
export const DEFAULT_USER_AGENT = "setpoint-runtime/0.1.0";

/** Accept header asking for objects reduced to their metadata (PartialObjectMetadata), full objects as fallback. */
export const ACCEPT_METADATA =
  "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
/** The same for lists. */
export const ACCEPT_METADATA_LIST =
  "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

/** Options every call takes. */
export interface CallOptions {
  /** Abandons the request when aborted. */
  signal?: AbortSignal | undefined;
}

export interface GetOptions extends CallOptions {
  /** Read at least this fresh ("0": any cached version). */
  resourceVersion?: string | undefined;
  /** Return only `metadata` (as PartialObjectMetadata when the server supports it). */
  metadataOnly?: boolean | undefined;
  /** Read a subresource ("status", "scale") instead of the object. */
  subresource?: string | undefined;
}

export interface ListOptions extends CallOptions {
  /** Only this namespace (all namespaces when unset). */
  namespace?: string | undefined;
  labelSelector?: string | undefined;
  fieldSelector?: string | undefined;
  /** Page size; the answer carries `metadata.continue` when more remain. */
  limit?: number | undefined;
  continue?: string | undefined;
  /** "" or unset: a consistent (quorum) read; "0": any version (served from the watch cache). */
  resourceVersion?: string | undefined;
  resourceVersionMatch?: "NotOlderThan" | "Exact" | undefined;
  /** Return only `metadata` of each item (PartialObjectMetadata when the server supports it). */
  metadataOnly?: boolean | undefined;
}

export interface WatchOptions extends CallOptions {
  namespace?: string | undefined;
  labelSelector?: string | undefined;
  fieldSelector?: string | undefined;
  /** Start after this version (unset: the server's choice, starting with synthetic ADDs). */
  resourceVersion?: string | undefined;
  resourceVersionMatch?: "NotOlderThan" | "Exact" | undefined;
  /** Ask for BOOKMARK events (progress markers carrying only a resourceVersion). */
  allowWatchBookmarks?: boolean | undefined;
  /** The server ends the watch after this long. */
  timeoutSeconds?: number | undefined;
  /** Send the current state as ADDED events first (streaming list). */
  sendInitialEvents?: boolean | undefined;
  metadataOnly?: boolean | undefined;
  /** Fail the stream when no bytes arrive for this long (0: never). */
  idleTimeoutMs?: number | undefined;
  /** Called once the server has accepted the watch (answered 2xx). */
  onOpen?: (() => void) | undefined;
}

export interface WriteOptions extends CallOptions {
  /** Recorded in managedFields as the writer's name. */
  fieldManager?: string | undefined;
  /** Validate and admit, but do not persist. */
  dryRun?: boolean | undefined;
  /** How the server treats unknown or duplicate fields. */
  fieldValidation?: "Strict" | "Warn" | "Ignore" | undefined;
}

export interface UpdateOptions extends WriteOptions {
  /** Replace a subresource ("status", "scale", a Namespace's "finalize") instead of the object. */
  subresource?: string | undefined;
  /**
   * With `subresource`: the kind that has the subresource, when `obj` is of
   * another kind (an autoscaling/v1 Scale written to "scale"). `obj` still names
   * the object and its namespace. Default: `obj`'s own kind.
   */
  parentType?: TypeRef | undefined;
}

/** Patch formats: JSON merge patch, JSON patch, strategic merge patch, server-side apply. */
export type PatchType = "merge" | "json" | "strategic" | "apply";

export interface PatchOptions extends WriteOptions {
  type: PatchType;
  /** Server-side apply: take ownership of conflicting fields. */
  force?: boolean | undefined;
  /** Patch a subresource ("status", "scale"). */
  subresource?: string | undefined;
}

export interface ApplyOptions extends CallOptions {
  fieldManager: string;
  force?: boolean | undefined;
  subresource?: string | undefined;
  dryRun?: boolean | undefined;
}

export interface DeleteOptions extends CallOptions {
  propagationPolicy?: "Orphan" | "Background" | "Foreground" | undefined;
  preconditions?: { uid?: string | undefined; resourceVersion?: string | undefined } | undefined;
  gracePeriodSeconds?: number | undefined;
  dryRun?: boolean | undefined;
}

/** Which objects a `deleteCollection` deletes, and how. */
export interface DeleteCollectionOptions extends Omit<DeleteOptions, "preconditions"> {
  /** Only this namespace (for a namespaced kind; unset: all namespaces, where the server allows it). */
  namespace?: string | undefined;
  labelSelector?: string | undefined;
  fieldSelector?: string | undefined;
}

/** HTTP methods a `raw` request may use. */
export type RawMethod = "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE";

export interface RawOptions extends CallOptions {
  /** Added to the path's own query string, if it has one. */
  query?: URLSearchParams | Record<string, string> | undefined;
  /** Sent as JSON (a string is sent as is). */
  body?: unknown | undefined;
  /** Content-Type of the body (default application/json). */
  contentType?: string | undefined;
  /** Accept header (default application/json). */
  accept?: string | undefined;
}

/** The answer to a `raw` request, whatever its status. */
export interface RawResponse {
  /** The HTTP status code. */
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The body as text. */
  text: string;
  /** The body parsed as JSON; undefined when empty or not JSON. */
  json: unknown;
}

/** Reads objects: the Client reads the server, the InformerCache its local copies. */
export interface Reader {
  get<T extends KubeObject = KubeObject>(
    type: Kind<T>,
    name: string,
    namespace?: string,
  ): Promise<T>;
  list<T extends KubeObject = KubeObject>(type: Kind<T>, opts?: ListOptions): Promise<KubeList<T>>;
}

/** Request counts, for benchmarks and tests that count API calls. */
export interface ClientStats {
  requests: number;
  byVerb: Record<string, number>;
}

const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  merge: "application/merge-patch+json",
  json: "application/json-patch+json",
  strategic: "application/strategic-merge-patch+json",
  apply: "application/apply-patch+yaml",
};

interface RequestSpec {
  /** For stats: get, list, watch, create, update, patch, delete, deletecollection, discovery, raw. */
  verb: string;
  method: string;
  path: string;
  query?: URLSearchParams | undefined;
  body?: unknown | undefined;
  contentType?: string | undefined;
  accept?: string | undefined;
  signal?: AbortSignal | undefined;
  /** 0: no deadline (watches). */
  timeoutMs?: number | undefined;
}

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
  readonly stats: ClientStats = { requests: 0, byVerb: {} };
  private readonly base: URL;
  private readonly agent: http.Agent;
  private readonly transport: typeof http | typeof https;
  private readonly discovery: Discovery;
  private readonly bucket: TokenBucket | undefined;
  private fileToken: { value: string; readAt: number } | undefined;

  constructor(readonly config: RestConfig) {
    this.base = new URL(config.server);
    if (this.base.protocol === "https:") {
      this.transport = https;
      this.agent = new https.Agent({
        keepAlive: true,
        ca: config.ca,
        cert: config.cert,
        key: config.key,
        rejectUnauthorized: config.insecureSkipTLSVerify !== true,
        servername: config.tlsServerName,
      });
    } else if (this.base.protocol === "http:") {
      this.transport = http;
      this.agent = new http.Agent({ keepAlive: true });
    } else {
      throw new Error(`server URL must be http or https: ${config.server}`);
    }
    this.discovery = new Discovery((path, opts) =>
      this.request({ verb: "discovery", method: "GET", path, ...opts }),
    );
    if (config.qps !== undefined && config.qps > 0) {
      this.bucket = new TokenBucket(config.qps, config.burst ?? Math.ceil(config.qps));
    }
  }

  /** A client for the kubeconfig `loadKubeconfig(opts)` finds. */
  static fromKubeconfig(opts?: LoadKubeconfigOptions): Client {
    return new Client(loadKubeconfig(opts));
  }

  /** Closes idle keep-alive connections; in-flight requests and watches are cut. */
  close(): void {
    this.agent.destroy();
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
    const r = await this.exchange({
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
    const obj = await this.request<KubeObject>({
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
    const list = await this.request<KubeList<KubeObject>>({
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
        return this.openStream({
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

  /** Creates `obj` (apiVersion and kind from the object). */
  async create<T extends KubeObject>(obj: T, opts: WriteOptions = {}): Promise<T> {
    const type = typeOf(obj);
    const info = await this.resourceFor(type);
    const created = await this.request<KubeObject>({
      verb: "create",
      method: "POST",
      path: collectionPath(info, namespaceOf(info, obj)),
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
    const updated = await this.request<KubeObject>({
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
    const patched = await this.request<KubeObject>({
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
    await this.request({
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
    await this.request({
      verb: "deletecollection",
      method: "DELETE",
      path: collectionPath(info, opts.namespace),
      query,
      body: deleteBody(opts),
      signal: opts.signal,
    });
  }

  // ---- transport ----

  private async bearer(): Promise<string | undefined> {
    if (this.config.token) return this.config.token;
    const file = this.config.tokenFile;
    if (!file) return undefined;
    const now = Date.now();
    if (!this.fileToken || now - this.fileToken.readAt > TOKEN_FILE_REFRESH_MS) {
      this.fileToken = { value: readFileSync(file, "utf8").trim(), readAt: now };
    }
    return this.fileToken.value;
  }

  private async headers(
    spec: RequestSpec,
    body: string | undefined,
  ): Promise<http.OutgoingHttpHeaders> {
    const h: http.OutgoingHttpHeaders = {
      accept: spec.accept ?? "application/json",
      "user-agent": this.config.userAgent ?? DEFAULT_USER_AGENT,
    };
    const token = await this.bearer();
    if (token) h.authorization = `Bearer ${token}`;
    else if (this.config.username !== undefined) {
      const pair = `${this.config.username}:${this.config.password ?? ""}`;
      h.authorization = `Basic ${Buffer.from(pair).toString("base64")}`;
    }
    if (body !== undefined) {
      h["content-type"] = spec.contentType ?? "application/json";
      h["content-length"] = Buffer.byteLength(body);
    }
    return h;
  }

  private count(verb: string): void {
    this.stats.requests++;
    this.stats.byVerb[verb] = (this.stats.byVerb[verb] ?? 0) + 1;
  }

  /** Sends one request and answers its response once the status line and headers arrived. */
  private async send(spec: RequestSpec): Promise<{ res: IncomingMessage; describe: string }> {
    if (this.bucket) await this.bucket.take(spec.signal);
    const body =
      spec.body === undefined
        ? undefined
        : typeof spec.body === "string"
          ? spec.body
          : JSON.stringify(spec.body);
    const headers = await this.headers(spec, body);
    const basePath = this.base.pathname.replace(/\/+$/, "");
    const qs = spec.query?.toString();
    const path = `${basePath}${spec.path}${qs ? `?${qs}` : ""}`;
    const describe = `${spec.method} ${spec.path}`;
    const timeoutMs = spec.timeoutMs ?? this.config.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.count(spec.verb);
    return new Promise((resolve, reject) => {
      const req = this.transport.request({
        protocol: this.base.protocol,
        hostname: this.base.hostname.replace(/^\[|\]$/g, ""),
        port: this.base.port || undefined,
        method: spec.method,
        path,
        headers,
        agent: this.agent,
        signal: spec.signal,
      });
      if (timeoutMs > 0) {
        const timer = setTimeout(() => {
          req.destroy(new RequestTimeoutError(`${describe} timed out after ${timeoutMs} ms`));
        }, timeoutMs);
        const clear = (): void => clearTimeout(timer);
        req.once("close", clear);
        req.once("response", (res) => res.once("close", clear));
      }
      req.once("response", (res) => resolve({ res, describe }));
      req.on("error", (e) => reject(spec.signal?.aborted ? (spec.signal.reason ?? e) : e));
      req.end(body);
    });
  }

  /** A request whose JSON answer is returned; a non-2xx answer throws its ApiError. */
  private async request<R>(spec: RequestSpec): Promise<R> {
    const r = await this.exchange(spec);
    if (r.error) throw r.error;
    return parseJson<R>(r.text, r.describe, r.headers["content-type"]);
  }

  /**
   * Sends a request and reads its whole answer, whatever the status (`error`
   * is set for a non-2xx one). Sends again after a 429 with Retry-After (up to
   * MAX_RETRY_AFTER_ATTEMPTS times) and once after a 401 with a re-read token file.
   */
  private async exchange(spec: RequestSpec): Promise<Exchange> {
    for (let attempt = 0; ; attempt++) {
      const { res, describe } = await this.send(spec);
      const text = await readBody(res);
      const status = res.statusCode ?? 0;
      const r: Exchange = { status, headers: res.headers, text, describe };
      if (status >= 200 && status < 300) return r;
      r.error = toApiError(status, text, res.headers["retry-after"], describe);
      if (attempt < MAX_RETRY_AFTER_ATTEMPTS && isTooManyRequests(r.error)) {
        const wait = retryAfterMs(r.error);
        if (wait !== undefined && wait <= MAX_RETRY_AFTER_MS) {
          await sleep(wait, spec.signal);
          continue;
        }
      }
      if (attempt === 0 && isUnauthorized(r.error) && this.config.tokenFile && !this.config.token) {
        this.fileToken = undefined;
        continue;
      }
      return r;
    }
  }

  /** A streaming request (watch): resolves with the body once the server answered 2xx. */
  private async openStream(spec: RequestSpec): Promise<Readable> {
    const { res, describe } = await this.send(spec);
    const code = res.statusCode ?? 0;
    if (code >= 200 && code < 300) return res;
    const text = await readBody(res);
    throw toApiError(code, text, res.headers["retry-after"], describe);
  }
}

/** A whole answer, as `exchange` reads it. */
interface Exchange {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** "METHOD /path", for messages. */
  describe: string;
  /** The ApiError of a non-2xx answer. */
  error?: ApiError | undefined;
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

function toApiError(
  code: number,
  text: string,
  retryAfter: string | undefined,
  describe: string,
): ApiError {
  const seconds = retryAfter !== undefined ? Number.parseInt(retryAfter, 10) : Number.NaN;
  const retry = Number.isFinite(seconds) ? seconds : undefined;
  let status: Status | undefined;
  try {
    const parsed = JSON.parse(text) as unknown;
    if (isStatus(parsed)) status = parsed;
  } catch {
    // not JSON: synthesized below
  }
  if (!status) status = synthesizeStatus(code, text, retry);
  else if (retry !== undefined && status.details?.retryAfterSeconds === undefined) {
    status.details = { ...status.details, retryAfterSeconds: retry };
  }
  return new ApiError(status, describe);
}

/** The server answered 2xx with a body that is not JSON. */
export class UnexpectedResponseError extends Error {
  override name = "UnexpectedResponseError";
}

function parseJson<R>(text: string, describe: string, contentType: string | undefined): R {
  if (!text) return undefined as R;
  try {
    return JSON.parse(text) as R;
  } catch {
    throw new UnexpectedResponseError(
      `${describe}: the server answered ${contentType ?? "without a content type"}, not JSON: ${JSON.stringify(text.slice(0, 80))}`,
    );
  }
}

function readBody(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    res.on("data", (c: Buffer) => {
      size += c.length;
      if (size > MAX_RESPONSE_BYTES) {
        res.destroy(new Error(`response larger than ${MAX_RESPONSE_BYTES} bytes`));
        return;
      }
      chunks.push(c);
    });
    res.once("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    res.on("error", reject);
    res.once("aborted", () =>
      reject(Object.assign(new Error("response aborted"), { code: "ECONNRESET" })),
    );
  });
}

function writeQuery(opts: WriteOptions): URLSearchParams {
  const q = new URLSearchParams();
  if (opts.fieldManager) q.set("fieldManager", opts.fieldManager);
  if (opts.dryRun) q.set("dryRun", "All");
  if (opts.fieldValidation) q.set("fieldValidation", opts.fieldValidation);
  return q;
}

function nameOf(obj: KubeObject): string {
  const name = obj.metadata?.name;
  if (!name) throw new Error(`${obj.kind ?? "object"} has no metadata.name`);
  return name;
}

function namespaceOf(info: ResourceInfo, obj: KubeObject): string | undefined {
  if (!info.namespaced) return undefined;
  const ns = obj.metadata?.namespace;
  if (!ns)
    throw new Error(
      `${info.kind} ${obj.metadata?.name ?? ""} is namespaced but has no metadata.namespace`,
    );
  return ns;
}

/** The URL path of a collection: all namespaces when `namespace` is unset. */
export function collectionPath(info: ResourceInfo, namespace?: string): string {
  const prefix = info.group === "" ? `/api/${info.version}` : `/apis/${info.group}/${info.version}`;
  const ns = info.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : "";
  return `${prefix}${ns}/${info.plural}`;
}

/** The URL path of one object (and optionally one of its subresources). */
export function objectPath(
  info: ResourceInfo,
  namespace: string | undefined,
  name: string,
  subresource?: string,
): string {
  if (!name) throw new Error(`${info.kind}: a name is required`);
  if (info.namespaced && !namespace) {
    throw new Error(`${info.kind} "${name}" is namespaced: a namespace is required`);
  }
  const sub = subresource ? `/${subresource}` : "";
  return `${collectionPath(info, namespace)}/${encodeURIComponent(name)}${sub}`;
}
