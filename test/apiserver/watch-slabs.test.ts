import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  JSON_SLAB_BYTES,
  JSON_SLAB_COMPACT_BELOW,
  JsonSlabs,
  SlabJson,
} from "../../src/apiserver/watchcache/index.ts";

/** A bare piece of JSON in slabs (the cache's entries are pieces with more fields). */
class Piece extends SlabJson {
  constructor(
    slabs: JsonSlabs,
    readonly text: string,
  ) {
    super(slabs, text);
  }
}

/** A JSON string of about `bytes` bytes. */
function jsonOf(i: number, bytes: number, fill = "x"): string {
  return JSON.stringify({ i, v: fill.repeat(Math.max(0, Math.floor(bytes / fill.length))) });
}

describe("JSON slabs", () => {
  it("reads back what was written, ASCII or not, with its UTF-8 length", () => {
    const slabs = new JsonSlabs();
    const texts = [
      jsonOf(1, 100),
      jsonOf(2, 100, "é€😀"),
      "{}",
      JSON.stringify({ s: "\u0000\u2028" }),
    ];
    const pieces = texts.map((t) => new Piece(slabs, t));
    for (const [i, p] of pieces.entries()) {
      expect(p.json).toBe(texts[i]);
      expect(p.byteLength).toBe(Buffer.byteLength(texts[i]));
      expect(p.ascii).toBe(Buffer.byteLength(texts[i]) === texts[i].length);
      const out = Buffer.alloc(p.byteLength + 2);
      expect(p.copyTo(out, 1)).toBe(p.byteLength);
      expect(out.toString("utf8", 1, 1 + p.byteLength)).toBe(texts[i]);
    }
  });

  it("gives JSON larger than a quarter slab a buffer of its own", () => {
    const slabs = new JsonSlabs();
    const big = jsonOf(1, JSON_SLAB_BYTES);
    const p = new Piece(slabs, big);
    p.hold();
    expect(p.json).toBe(big);
    expect(slabs.slabCount).toBe(1);
    p.release();
    expect(slabs.compactions).toBe(0);
  });

  it("compacts a full slab whose live bytes fell under the threshold, keeping held pieces intact", () => {
    const slabs = new JsonSlabs();
    const pieces: Piece[] = [];
    // Three slabs' worth of 1 KiB pieces, every one held.
    for (let i = 0; pieces.length * 1024 < 3 * JSON_SLAB_BYTES; i++) {
      const p = new Piece(slabs, jsonOf(i, 1000));
      p.hold();
      pieces.push(p);
    }
    const full = slabs.slabCount;
    expect(full).toBeGreaterThanOrEqual(3);
    // Let go of three pieces in four: slabs empty below the threshold are compacted.
    const kept = pieces.filter((_, i) => i % 4 === 0);
    const dropped = pieces.filter((_, i) => i % 4 !== 0);
    const droppedText = dropped.map((p) => p.json);
    for (const p of dropped) p.release();
    expect(slabs.compactions).toBeGreaterThan(0);
    expect(slabs.slabCount).toBeLessThan(full);
    for (const p of kept) expect(p.json).toBe(p.text);
    // Pieces let go of still read what they held (their slab is not reused).
    expect(dropped.map((p) => p.json)).toEqual(droppedText);
  });

  it("keeps slabs in proportion to the live bytes under any sequence of writes and releases", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.record({
              op: fc.constant("add" as const),
              size: fc.integer({ min: 2, max: 20_000 }),
            }),
            fc.record({ op: fc.constant("drop" as const), at: fc.nat() }),
          ),
          { minLength: 500, maxLength: 2000 },
        ),
        (ops) => {
          const slabs = new JsonSlabs();
          const held: Piece[] = [];
          let n = 0;
          for (const o of ops) {
            if (o.op === "add") {
              const p = new Piece(slabs, jsonOf(n++, o.size, n % 3 === 0 ? "ü" : "y"));
              p.hold();
              held.push(p);
            } else if (held.length > 0) {
              const [p] = held.splice(o.at % held.length, 1);
              p.release();
            }
          }
          for (const p of held) expect(p.json).toBe(p.text);
          const live = held.reduce((s, p) => s + p.byteLength, 0);
          // Every slab but the one being filled is at least this full.
          const bound = Math.ceil(live / (JSON_SLAB_BYTES * JSON_SLAB_COMPACT_BELOW)) + 1;
          expect(slabs.slabCount).toBeLessThanOrEqual(bound);
        },
      ),
      { numRuns: 20 },
    );
  });
});
