/**
 * GET on a collection: a list, with Kubernetes' resourceVersion semantics.
 * resourceVersion "0" is any state, served from the watch cache (limit ignored,
 * as Kubernetes does); every other list is read from storage by the resource
 * store (src/apiserver/store/list-storage.ts: unset, Exact, NotOlderThan, pages).
 */

import type { KubeObject, ListMeta } from "@setpoint/api";
import { storageVersion } from "../../registry/types.ts";
import { type CacheEntry, listsRaw, type ObjectFilter } from "../store/index.ts";
import { type Renderer, rawListJson, renderList, rendersRaw } from "../wire/render.ts";
import { writeObject, writeRaw } from "../wire/response.ts";
import type { RequestScope } from "./context.ts";
import type { ListOptions } from "./list-options.ts";

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
  const { entries, revision } = await scope.store.listCached(filter);
  const meta: ListMeta = { resourceVersion: String(revision) };
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
  const page = await scope.store.list(opts, filter, sendsRaw(scope, filter));
  const meta: ListMeta = { resourceVersion: String(page.revision) };
  if (page.continue) meta.continue = page.continue;
  if (page.remainingItemCount !== undefined) meta.remainingItemCount = page.remainingItemCount;
  if (page.json) {
    writeRaw(scope.res, 200, r.output.contentType, rawListJson(r, page.json, meta), scope.warnings);
    return;
  }
  writeList(scope, r, page.items, meta);
}
