/**
 * Writing a protobuf list that may be large. Its body (the magic, a
 * runtime.Unknown envelope whose raw bytes are the `<Kind>List` message, whose
 * items are length-delimited messages) carries lengths before the items, so the
 * list is written in two passes: the first measures every item's encoding
 * without keeping it (only while the items so far fit in a chunk are their bytes
 * kept), which gives the lengths of the envelope and the list; a list that fits in
 * a chunk is then sent whole (with its Content-Length, as before), a larger one
 * is streamed: the envelope's head, then the items encoded again a chunk at a
 * time, through the same ResponseStream as JSON and YAML lists (backpressure, the
 * global output budget, turns shared among streams), then the envelope's tail.
 * The bytes are those of the whole encoding (wire/protobuf: protobufListEncoder).
 * The second pass must find the very items the first measured: a list from the
 * watch cache is a snapshot of entries, one from storage is read again at the
 * same revision (list.ts); were they to differ, the response is cut, so the
 * client sees it incomplete rather than wrong.
 */
import type { ListMeta } from "@setpoint/api";
import type { CacheEntry } from "../watchcache/watch-cache.ts";
import {
  PROTOBUF_CONTENT_TYPE,
  type ProtobufListEncoder,
  protobufListEncoder,
} from "../wire/protobuf/index.ts";
import { listElements, type Renderer, renderList } from "../wire/render.ts";
import { writeRaw } from "../wire/response.ts";
import type { RequestScope } from "./context.ts";
import { beginList, endList, objectsOf, takeEntries } from "./list-stream.ts";

/** Whether lists in this representation are protobuf (Tables never are). */
export function isProtobufList(r: Renderer): boolean {
  return r.output.mediaType === PROTOBUF_CONTENT_TYPE && r.output.kind !== "table";
}

/** How lists of `r` are written in parts; undefined when they have no protobuf encoding. */
export function listEncoder(r: Renderer): ProtobufListEncoder | undefined {
  if (!isProtobufList(r)) return undefined;
  const { apiVersion, kind } = renderList(r, [], {}) as { apiVersion: string; kind: string };
  return protobufListEncoder(apiVersion, kind);
}

/**
 * The first pass over a list's items: their bytes and count, and their encoding
 * while the items so far fit in `keep` bytes (`kept`, null once they do not).
 */
export class MeasuredItems {
  bytes = 0;
  count = 0;
  kept: Buffer[] | null = [];

  constructor(
    readonly encoder: ProtobufListEncoder,
    readonly keep: number,
  ) {}

  /** Adds the items of `elements` (a list's elements, as listElements renders them). */
  add(elements: readonly unknown[]): void {
    for (const e of elements) {
      this.count++;
      if (this.kept === null) {
        this.bytes += this.encoder.itemSize(e);
        continue;
      }
      const b = this.encoder.item(e);
      this.bytes += b.length;
      if (this.bytes <= this.keep) this.kept.push(b);
      else this.kept = null;
    }
  }

  /** The average bytes of an item (1 when there are none). */
  get average(): number {
    return Math.max(1, this.bytes / Math.max(1, this.count));
  }
}

/** The whole list, when every item was kept (see MeasuredItems); undefined otherwise. */
function wholeBody(r: Renderer, meta: ListMeta, measured: MeasuredItems): Buffer | undefined {
  if (measured.kept === null) return undefined;
  const { encoder } = measured;
  const head = encoder.head(renderList(r, [], meta) as object, measured.bytes);
  return Buffer.concat([head, ...measured.kept, encoder.tail]);
}

/**
 * Writes a measured list: whole when every item was kept, otherwise streamed,
 * `next` giving the elements (listElements) of about `room` bytes of items at a
 * time, in the order measured, null after the last.
 */
export async function writeMeasuredList(
  scope: RequestScope,
  r: Renderer,
  meta: ListMeta,
  measured: MeasuredItems,
  next: (room: number) => unknown[] | null | Promise<unknown[] | null>,
): Promise<void> {
  const whole = wholeBody(r, meta, measured);
  if (whole !== undefined) {
    writeRaw(scope.res, 200, r.output.contentType, whole, scope.warnings);
    return;
  }
  const { encoder, bytes, count } = measured;
  const stream = beginList(scope, r);
  let head: Buffer | null = encoder.head(renderList(r, [], meta) as object, bytes);
  let written = 0;
  let items = 0;
  let ended = false;
  let complete = false;
  try {
    complete = await stream.pump(async (room) => {
      if (ended) return null;
      const parts: Buffer[] = [];
      if (head !== null) {
        parts.push(head);
        head = null;
      }
      for (;;) {
        const elements = await next(room);
        if (elements === null) {
          if (written !== bytes || items !== count) {
            throw new Error(
              `a protobuf list measured as ${count} items of ${bytes} bytes was ${items} of ${written} when encoded`,
            );
          }
          parts.push(encoder.tail);
          ended = true;
          break;
        }
        if (elements.length === 0) continue;
        const b = encoder.items(elements);
        written += b.length;
        items += elements.length;
        if (written > bytes) {
          throw new Error(`a protobuf list measured as ${bytes} bytes of items had more`);
        }
        parts.push(b);
        break;
      }
      return parts.length === 1 ? parts[0] : Buffer.concat(parts);
    });
  } catch (err) {
    scope.ctx.logger?.warn(
      { err },
      "a streamed protobuf list failed part way; its response is cut",
    );
  }
  endList(scope, stream, complete);
}

/**
 * Writes a list of watch cache entries (already selected, in order) in protobuf:
 * measured a batch at a time (other requests get their turns between batches),
 * then whole or streamed (see writeMeasuredList).
 */
export async function writeCachedProtobufList(
  scope: RequestScope,
  r: Renderer,
  encoder: ProtobufListEncoder,
  entries: readonly CacheEntry[],
  meta: ListMeta,
): Promise<void> {
  const chunk = scope.ctx.limits.streamChunkBytes;
  const measured = new MeasuredItems(encoder, chunk);
  let json = 0;
  for (let at = 0; at < entries.length; ) {
    const to = takeEntries(entries, at, chunk);
    for (let i = at; i < to; i++) json += entries[i].byteLength;
    measured.add(listElements(r, objectsOf(entries.slice(at, to))));
    at = to;
    if (to < entries.length) {
      const turn = scope.ctx.output.slicer.take();
      if (turn) await turn;
    }
  }
  // Entries are JSON: about this many of its bytes make a byte of protobuf.
  const ratio = json / Math.max(1, measured.bytes);
  let at = 0;
  await writeMeasuredList(scope, r, meta, measured, (room) => {
    if (at >= entries.length) return null;
    const to = takeEntries(entries, at, room * ratio);
    const batch = entries.slice(at, to);
    at = to;
    return listElements(r, objectsOf(batch));
  });
}
