/**
 * Where the watch cache keeps each object's JSON: as UTF-8 bytes packed one after
 * another in large buffers (slabs) outside the JavaScript heap, instead of one
 * heap string per object.
 *
 * Held as strings, the objects' JSON was most of the heap, and the heap kept far
 * more than it held: each string is born among the garbage of the write that made
 * it, is promoted with it, and old-space pages stayed partly empty after the
 * garbage around the strings died (old space committed 1.3x to 1.7x what it used,
 * varying from run to run). Slabs are filled in order and only ever hold cache
 * JSON, so they stay dense; the heap keeps the small entries.
 *
 * A piece of JSON is written once and never overwritten: its bytes stay valid for
 * whoever still holds it. The cache counts who holds each piece (its map of
 * objects, the events of its window); when the last lets go the bytes are dead, and
 * a full slab whose live bytes fell under half of it is compacted: its live pieces
 * are copied to the slab being filled, and the slab is left to the garbage
 * collector (it goes once nothing refers to it any more).
 */

/** Bytes per slab (JSON larger than a quarter of this gets a buffer of its own). */
export const JSON_SLAB_BYTES = 1024 * 1024;

/**
 * A full slab whose live bytes fall below this fraction of its size is compacted
 * (at most about as many bytes are copied as were freed, so writes pay a bounded,
 * amortized share).
 */
export const JSON_SLAB_COMPACT_BELOW = 0.5;

/** JSON larger than this is not packed in a shared slab. */
const OWN_BUFFER_BYTES = JSON_SLAB_BYTES / 4;

/** One slab: a buffer filled in order, and the pieces written into it. */
class Slab {
  used = 0;
  /** Bytes of pieces still held. */
  live = 0;
  /** Pieces written here (some may no longer be held, or have moved). */
  pieces: SlabJson[] = [];

  constructor(
    readonly buf: Buffer,
    readonly owner: JsonSlabs | null,
  ) {}
}

/**
 * A piece of JSON in a slab, with the count of its holders. The watch cache's
 * entries are pieces (see CacheEntry).
 */
export class SlabJson {
  #slab!: Slab;
  #start = 0;
  #end = 0;
  /** Whether every byte is ASCII (the bytes read as Latin-1 are the string). */
  #ascii = true;
  /** Holders of the piece; its bytes are dead once this is back to 0. */
  #holds = 0;

  /** Writes `json` into `slabs` (the holders' count starts at 0). */
  protected constructor(slabs: JsonSlabs, json: string) {
    slabs.write(this, json);
  }

  /** The JSON (a new string each time). */
  get json(): string {
    return this.#slab.buf.toString(this.#ascii ? "latin1" : "utf8", this.#start, this.#end);
  }

  /** Length of the JSON in UTF-8 bytes. */
  get byteLength(): number {
    return this.#end - this.#start;
  }

  /** Whether the JSON is ASCII only. */
  get ascii(): boolean {
    return this.#ascii;
  }

  /** Copies the JSON's UTF-8 bytes into `target` at `at`; returns the bytes copied. */
  copyTo(target: Buffer, at: number): number {
    return this.#slab.buf.copy(target, at, this.#start, this.#end);
  }

  /** One more holder. */
  hold(): void {
    this.#holds++;
  }

  /** One holder fewer: the last one frees the bytes (see JsonSlabs). */
  release(): void {
    if (this.#holds === 0 || --this.#holds > 0) return;
    const slab = this.#slab;
    slab.live -= this.#end - this.#start;
    slab.owner?.released(slab);
  }

  /** Whether anything holds the piece. */
  get held(): boolean {
    return this.#holds > 0;
  }

  /** Where the piece is (for JsonSlabs only). */
  place(slab: Slab, start: number, end: number, ascii: boolean): void {
    this.#slab = slab;
    this.#start = start;
    this.#end = end;
    this.#ascii = ascii;
  }

  /** The slab holding the piece (for JsonSlabs only). */
  get slab(): Slab {
    return this.#slab;
  }
}

/** The slabs of one watch cache. */
export class JsonSlabs {
  #current: Slab = new Slab(Buffer.allocUnsafeSlow(JSON_SLAB_BYTES), this);
  #slabs = 1;
  #compactions = 0;

  /** Slabs allocated and not compacted away (dedicated buffers not counted). */
  get slabCount(): number {
    return this.#slabs;
  }

  /** Compactions run so far. */
  get compactions(): number {
    return this.#compactions;
  }

  /** Writes `json` for `piece` (used by SlabJson's constructor). */
  write(piece: SlabJson, json: string): void {
    // A UTF-16 code unit takes at most 3 UTF-8 bytes.
    let room = JSON_SLAB_BYTES - this.#current.used;
    if (json.length * 3 > room) {
      const bytes = Buffer.byteLength(json);
      if (bytes > OWN_BUFFER_BYTES) {
        const buf = Buffer.allocUnsafeSlow(bytes);
        buf.write(json, 0, "utf8");
        // Freed by the garbage collector with the last piece referring to it.
        piece.place(new Slab(buf, null), 0, bytes, bytes === json.length);
        return;
      }
      if (bytes > room) {
        this.#retire();
        room = JSON_SLAB_BYTES;
      }
    }
    const slab = this.#current;
    const start = slab.used;
    const n = slab.buf.write(json, start, "utf8");
    slab.used += n;
    slab.live += n;
    slab.pieces.push(piece);
    piece.place(slab, start, start + n, n === json.length);
  }

  /** Bytes of `slab` were freed (SlabJson.release). */
  released(slab: Slab): void {
    if (slab !== this.#current && slab.live < slab.buf.length * JSON_SLAB_COMPACT_BELOW) {
      this.#compact(slab);
    }
  }

  /** Starts a new current slab; the full one is compacted at once if already sparse. */
  #retire(): void {
    const full = this.#current;
    this.#current = new Slab(Buffer.allocUnsafeSlow(JSON_SLAB_BYTES), this);
    this.#slabs++;
    this.released(full);
  }

  /** Copies the held pieces of `slab` into the current slab, and lets `slab` go. */
  #compact(slab: Slab): void {
    const pieces = slab.pieces;
    // Emptied first: copying may retire the current slab, which checks this one again.
    slab.pieces = [];
    slab.live = 0;
    this.#slabs--;
    this.#compactions++;
    for (const piece of pieces) {
      if (!piece.held || piece.slab !== slab) continue;
      const n = piece.byteLength;
      if (JSON_SLAB_BYTES - this.#current.used < n) this.#retire();
      const to = this.#current;
      const start = to.used;
      piece.copyTo(to.buf, start);
      to.used += n;
      to.live += n;
      to.pieces.push(piece);
      piece.place(to, start, start + n, piece.ascii);
    }
  }
}
