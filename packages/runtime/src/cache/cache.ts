/**
 * Informers shared across controllers: one per (kind, scope), created on first
 * request and started as soon as the cache runs, so every controller of a manager
 * reads the same local copies and the server sees one list and one watch per kind.
 * A kind whose CRD does not exist yet keeps retrying (discovery is re-read on a
 * miss) and syncs once the CRD is served. One informer can be stopped and
 * removed (`removeInformer`), e.g. when its kind stops being served.
 */

import type { KubeList, KubeObject } from "@setpoint/api";
import { errors, matchesLabels, parseLabelSelector } from "@setpoint/api";
import type { Client, ListOptions, Reader, TypeRef } from "../client/client.ts";
import { ApiError } from "../client/errors.ts";
import type { Kind } from "../client/kind.ts";
import { Informer, type InformerHealth, type InformerOptions } from "./informer.ts";
import type { RuntimeLogger } from "./reflector.ts";

/** What an informer watches: a namespace, label and field selectors, full objects or metadata. */
export interface InformerScope {
  namespace?: string | undefined;
  labelSelector?: string | undefined;
  fieldSelector?: string | undefined;
  /** Objects reduced to apiVersion, kind and metadata (PartialObjectMetadata). */
  metadataOnly?: boolean | undefined;
  /**
   * Applied to every object before it is stored (after managedFields are
   * stripped), e.g. to keep only the fields a controller reads. Informers with
   * different transform functions are distinct; the same function shares one.
   */
  transform?: ((obj: KubeObject) => KubeObject) | undefined;
}

export interface InformerCacheOptions {
  /** Resync period of every informer, in ms (0 or unset: none). */
  resyncMs?: number | undefined;
  /** Drop `metadata.managedFields` from cached objects (default true). */
  stripManagedFields?: boolean | undefined;
  /**
   * The scope used for a kind when informerFor, get and list are not given one,
   * as "apiVersion/kind" → scope (e.g. only labelled Secrets). Unlisted kinds: everything.
   */
  defaultScopes?: Record<string, InformerScope> | undefined;
  /** Further informer settings (timeouts, backoff, page size) applied to every informer. */
  informerOptions?:
    | Omit<InformerOptions<KubeObject>, "resyncMs" | "stripManagedFields">
    | undefined;
  logger?: RuntimeLogger | undefined;
}

/** Options of a list from the cache: the client's list options, and which informer to read. */
export interface CacheListOptions extends ListOptions {
  /**
   * The informer to read (the kind's default scope when unset). With
   * `metadataOnly`, that scope's metadata-only informer. `namespace`,
   * `labelSelector` and `fieldSelector` filter within what it holds.
   */
  scope?: InformerScope | undefined;
}

/** One informer's health, with what it watches. */
export interface CachedInformerHealth extends InformerHealth {
  apiVersion: string;
  kind: string;
  scope: InformerScope;
}

/** The cache reads of a kind before the cache was started. */
export class CacheNotStartedError extends Error {
  override name = "CacheNotStartedError";
}

function typeKey(type: TypeRef): string {
  return `${type.apiVersion}/${type.kind}`;
}

/** A number per transform function, so that scopes with different transforms have different keys. */
const transformIds = new WeakMap<(obj: KubeObject) => KubeObject, number>();
let nextTransformId = 1;

function transformId(fn: InformerScope["transform"]): number {
  if (!fn) return 0;
  let id = transformIds.get(fn);
  if (id === undefined) {
    id = nextTransformId++;
    transformIds.set(fn, id);
  }
  return id;
}

/**
 * The entry key of a kind (`tk`, its typeKey) in `scope`. Every read computes
 * it, so it is a plain concatenation, the fields joined with NUL; a scope with
 * a NUL in a field (no valid one has) is serialized as JSON instead, which
 * holds no raw NUL, so two scopes never share a key.
 */
function scopeKey(tk: string, scope: InformerScope): string {
  const ns = scope.namespace ?? "";
  const labels = scope.labelSelector ?? "";
  const fields = scope.fieldSelector ?? "";
  const meta = scope.metadataOnly === true ? "1" : "0";
  const t = transformId(scope.transform);
  if (labels.includes("\0") || fields.includes("\0") || ns.includes("\0")) {
    return JSON.stringify([tk, ns, labels, fields, meta, t]);
  }
  return `${tk}\0${ns}\0${labels}\0${fields}\0${meta}\0${t}`;
}

