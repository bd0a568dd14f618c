/**
 * GET on a collection: a list, with Kubernetes' resourceVersion semantics.
 *
 * - resourceVersion unset: the most recent state, read from storage;
 * - "0": any state, served from the watch cache (limit ignored, as Kubernetes does);
 * - N with resourceVersionMatch=Exact, or with a limit and no match: exactly at N
 *   (410 once compacted);
 * - N otherwise: not older than N (the most recent state; 504 when N is in the future).
 *
 * Pages (limit + continue) are all read at the first page's revision. A continue
 * token whose revision was compacted gets 410 with a fresh token that continues at
 * the latest revision from the same key.
 */

import type { KubeObject, ListMeta } from "@setpoint/api";
import { errors, isEverything } from "@setpoint/api";
import { storageVersion } from "../../registry/types.ts";
import { CompactedError, FutureRevisionError, InvalidKeyError } from "../../storage/errors.ts";
import type { KeyValue } from "../../storage/store.ts";
import {
  type ContinueToken,
  decodeContinueToken,
  encodeContinueToken,
} from "../store/continue-token.ts";
import { collectionPrefix } from "../store/keys.ts";
import {
  LIST_EXPIRED_MESSAGE,
  statusFromStorage,
  tooLargeResourceVersion,
} from "../store/store-errors.ts";
import type { CacheEntry } from "../watchcache/watch-cache.ts";
import { decodeStored, parseResourceVersion, storedWithRevision } from "../wire/codec.ts";
import { type Renderer, rawListJson, renderList, rendersRaw } from "../wire/render.ts";
import { writeObject, writeRaw } from "../wire/response.ts";
import type { RequestScope } from "./context.ts";
import { entryMatches, type ObjectFilter, objectMatches } from "./filter.ts";
import type { ListOptions } from "./list-options.ts";

/** Kubernetes' message for a continue token too old to continue consistently. */
export const INCONSISTENT_CONTINUE_MESSAGE =
  "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/** The filter of a list or watch request. */
export function filterFor(scope: RequestScope, opts: ListOptions): ObjectFilter {
  const f: ObjectFilter = { labels: opts.labelSelector, fields: opts.fieldSelector };
  if (scope.def.namespaced && scope.namespace !== undefined) f.namespace = scope.namespace;
  return f;
}

/** One page of a list read from storage. */
export interface StorageListResult {
  /** The objects; empty when read `raw` (then in `json`). */
  items: KubeObject[];
  /** Read `raw`: each object's JSON as a response sends it, resourceVersion set. */
  json?: string[];
  revision: number;
  continue?: string;
  remainingItemCount?: number;
}

function rel(prefix: string, key: string): string {
  return key.slice(prefix.length);
}

/**
 * Whether a list read from storage can send objects as stored (with their
 * resourceVersion set in the text, see storedWithRevision): JSON of the storage
 * version, nothing added on read, every object of the collection selected.
 */
function listsRaw(scope: RequestScope, filter: ObjectFilter): boolean {
  return (
    rendersRaw(scope.renderer, storageVersion(scope.def).name) &&
    scope.def.strategy.onRead === undefined &&
    isEverything(filter.labels) &&
    filter.fields.requirements.length === 0
  );
}

/**
 * Reads a list (or one page of it) from storage; with `raw` (see listsRaw), as the
 * objects' JSON instead of objects.
 */
