/**
 * Writing a list response that may be large: a body that fits in one chunk is
 * sent whole (with its Content-Length, as before); a larger one is streamed
 * (chunked transfer encoding) through streaming/, a chunk at a time, with
 * backpressure and within the global output budget, so that a list of any size
 * costs the server about one chunk of memory while it is sent, and the event
 * loop serves other requests between chunks.
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
import { listElementsJson, listEnvelopeJson, type Renderer, rendersRaw } from "../wire/render.ts";
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

/** Whether lists in this representation can be streamed (JSON; YAML is sent whole). */
export function streamsList(r: Renderer): boolean {
  return r.output.mediaType === "application/json";
}

function framing(head: string, tail: string): Framing {
  return { head, tail, separator: ",", before: "", after: "" };
}

/** Sends the headers of a streamed list (no Content-Length: chunked). */
function beginList(scope: RequestScope, r: Renderer): ResponseStream {
  const res = scope.res;
  res.statusCode = 200;
  res.setHeader("Content-Type", r.output.contentType);
  res.setHeader("Cache-Control", "no-cache, private");
  setWarnings(res, scope.warnings);
  return new ResponseStream(res, streamOptions(scope));
}

/** Ends a streamed list, or (when it failed part way) cuts its response, so the client sees it incomplete. */
function endList(scope: RequestScope, stream: ResponseStream, complete: boolean): void {
  if (complete && !stream.closed) scope.res.end();
  else if (!scope.res.destroyed) scope.res.destroy();
}

/** Parses entries' JSON back to objects (for representations other than the stored one). */
function objectsOf(entries: readonly CacheEntry[]): KubeObject[] {
  return entries.map((e) => JSON.parse(e.json) as KubeObject);
}

/** Entries from `at` whose JSON adds up to about `room` bytes (at least one). */
function takeEntries(entries: readonly CacheEntry[], at: number, room: number): number {
  let to = at;
  let bytes = 0;
  while (to < entries.length && (to === at || bytes < room)) bytes += entries[to++].byteLength;
  return to;
}

/** Writes a list of watch cache entries (already selected, in order), in JSON (see streamsList). */
export async function writeCachedList(
  scope: RequestScope,
  r: Renderer,
  entries: readonly CacheEntry[],
  meta: ListMeta,
): Promise<void> {
  const raw = rendersRaw(r, storageVersion(scope.def).name);
  let bytes = 0;
  for (const e of entries) bytes += e.byteLength;
  if (bytes <= scope.ctx.limits.streamChunkBytes) {
    if (raw) {
      const { head, tail } = listEnvelopeJson(r, meta);
      const body = bytesChunks(entries, framing(head, tail))(Number.POSITIVE_INFINITY)!;
      writeRaw(scope.res, 200, r.output.contentType, body, scope.warnings);
      return;
    }
    const { head, tail } = listEnvelopeJson(r, meta);
    const items = listElementsJson(r, objectsOf(entries));
    writeRaw(
      scope.res,
      200,
      r.output.contentType,
      `${head}${items.join(",")}${tail}`,
      scope.warnings,
    );
    return;
  }
  const { head, tail } = listEnvelopeJson(r, meta);
  const stream = beginList(scope, r);
  let complete: boolean;
  if (raw) {
    complete = await stream.pump(bytesChunks(entries, framing(head, tail)));
  } else {
    let at = 0;
    complete = await stream.pump(
      textChunks(
        (room) => {
          if (at >= entries.length) return null;
          const to = takeEntries(entries, at, room);
          const batch = entries.slice(at, to);
          at = to;
          return listElementsJson(r, objectsOf(batch));
        },
        framing(head, tail),
      ),
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
 * Writes an unpaginated list read from storage page by page, in JSON (see streamsList): `first` is its first
 * page (read before anything is sent, so its errors are answered as statuses);
 * `next` reads the page after a continue token, of about `limit` objects. Every
 * page is read at the first one's revision, so the list is one consistent state.
 */
export async function writePagedList(
  scope: RequestScope,
  r: Renderer,
  meta: ListMeta,
  first: ListPage,
  next: (token: string, limit: number) => Promise<ListPage>,
): Promise<void> {
  const elements = (page: ListPage) => page.json ?? listElementsJson(r, page.items);
  const firstJson = elements(first);
  if (first.continue === undefined) {
    // The whole list in one page: sent whole, as a list always was.
    const { head, tail } = listEnvelopeJson(r, meta);
    writeRaw(
      scope.res,
      200,
      r.output.contentType,
      `${head}${firstJson.join(",")}${tail}`,
      scope.warnings,
    );
    return;
  }
  let bytes = 0;
  for (const s of firstJson) bytes += s.length;
  const average = Math.max(1, bytes / Math.max(1, firstJson.length));
  const { head, tail } = listEnvelopeJson(r, meta);
  const stream = beginList(scope, r);
  let pending: string[] | null = firstJson;
  let token: string | undefined = first.continue;
  let complete = false;
  try {
    complete = await stream.pump(
      textChunks(
        async (room) => {
          if (pending !== null) {
            const out = pending;
            pending = null;
            return out;
          }
          if (token === undefined) return null;
          const limit = Math.min(
            scope.ctx.limits.storagePageSize,
            Math.max(1, Math.ceil(room / average)),
          );
          const page = await next(token, limit);
          token = page.continue;
          return elements(page);
        },
        framing(head, tail),
      ),
    );
  } catch (err) {
    scope.ctx.logger?.warn({ err }, "a streamed list failed part way; its response is cut");
  }
  endList(scope, stream, complete);
}
