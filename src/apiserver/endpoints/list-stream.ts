/**
 * Writing a list response that may be large: a body that fits in one chunk is
 * sent whole (with its Content-Length, as before); a larger one is streamed
 * (chunked transfer encoding) through streaming/, a chunk at a time, with
 * backpressure and within the global output budget, so that a list of any size
 * costs the server about one chunk of memory while it is sent, and the event
 * loop serves other requests between chunks. JSON and YAML lists are streamed
 * (wire/list-text.ts: the same bytes as the whole list); protobuf lists are
 * streamed by list-protobuf.ts, through the same ResponseStream.
 */
import type { KubeObject, ListMeta } from "@setpoint/api";
import { storageVersion } from "../../registry/types.ts";
import {
  bytesChunks,
  type Framing,
  ResponseStream,
  type StreamOptions,
  textChunks,
} from "../streaming/index.ts";
import type { CacheEntry } from "../watchcache/watch-cache.ts";
import { type ListText, listBatchBytes, listText, listTextMediaType } from "../wire/list-text.ts";
import { type Renderer, rendersRaw } from "../wire/render.ts";
import { setWarnings, writeRaw } from "../wire/response.ts";
import type { RequestScope } from "./context.ts";

/** How responses of this request are streamed (limits of its handler). */
export function streamOptions(scope: RequestScope, onStall?: () => void): StreamOptions {
  const { limits, output } = scope.ctx;
  return {
    budget: output,
    chunkBytes: limits.streamChunkBytes,
    stallMs: limits.streamStallMs,
    ...(onStall ? { onStall } : {}),
  };
}

/**
 * Objects in the first page of a list read from storage to be streamed: about a
 * chunk (see listBatchBytes), by the size of the objects the watch cache holds
 * (a storage page, for YAML a share of one, when it holds none yet).
 */
export function firstPageLimit(scope: RequestScope): number {
  const { storagePageSize, streamChunkBytes } = scope.ctx.limits;
  const cache = scope.ctx.caches.forDef(scope.def);
  const average = cache.isReady ? cache.averageEntryBytes : 0;
  const batch = listBatchBytes(scope.renderer, streamChunkBytes);
  return average > 0
    ? Math.min(storagePageSize, Math.max(1, Math.ceil(batch / average)))
    : Math.max(1, Math.floor((storagePageSize * batch) / streamChunkBytes));
}

/** Whether lists in this representation are streamed as text (JSON and YAML; protobuf: see list-protobuf.ts). */
export function streamsList(r: Renderer): boolean {
  return listTextMediaType(r);
}

function framing(t: ListText): Framing {
  return {
    head: t.head,
    tail: t.tail,
    separator: t.separator,
    before: "",
    after: "",
    empty: t.empty,
  };
}

/** The whole body of a list whose elements' text is `pieces`. */
function wholeList(t: ListText, pieces: readonly string[]): string {
  return pieces.length === 0 ? t.empty : `${t.head}${pieces.join(t.separator)}${t.tail}`;
}

/** Sends the headers of a streamed list (no Content-Length: chunked). */
export function beginList(scope: RequestScope, r: Renderer): ResponseStream {
  const res = scope.res;
  res.statusCode = 200;
  res.setHeader("Content-Type", r.output.contentType);
  res.setHeader("Cache-Control", "no-cache, private");
  setWarnings(res, scope.warnings);
  return new ResponseStream(res, streamOptions(scope));
}

/** Ends a streamed list, or (when it failed part way) cuts its response, so the client sees it incomplete. */
export function endList(scope: RequestScope, stream: ResponseStream, complete: boolean): void {
  if (complete && !stream.closed) scope.res.end();
  else if (!scope.res.destroyed) scope.res.destroy();
}

/** Parses entries' JSON back to objects (for representations other than the stored one). */
export function objectsOf(entries: readonly CacheEntry[]): KubeObject[] {
  return entries.map((e) => JSON.parse(e.json) as KubeObject);
}

/** Entries from `at` whose JSON adds up to about `room` bytes (at least one). */
export function takeEntries(entries: readonly CacheEntry[], at: number, room: number): number {
  let to = at;
  let bytes = 0;
  while (to < entries.length && (to === at || bytes < room)) bytes += entries[to++].byteLength;
  return to;
}