export async function listFromStorage(
  scope: RequestScope,
  opts: ListOptions,
  filter: ObjectFilter,
  raw = false,
): Promise<StorageListResult> {
  const { store, limits } = scope.ctx;
  const prefix = collectionPrefix(scope.def, scope.namespace);
  const limit = opts.limit;
  let token: ContinueToken | undefined;
  let storeToken: string | undefined;
  let revision: number | undefined;
  let after: string | undefined;
  if (opts.continue) {
    token = decodeContinueToken(opts.continue);
    if (token.store !== undefined) storeToken = token.store;
    else {
      after = prefix + token.start;
      if (token.rv > 0) revision = token.rv;
    }
  } else if (opts.resourceVersion !== "") {
    const n = parseResourceVersion(opts.resourceVersion) ?? 0;
    const exact =
      opts.resourceVersionMatch === "Exact" ||
      (opts.resourceVersionMatch === undefined && limit > 0 && n > 0);
    if (exact) revision = n;
    else if (n > 0) {
      const current = await store.currentRevision();
      if (n > current) throw tooLargeResourceVersion(n, current);
    }
  }

  const items: KubeObject[] = [];
  const json: string[] = [];
  let count = 0;
  let pageRevision = 0;
  let lastKey: string | undefined;
  let next: ContinueToken | undefined;
  let remaining: number | undefined;
  try {
    for (;;) {
      const want = limit > 0 ? limit - count : limits.storagePageSize;
      const pageSize = after !== undefined ? limits.storagePageSize : want;
      const page = await store.list(prefix, {
        limit: pageSize,
        ...(storeToken !== undefined
          ? { continue: storeToken }
          : revision !== undefined
            ? { revision }
            : {}),
      });
      pageRevision = page.revision;
      revision = page.revision;
      let consumed = 0;
      let full = false;
      for (const kv of page.items as KeyValue[]) {
        if (after !== undefined && kv.key <= after) {
          consumed++;
          continue;
        }
        if (limit > 0 && count >= limit) {
          full = true;
          break;
        }
        consumed++;
        lastKey = kv.key;
        if (raw) {
          json.push(
            storedWithRevision(kv.value, kv.modRevision) ??
              JSON.stringify(decodeStored(kv, scope.def)),
          );
          count++;
          continue;
        }
        const obj = decodeStored(kv, scope.def);
        if (objectMatches(filter, scope.def, obj)) {
          items.push(obj);
          count++;
        }
      }
      const passedStart = after !== undefined && page.items.some((kv) => kv.key > after!);
      if (full) {
        // Stopped inside a storage page: the next page starts after the last key returned.
        next = { rv: pageRevision, start: rel(prefix, lastKey!) };
        if (page.remainingItemCount !== undefined) {
          remaining = page.remainingItemCount + (page.items.length - consumed);
        }
        break;
      }
      if (!page.continue) break;
      storeToken = page.continue;
      if (passedStart) after = undefined;
      if (limit > 0 && count >= limit) {
        if (after === undefined) {
          const last = page.items[page.items.length - 1].key;
          next = { rv: pageRevision, start: rel(prefix, last), store: page.continue };
          remaining = page.remainingItemCount;
        } else {
          next = { rv: pageRevision, start: rel(prefix, lastKey ?? after) };
        }
        break;
      }
    }
  } catch (err) {
    if (err instanceof CompactedError) {
      if (token) {
        const e = errors.expired(
          INCONSISTENT_CONTINUE_MESSAGE,
          encodeContinueToken({ rv: -1, start: token.start }),
        );
        throw e;
      }
      throw errors.expired(LIST_EXPIRED_MESSAGE);
    }
    if (err instanceof FutureRevisionError) {
      throw tooLargeResourceVersion(err.requestedRevision, err.currentRevision);
    }
    if (err instanceof InvalidKeyError && token) {
      throw errors.badRequest(`invalid continue token: ${err.message}`);
    }
    throw statusFromStorage(err, scope.subject);
  }
  const out: StorageListResult = {
    items,
    revision: token && token.rv > 0 ? token.rv : pageRevision,
  };
  if (raw) out.json = json;
  if (next) {
    out.continue = encodeContinueToken(next);
    if (!opts.filtered && remaining !== undefined) out.remainingItemCount = remaining;
  }
  return out;
}

function writeList(scope: RequestScope, r: Renderer, items: KubeObject[], meta: ListMeta): void {
  writeObject(scope.res, 200, renderList(r, items, meta), {
    mediaType: r.output.mediaType,
    contentType: r.output.contentType,
    warnings: scope.warnings,
  });
}

/**
 * The list envelope around the entries' JSON, assembled from their bytes in one
 * buffer (no string per item), sent as it is.
 */
function rawEntriesList(r: Renderer, entries: readonly CacheEntry[], meta: ListMeta): Buffer {
  // The envelope of an empty list ends with `[]}`: the items go before its `]}`.
  const empty = rawListJson(r, [], meta);
  const head = empty.slice(0, -2);
  let bytes = Buffer.byteLength(head) + 2 + Math.max(0, entries.length - 1);
  for (const e of entries) bytes += e.byteLength;
  const out = Buffer.allocUnsafe(bytes);
  let at = out.write(head, 0, "utf8");
  for (let i = 0; i < entries.length; i++) {
    if (i > 0) out[at++] = 0x2c; // ,
    at += entries[i].copyTo(out, at);
  }
  out.write("]}", at, "latin1");
  return out;
}

/** Serves a list from the watch cache (resourceVersion "0"). */
async function listFromCache(
  scope: RequestScope,
  r: Renderer,
  filter: ObjectFilter,
): Promise<void> {
  const cache = scope.ctx.caches.forDef(scope.def);
  await cache.ready();
  const prefix = collectionPrefix(scope.def, scope.namespace);
  const entries = cache.entries(prefix).filter((e) => entryMatches(filter, e));
  const meta: ListMeta = { resourceVersion: String(cache.rev) };
  if (rendersRaw(r, storageVersion(scope.def).name)) {
    writeRaw(
      scope.res,
      200,
      r.output.contentType,
      rawEntriesList(r, entries, meta),
      scope.warnings,
    );
    return;
  }
  writeList(
    scope,
    r,
    entries.map((e) => JSON.parse(e.json) as KubeObject),
    meta,
  );
}

/** Handles a list request. */
export async function listResource(scope: RequestScope, opts: ListOptions): Promise<void> {
  const r = scope.renderer;
  const filter = filterFor(scope, opts);
  if (opts.resourceVersion === "0" && !opts.continue) {
    await listFromCache(scope, r, filter);
    return;
  }
  const page = await listFromStorage(scope, opts, filter, listsRaw(scope, filter));
  const meta: ListMeta = { resourceVersion: String(page.revision) };
  if (page.continue) meta.continue = page.continue;
  if (page.remainingItemCount !== undefined) meta.remainingItemCount = page.remainingItemCount;
  if (page.json) {
    writeRaw(scope.res, 200, r.output.contentType, rawListJson(r, page.json, meta), scope.warnings);
    return;
  }
  writeList(scope, r, page.items, meta);
}