/** The scope of a kind read with none and without a default: all of it. */
const WHOLE_KIND: InformerScope = Object.freeze({});

interface Entry {
  type: TypeRef;
  scope: InformerScope;
  informer: Informer<KubeObject>;
  /** Stops this informer alone (the cache's signal aborts every entry's). */
  stop: AbortController;
}

/** Matches the field selectors a cache can answer locally: metadata.name and metadata.namespace. */
function fieldMatcher(selector: string | undefined): (o: KubeObject) => boolean {
  if (!selector) return () => true;
  const checks = selector.split(",").map((term) => {
    const m = /^\s*(metadata\.name|metadata\.namespace)\s*(==|=|!=)\s*(.*?)\s*$/.exec(term);
    if (!m) {
      throw errors.badRequest(
        `field selector "${term}" cannot be answered from the cache (only metadata.name and metadata.namespace)`,
      );
    }
    const [, field, op, value] = m;
    const pick = (o: KubeObject): string =>
      (field === "metadata.name" ? o.metadata.name : o.metadata.namespace) ?? "";
    return op === "!="
      ? (o: KubeObject) => pick(o) !== value
      : (o: KubeObject) => pick(o) === value;
  });
  return (o) => checks.every((c) => c(o));
}

export class InformerCache implements Reader {
  private readonly entries = new Map<string, Entry>();
  private signal: AbortSignal | undefined;

  constructor(
    readonly client: Client,
    private readonly opts: InformerCacheOptions = {},
  ) {}

  /**
   * The shared informer for `type` in `scope` (the kind's default scope when
   * omitted), created on first request; started at once if the cache runs.
   */
  informerFor<T extends KubeObject = KubeObject>(
    type: Kind<T>,
    scope?: InformerScope,
  ): Informer<T> {
    const tk = typeKey(type);
    const s = scope ?? this.opts.defaultScopes?.[tk] ?? WHOLE_KIND;
    const key = scopeKey(tk, s);
    let entry = this.entries.get(key);
    if (!entry) {
      const informer = new Informer<KubeObject>(this.client, type, {
        ...this.opts.informerOptions,
        ...s,
        resyncMs: this.opts.resyncMs,
        stripManagedFields: this.opts.stripManagedFields,
        logger: this.opts.logger,
      });
      entry = { type, scope: { ...s }, informer, stop: new AbortController() };
      this.entries.set(key, entry);
      if (this.signal) {
        if (this.signal.aborted) entry.stop.abort();
        informer.start(entry.stop.signal);
      }
    }
    return entry.informer as unknown as Informer<T>;
  }

  /**
   * Stops the informer for `type` in `scope` (the kind's default scope when
   * omitted) and forgets it; returns whether there was one. Its handlers get no
   * further events and its readers no further updates; a later `informerFor`
   * creates a new one. For kinds that stop being served.
   */
  removeInformer(type: TypeRef, scope?: InformerScope): boolean {
    const tk = typeKey(type);
    const key = scopeKey(tk, scope ?? this.opts.defaultScopes?.[tk] ?? WHOLE_KIND);
    const entry = this.entries.get(key);
    if (!entry) return false;
    this.entries.delete(key);
    entry.stop.abort();
    return true;
  }

  /** Starts every informer requested so far and, from now on, each one as it is requested. */
  start(signal: AbortSignal): void {
    if (this.signal) return;
    this.signal = signal;
    // One listener for all informers, however many there are.
    const stopAll = (): void => {
      for (const e of this.entries.values()) e.stop.abort();
    };
    if (signal.aborted) stopAll();
    else signal.addEventListener("abort", stopAll, { once: true });
    for (const e of this.entries.values()) e.informer.start(e.stop.signal);
  }

  /** Whether start() was called (and its signal has not aborted). */
  get running(): boolean {
    return this.signal !== undefined && !this.signal.aborted;
  }

