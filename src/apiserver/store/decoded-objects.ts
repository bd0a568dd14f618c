/**
 * Objects recently read from or written to storage, decoded, by key and revision.
 * An update starts from the stored object: when it was decoded (or written) at
 * that very revision a moment ago, a copy of it is taken instead of parsing the
 * stored JSON again. Entries are keyed by revision, which every write moves, and
 * by the read hook they were completed with, so a copy is always what decoding
 * the stored value would give. What is kept is bounded by count and by the size
 * of the objects' stored JSON, so that a few objects of megabytes (CRDs) cannot
 * keep gigabytes decoded.
 */

import type { KubeObject } from "@setpoint/api";
import { deepClone } from "@setpoint/api";

/** Most decoded objects kept (least recently used ones are forgotten). */
export const DECODED_OBJECTS = 1024;

/** Most stored JSON, in bytes (UTF-16 code units), the kept objects may add up to. */
export const DECODED_OBJECT_BYTES = 32 * 1024 * 1024;

type ReadHook = ((obj: KubeObject) => void) | undefined;

interface Entry {
  revision: number;
  obj: KubeObject;
  onRead: ReadHook;
  size: number;
}

export class DecodedObjects {
  readonly #entries = new Map<string, Entry>();
  #bytes = 0;

  constructor(
    private readonly maxObjects = DECODED_OBJECTS,
    private readonly maxBytes = DECODED_OBJECT_BYTES,
  ) {}

  /** How many objects are kept, and the size of their stored JSON. */
  get stats(): { objects: number; bytes: number } {
    return { objects: this.#entries.size, bytes: this.#bytes };
  }

  /** A private copy of the object at `key` and `revision`, if kept. */
  get(key: string, revision: number, onRead: ReadHook): KubeObject | undefined {
    const e = this.#entries.get(key);
    if (!e || e.revision !== revision || e.onRead !== onRead) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, e);
    return deepClone(e.obj);
  }

  /**
   * A private copy of the newest object kept at `key` (completed with `onRead`)
   * and the revision it was kept at, if any. Storage may have moved past that
   * revision since: the caller must check it (a write that expects it does).
   */
  latest(key: string, onRead: ReadHook): { revision: number; obj: KubeObject } | undefined {
    const e = this.#entries.get(key);
    if (!e || e.onRead !== onRead) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, e);
    return { revision: e.revision, obj: deepClone(e.obj) };
  }

  /**
   * Keeps `obj` as the object at `key` and `revision` (completed with `onRead`),
   * whose stored JSON is `size` long; an object larger than the byte bound is
   * not kept. It is kept as is: the caller must not modify it afterwards.
   */
  set(key: string, revision: number, obj: KubeObject, onRead: ReadHook, size: number): void {
    this.delete(key);
    if (size > this.maxBytes) return;
    this.#entries.set(key, { revision, obj, onRead, size });
    this.#bytes += size;
    while (this.#entries.size > this.maxObjects || this.#bytes > this.maxBytes) {
      const oldest = this.#entries.keys().next().value;
      if (oldest === undefined) break;
      this.delete(oldest);
    }
  }

  /** Forgets the object at `key`. */
  delete(key: string): void {
    const e = this.#entries.get(key);
    if (!e) return;
    this.#entries.delete(key);
    this.#bytes -= e.size;
  }
}
