/**
 * GET on a collection: a list, with Kubernetes' resourceVersion semantics.
 * resourceVersion "0" is any state, served from the watch cache (limit ignored,
 * as Kubernetes does); every other list is read from storage by the resource
 * store (src/apiserver/store/list-storage.ts: unset, Exact, NotOlderThan, pages).
 */

import type { KubeObject, ListMeta } from "@setpoint/api";
import { storageVersion } from "../../registry/types.ts";
import {
  decodeContinueToken,
  listsRaw,
  type ObjectFilter,
  type StorageListResult,
} from "../store/index.ts";
import { listBatchBytes } from "../wire/list-text.ts";
import type { ProtobufListEncoder } from "../wire/protobuf/index.ts";
import {
  listElements,
  type Renderer,
  rawListJson,
  renderList,
  rendersRaw,
} from "../wire/render.ts";
import { writeObject, writeRaw } from "../wire/response.ts";
import type { RequestScope } from "./context.ts";
import type { ListOptions } from "./list-options.ts";
import {
  listEncoder,
  MeasuredItems,
  writeCachedProtobufList,
  writeMeasuredList,
} from "./list-protobuf.ts";
import { firstPageLimit, streamsList, writeCachedList, writePagedList } from "./list-stream.ts";

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
  const encoder = listEncoder(r);
  if (encoder) {
    await writeCachedProtobufList(scope, r, encoder, entries, meta);
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
  const limit = firstPageLimit(scope);
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

/**
 * Whether a list read from storage can be read twice alike (streamed pages, see
 * listPageFromStorage): a token without the store's own position (after a 410) is
 * continued by a scan whose page ends depend on how it is read: such a page is
 * read whole.
 */
function readsAgain(opts: ListOptions): boolean {
  return !opts.continue || decodeContinueToken(opts.continue).store !== undefined;
}

/** Whether a page of a paginated list can be streamed (see listPageFromStorage). */
function streamsPage(r: Renderer, opts: ListOptions): boolean {
  return streamsList(r) && readsAgain(opts);
}

/**
 * Serves a page of a paginated list (`limit`, or `continue`) from storage in
 * memory of about a chunk, whatever its limit. The page is read once to the end,
 * a storage page at a time, keeping objects only while they fit in a chunk: that
 * read gives the list's metadata (its revision, continue token and remaining
 * count, exactly as a whole read does), which come before the items. A page that
 * fits is sent whole, as before; a larger one is read again, at the same revision
 * and from the same start, a chunk at a time, and streamed (see writePagedList),
 * ending after as many objects as the first read counted.
 */
async function listPageFromStorage(
  scope: RequestScope,
  r: Renderer,
  opts: ListOptions,
  filter: ObjectFilter,
  raw: boolean,
): Promise<void> {
  // What the read found: objects kept while they fit in a chunk (`fits`), and counted.
  const batch = listBatchBytes(r, scope.ctx.limits.streamChunkBytes);
  const found = { items: [] as KubeObject[], json: [] as string[], bytes: 0, count: 0, fits: true };
  const page = await scope.store.list(opts, filter, raw, true, (items, json, bytes) => {
    found.count += items.length + json.length;
    found.bytes += bytes;
    if (found.fits && found.bytes > batch) {
      found.fits = false;
      found.items = [];
      found.json = [];
    }
    if (found.fits) {
      for (const o of items) found.items.push(o);
      for (const j of json) found.json.push(j);
    }
    // Storage reads take no turn of the event loop: other requests get theirs
    // between storage pages, as streams share them (see streaming/turn-slicer.ts).
    return scope.ctx.output.slicer.take();
  });
  const meta = pageMeta(page);
  if (found.fits) {
    if (raw) {
      writeRaw(
        scope.res,
        200,
        r.output.contentType,
        rawListJson(r, found.json, meta),
        scope.warnings,
      );
    } else writeList(scope, r, found.items, meta);
    return;
  }
  // Read again at the revision the page was read at (a continue token carries it).
  const { resourceVersionMatch: _match, ...rest } = opts;
  const again: ListOptions = opts.continue
    ? { ...opts }
    : { ...opts, resourceVersion: String(page.revision), resourceVersionMatch: "Exact" };
  const average = Math.max(1, found.bytes / Math.max(1, found.count));
  again.limit = Math.min(
    found.count,
    scope.ctx.limits.storagePageSize,
    Math.max(1, Math.ceil(batch / average)),
  );
  const first = await scope.store.list(again, filter, raw, false);
  await writePagedList(
    scope,
    r,
    meta,
    first,
    (token, limit) =>
      scope.store.list(
        { ...rest, limit, continue: token, resourceVersion: "" },
        filter,
        raw,
        false,
      ),
    found.count,
  );
}

/**
 * Serves a protobuf list from storage, unpaginated or a page of a paginated one,
 * in memory of about a chunk: as listPageFromStorage, read once to the end a
 * storage page at a time, measuring every item's encoding (see list-protobuf.ts:
 * the envelope's lengths come before the items) and keeping it while the items fit
 * in a chunk; a list that fits is sent whole, a larger one is read again at the
 * same revision from the same start, a chunk at a time, and streamed. An
 * unpaginated list's first read is at the most recent revision (or not older than
 * the one asked for), its second exactly at the first's.
 */
async function listProtobufFromStorage(
  scope: RequestScope,
  r: Renderer,
  encoder: ProtobufListEncoder,
  opts: ListOptions,
  filter: ObjectFilter,
): Promise<void> {
  const chunk = scope.ctx.limits.streamChunkBytes;
  const measured = new MeasuredItems(encoder, chunk);
  const paginated = opts.limit > 0 || opts.continue !== undefined;
  const page = await scope.store.list(opts, filter, false, paginated, (items) => {
    measured.add(listElements(r, items));
    // Other requests get their turns between storage pages (see listPageFromStorage).
    return scope.ctx.output.slicer.take();
  });
  const meta = pageMeta(page);
  const { resourceVersionMatch: _match, ...rest } = opts;
  const again: ListOptions = opts.continue
    ? { ...opts }
    : { ...opts, resourceVersion: String(page.revision), resourceVersionMatch: "Exact" };
  const limitFor = (room: number, left: number) =>
    Math.min(left, scope.ctx.limits.storagePageSize, Math.ceil(room / measured.average));
  let pending: KubeObject[] | null = null;
  let token: string | undefined;
  let sent = 0;
  if (measured.kept === null) {
    // Streamed: its first page is read again before anything is sent, so that its
    // errors (a revision compacted meanwhile) are answered as statuses.
    const first = await scope.store.list(
      { ...again, limit: limitFor(chunk, measured.count) },
      filter,
      false,
      false,
    );
    pending = first.items;
    token = first.continue;
    sent = first.items.length;
  }
  await writeMeasuredList(scope, r, meta, measured, async (room) => {
    if (pending !== null) {
      const items = pending;
      pending = null;
      return listElements(r, items);
    }
    const left = measured.count - sent;
    if (left <= 0 || token === undefined) return null;
    const read = { ...rest, limit: limitFor(room, left), continue: token, resourceVersion: "" };
    const next = await scope.store.list(read, filter, false, false);
    token = next.continue;
    sent += next.items.length;
    return listElements(r, next.items);
  });
}

/** The metadata of a list read from storage. */
function pageMeta(page: StorageListResult): ListMeta {
  const meta: ListMeta = { resourceVersion: String(page.revision) };
  if (page.continue) meta.continue = page.continue;
  if (page.remainingItemCount !== undefined) meta.remainingItemCount = page.remainingItemCount;
  return meta;
}

/** Handles a list request. */
export async function listResource(scope: RequestScope, opts: ListOptions): Promise<void> {
  const r = scope.renderer;
  const filter = filterFor(scope, opts);
  if (opts.resourceVersion === "0" && !opts.continue) {
    await listFromCache(scope, r, filter);
    return;
  }
  const encoder = listEncoder(r);
  if (encoder && readsAgain(opts)) {
    await listProtobufFromStorage(scope, r, encoder, opts, filter);
    return;
  }
  const raw = sendsRaw(scope, filter);
  if (opts.limit === 0 && !opts.continue && streamsList(r)) {
    await listPagesFromStorage(scope, r, opts, filter, raw);
    return;
  }
  if (streamsPage(r, opts)) {
    await listPageFromStorage(scope, r, opts, filter, raw);
    return;
  }
  const page = await scope.store.list(opts, filter, raw);
  const meta = pageMeta(page);
  if (page.json) {
    writeRaw(scope.res, 200, r.output.contentType, rawListJson(r, page.json, meta), scope.warnings);
    return;
  }
  writeList(scope, r, page.items, meta);
}
