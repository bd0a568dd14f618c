/**
 * GET on a collection: a list, with Kubernetes' resourceVersion semantics.
 * resourceVersion "0" is any state, served from the watch cache (limit ignored,
 * as Kubernetes does); every other list is read from storage by the resource
 * store (src/apiserver/store/list-storage.ts: unset, Exact, NotOlderThan, pages).
 */

import type { KubeObject, ListMeta } from "@setpoint/api";
import { storageVersion } from "../../registry/types.ts";
import { listsRaw, type ObjectFilter } from "../store/index.ts";
import { type Renderer, rawListJson, renderList, rendersRaw } from "../wire/render.ts";
import { writeObject, writeRaw } from "../wire/response.ts";
import type { RequestScope } from "./context.ts";
import type { ListOptions } from "./list-options.ts";
import { streamsList, writeCachedList, writePagedList } from "./list-stream.ts";

/** The filter of a list or watch request. */
export function filterFor(scope: RequestScope, opts: ListOptions): ObjectFilter {
  const f: ObjectFilter = { labels: opts.labelSelector, fields: opts.fieldSelector };
  if (scope.def.namespaced && scope.namespace !== undefined) f.namespace = scope.namespace;
  return f;
}

/**
 * Whether a list read from storage can send objects as stored: JSON of the
 * storage version, and the store's conditions (see listsRaw).
 */
function sendsRaw(scope: RequestScope, filter: ObjectFilter): boolean {
  return (
    rendersRaw(scope.renderer, storageVersion(scope.def).name) && listsRaw(scope.store, filter)
  );
}

function writeList(scope: RequestScope, r: Renderer, items: KubeObject[], meta: ListMeta): void {
  writeObject(scope.res, 200, renderList(r, items, meta), {
    mediaType: r.output.mediaType,
    contentType: r.output.contentType,
    warnings: scope.warnings,
  });
}

/** Serves a list from the watch cache (resourceVersion "0"). */
async function listFromCache(
  scope: RequestScope,
  r: Renderer,
  filter: ObjectFilter,
): Promise<void> {
  const { entries, revision } = await scope.store.listCached(filter);
  const meta: ListMeta = { resourceVersion: String(revision) };
  if (streamsList(r)) {
    await writeCachedList(scope, r, entries, meta);
    return;
  }
  writeList(
    scope,
    r,
    entries.map((e) => JSON.parse(e.json) as KubeObject),
    meta,
  );
}

/**
 * Serves an unpaginated list from storage a page at a time (see writePagedList),
 * every page read at the first one's revision.
 */
async function listPagesFromStorage(
  scope: RequestScope,
  r: Renderer,
  opts: ListOptions,
  filter: ObjectFilter,
  raw: boolean,
): Promise<void> {
  const { storagePageSize, streamChunkBytes } = scope.ctx.limits;
  // The first page about a chunk, by the size of the objects the watch cache holds.
  const cache = scope.ctx.caches.forDef(scope.def);
  const average = cache.isReady ? cache.averageEntryBytes : 0;
  const limit =
    average > 0
      ? Math.min(storagePageSize, Math.max(1, Math.ceil(streamChunkBytes / average)))
      : storagePageSize;
  // A page limit would make resourceVersion=N exact: the list asked for "not older than N".
  const first: ListOptions = { ...opts, limit };
  if (opts.resourceVersion !== "" && opts.resourceVersionMatch === undefined) {
    first.resourceVersionMatch = "NotOlderThan";
  }
  // Paged through to the end: nobody needs the count of what remains after each page.
  const page = await scope.store.list(first, filter, raw, false);
  const meta: ListMeta = { resourceVersion: String(page.revision) };
  const { resourceVersionMatch: _match, ...rest } = opts;
  await writePagedList(scope, r, meta, page, (token, limit) =>
    scope.store.list({ ...rest, limit, continue: token, resourceVersion: "" }, filter, raw, false),
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
  const raw = sendsRaw(scope, filter);
  if (opts.limit === 0 && !opts.continue && streamsList(r)) {
    await listPagesFromStorage(scope, r, opts, filter, raw);
    return;
  }
  const page = await scope.store.list(opts, filter, raw);
  const meta: ListMeta = { resourceVersion: String(page.revision) };
  if (page.continue) meta.continue = page.continue;
  if (page.remainingItemCount !== undefined) meta.remainingItemCount = page.remainingItemCount;
  if (page.json) {
    writeRaw(scope.res, 200, r.output.contentType, rawListJson(r, page.json, meta), scope.warnings);
    return;
  }
  writeList(scope, r, page.items, meta);
}