/** Writes a list of watch cache entries (already selected, in order), in JSON or YAML (see streamsList). */
export async function writeCachedList(
  scope: RequestScope,
  r: Renderer,
  entries: readonly CacheEntry[],
  meta: ListMeta,
): Promise<void> {
  const raw = rendersRaw(r, storageVersion(scope.def).name);
  const text = listText(r, meta);
  let bytes = 0;
  for (const e of entries) bytes += e.byteLength;
  if (bytes <= listBatchBytes(r, scope.ctx.limits.streamChunkBytes)) {
    if (raw && entries.length > 0) {
      const body = bytesChunks(entries, framing(text))(Number.POSITIVE_INFINITY)!;
      writeRaw(scope.res, 200, r.output.contentType, body, scope.warnings);
      return;
    }
    const body = wholeList(text, text.elements(objectsOf(entries)));
    writeRaw(scope.res, 200, r.output.contentType, body, scope.warnings);
    return;
  }
  const stream = beginList(scope, r);
  let complete: boolean;
  if (raw) {
    complete = await stream.pump(bytesChunks(entries, framing(text)));
  } else {
    let at = 0;
    complete = await stream.pump(
      textChunks((room) => {
        if (at >= entries.length) return null;
        const to = takeEntries(entries, at, listBatchBytes(r, room));
        const batch = entries.slice(at, to);
        at = to;
        return text.elements(objectsOf(batch));
      }, framing(text)),
    );
  }
  endList(scope, stream, complete);
}

/** One page of a list read from storage, as list.ts reads it. */
export interface ListPage {
  items: KubeObject[];
  /** Each object's JSON as sent, when read raw (then items is empty). */
  json?: string[];
  continue?: string;
}

/**
 * Writes a list read from storage page by page, in JSON or YAML (see
 * streamsList): `first` is its first page (read before anything is sent, so its
 * errors are answered as statuses); `next` reads the page after a continue token,
 * of at most `limit` objects. Every page is read at the first one's revision, so
 * the list is one consistent state. With `total`, the list is streamed and ends
 * after that many objects (a page of a paginated list, counted before: see
 * list.ts); without, it ends with the last page, and is sent whole when the first
 * page is the only one.
 */
export async function writePagedList(
  scope: RequestScope,
  r: Renderer,
  meta: ListMeta,
  first: ListPage,
  next: (token: string, limit: number) => Promise<ListPage>,
  total?: number,
): Promise<void> {
  const text = listText(r, meta);
  const elements = (page: ListPage) => page.json ?? text.elements(page.items);
  const sizeOf = (page: ListPage) => page.json?.length ?? page.items.length;
  const firstText = elements(first);
  if (first.continue === undefined && total === undefined) {
    // The whole list in one page: sent whole, as a list always was.
    writeRaw(scope.res, 200, r.output.contentType, wholeList(text, firstText), scope.warnings);
    return;
  }
  let bytes = 0;
  for (const s of firstText) bytes += s.length;
  const average = Math.max(1, bytes / Math.max(1, sizeOf(first)));
  const stream = beginList(scope, r);
  let pending: string[] | null = firstText;
  let sent = sizeOf(first);
  let token: string | undefined = first.continue;
  let complete = false;
  try {
    complete = await stream.pump(
      textChunks(async (room) => {
        if (pending !== null) {
          const out = pending;
          pending = null;
          return out;
        }
        const left = total === undefined ? Number.POSITIVE_INFINITY : total - sent;
        if (token === undefined || left <= 0) {
          if (total !== undefined && sent !== total) {
            throw new Error(`a list of ${total} objects ended after ${sent} when read again`);
          }
          return null;
        }
        const limit = Math.min(
          scope.ctx.limits.storagePageSize,
          Math.max(1, Math.ceil(listBatchBytes(r, room) / average)),
          left,
        );
        const page = await next(token, limit);
        token = page.continue;
        sent += sizeOf(page);
        return elements(page);
      }, framing(text)),
    );
  } catch (err) {
    scope.ctx.logger?.warn({ err }, "a streamed list failed part way; its response is cut");
  }
  endList(scope, stream, complete);
}
