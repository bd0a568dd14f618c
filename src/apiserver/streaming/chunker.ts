/**
 * Packing many small pieces into chunks of about a given size: the items of a
 * list (separated by commas, between the envelope's head and tail) or the lines
 * of a watch's initial events. Each function returns a producer for
 * ResponseStream.pump: called with the bytes to aim for, it returns the next
 * chunk, or null once everything (the tail included) was produced.
 */
import { setImmediate as nextTurn } from "node:timers/promises";

/** How pieces are framed in the output. */
export interface Framing {
  /** Before the first piece (a list envelope up to its `[`). */
  head: string;
  /** After the last piece (`]}` of a list). */
  tail: string;
  /** Between two pieces. */
  separator: string;
  /** Before each piece. */
  before: string;
  /** After each piece. */
  after: string;
  /** The whole output when there are no pieces at all (default: head and tail). */
  empty?: string;
}

/** A piece of JSON held as bytes (a watch cache entry). */
export interface BytesPiece {
  readonly byteLength: number;
  copyTo(target: Buffer, at: number): number;
}

/** Chunks of the bytes of `pieces`, framed, copied from where they are held. */
export function bytesChunks(
  pieces: readonly BytesPiece[],
  f: Framing,
): (room: number) => Buffer | null {
  let i = 0;
  let started = false;
  let ended = false;
  const sep = Buffer.byteLength(f.separator);
  const wrap = Buffer.byteLength(f.before) + Buffer.byteLength(f.after);
  return (room) => {
    if (ended) return null;
    let bytes = started ? 0 : Buffer.byteLength(f.head);
    const from = i;
    let to = i;
    while (to < pieces.length && (to === from || bytes < room)) {
      bytes += pieces[to].byteLength + wrap + (to > 0 ? sep : 0);
      to++;
    }
    const last = to === pieces.length;
    if (last) bytes += Buffer.byteLength(f.tail);
    const out = Buffer.allocUnsafe(bytes);
    let at = started ? 0 : out.write(f.head, 0, "utf8");
    for (let k = from; k < to; k++) {
      if (k > 0 && sep > 0) at += out.write(f.separator, at, "utf8");
      if (f.before) at += out.write(f.before, at, "utf8");
      at += pieces[k].copyTo(out, at);
      if (f.after) at += out.write(f.after, at, "utf8");
    }
    if (last) {
      out.write(f.tail, at, "utf8");
      ended = true;
    }
    started = true;
    i = to;
    return out;
  };
}

/**
 * Chunks of text pieces pulled from `next` (which returns a batch of pieces, about
 * as many as fit `room` bytes, or null when there are no more), framed: one batch
 * per chunk.
 */
export function textChunks(
  next: (room: number) => string[] | null | Promise<string[] | null>,
  f: Framing,
): (room: number) => Promise<string | null> {
  let started = false;
  let ended = false;
  let count = 0;
  return async (room) => {
    if (ended) return null;
    const parts: string[] = [];
    let length = 0;
    if (!started) {
      parts.push(f.head);
      started = true;
    }
    // One batch per chunk (`next` sizes it by `room`); another only when a batch
    // brought nothing (a selection that matched none of it).
    for (;;) {
      const pieces = await next(room);
      if (pieces === null) {
        ended = true;
        // No piece came: this first call holds the head alone.
        if (count === 0 && f.empty !== undefined) return f.empty;
        parts.push(f.tail);
        break;
      }
      for (const p of pieces) {
        if (count++ > 0 && f.separator) parts.push(f.separator);
        if (f.before) parts.push(f.before);
        parts.push(p);
        if (f.after) parts.push(f.after);
        length += p.length;
      }
      if (length > 0) break;
      // Nothing yet: other requests get a turn before the next batch is read.
      await nextTurn();
    }
    return parts.join("");
  };
}