  /** Resolves when every informer requested so far has synced. */
  async waitForSync(signal?: AbortSignal): Promise<void> {
    const all = Promise.all([...this.entries.values()].map((e) => e.informer.waitForSync()));
    if (!signal) {
      await all;
      return;
    }
    // One abort listener for all of them (a manager waits on dozens of informers).
    if (signal.aborted) throw signal.reason ?? new Error("aborted");
    all.catch(() => {});
    let onAbort = (): void => {};
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(signal.reason ?? new Error("aborted"));
      signal.addEventListener("abort", onAbort, { once: true });
    });
    try {
      await Promise.race([all, aborted]);
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
  }

  /** Whether every informer requested so far has synced. */
  hasSynced(): boolean {
    for (const e of this.entries.values()) if (!e.informer.hasSynced()) return false;
    return true;
  }

  /**
   * Reads an object from the kind's informer (waiting for its first sync). Throws
   * an ApiError NotFound, like the client, when the cache does not hold it.
   */
  async get<T extends KubeObject = KubeObject>(
    type: Kind<T>,
    name: string,
    namespace?: string,
    scope?: InformerScope,
  ): Promise<T> {
    const informer = this.syncedNow<T>(type, scope) ?? (await this.synced<T>(type, scope));
    const obj = informer.get(name, namespace);
    if (!obj) throw notFound(this.client, type, name);
    return obj;
  }

  /** Reads an object without waiting: undefined when not held (or not synced yet). */
  peek<T extends KubeObject = KubeObject>(
    type: Kind<T>,
    name: string,
    namespace?: string,
    scope?: InformerScope,
  ): T | undefined {
    return this.informerFor<T>(type, scope).get(name, namespace);
  }

  /**
   * Lists from the kind's informer in `opts.scope` (the kind's default scope
   * when unset), waiting for its first sync, filtered by namespace, label
   * selector and a field selector on metadata.name/namespace. `metadataOnly`
   * reads that scope's metadata-only informer.
   */
  async list<T extends KubeObject = KubeObject>(
    type: Kind<T>,
    opts: CacheListOptions = {},
  ): Promise<KubeList<T>> {
    const scope = opts.metadataOnly
      ? { ...(opts.scope ?? this.opts.defaultScopes?.[typeKey(type)] ?? {}), metadataOnly: true }
      : opts.scope;
    const informer =
      this.syncedNow<T>(type, scope) ?? (await this.synced<T>(type, scope, opts.signal));
    const matchFields = fieldMatcher(opts.fieldSelector);
    let items = informer.list({ namespace: opts.namespace });
    if (opts.labelSelector) {
      const sel = parseLabelSelector(opts.labelSelector);
      items = items.filter((o) => matchesLabels(sel, o.metadata.labels));
    }
    if (opts.fieldSelector) items = items.filter(matchFields);
    return {
      apiVersion: type.apiVersion,
      kind: `${type.kind}List`,
      metadata: { resourceVersion: informer.resourceVersion },
      items,
    };
  }

  /**
   * Resolves true once the kind's informer reflects `rv` for `key` (see
   * Informer.waitForResourceVersion); false on timeout. For read-your-own-writes.
   */
  waitForResourceVersion(
    type: TypeRef,
    key: { name: string; namespace?: string | undefined },
    rv: string,
    timeoutMs: number,
    scope?: InformerScope,
  ): Promise<boolean> {
    return this.informerFor(type, scope).waitForResourceVersion(key, rv, timeoutMs);
  }

  /** The health of every informer. */
  health(): CachedInformerHealth[] {
    return [...this.entries.values()].map((e) => ({
      apiVersion: e.type.apiVersion,
      kind: e.type.kind,
      scope: e.scope,
      ...e.informer.health(),
    }));
  }

  /** The informer, if the cache runs and it has synced (a read need not wait). */
  private syncedNow<T extends KubeObject>(
    type: TypeRef,
    scope: InformerScope | undefined,
  ): Informer<T> | undefined {
    if (!this.signal) return undefined;
    const informer = this.informerFor<T>(type, scope);
    return informer.hasSynced() ? informer : undefined;
  }

  private async synced<T extends KubeObject>(
    type: TypeRef,
    scope: InformerScope | undefined,
    signal?: AbortSignal,
  ): Promise<Informer<T>> {
    if (!this.signal) {
      throw new CacheNotStartedError(`the cache is not started; cannot read ${type.kind}`);
    }
    const informer = this.informerFor<T>(type, scope);
    await informer.waitForSync(signal ? AbortSignal.any([signal, this.signal]) : this.signal);
    return informer;
  }
}

function notFound(client: Client, type: TypeRef, name: string): ApiError {
  const info = client.cachedResource(type);
  const e = errors.notFound({
    group: info?.group,
    resource: info?.plural ?? type.kind.toLowerCase(),
    name,
  });
  return new ApiError(e.status, `cache get ${type.kind}`);
}
