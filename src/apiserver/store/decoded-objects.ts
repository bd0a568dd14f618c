/**
 * Objects recently read from or written to storage, decoded, by key and revision.
 * An update starts from the stored object: when it was decoded (or written) at
 * that very revision a moment ago, a copy of it is taken instead of parsing the
 * stored JSON again. Entries are keyed by revision, which every write moves, and
 * by the read hook they were completed with, so a copy is always what decoding
 * the stored value would give.
 */

import type { KubeObject } from "@setpoint/api";
import { deepClone } from "@setpoint/api";

/** Most decoded objects kept (least recently used ones are forgotten). */
export const DECODED_OBJECTS = 1024;

type ReadHook = ((obj: KubeObject) => void) | undefined;

interface Entry {
  revision: number;
  obj: KubeObject;
  onRead: ReadHook;
}

export class DecodedObjects {
  readonly #entries = new Map<string, Entry>();

  /** A private copy of the object at `key` and `revision`, if kept. */
  get(key: string, revision: number, onRead: ReadHook): KubeObject | undefined {
    const e = this.#entries.get(key);
    if (!e || e.revision !== revision || e.onRead !== onRead) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, e);
    return deepClone(e.obj);
  }

  /**
   * Keeps `obj` as the object at `key` and `revision` (completed with `onRead`).
   * It is kept as is: the caller must not modify it afterwards.
   */
  set(key: string, revision: number, obj: KubeObject, onRead: ReadHook): void {
    this.#entries.delete(key);
    this.#entries.set(key, { revision, obj, onRead });
    if (this.#entries.size > DECODED_OBJECTS) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
  }

  /** Forgets the object at `key`. */
  delete(key: string): void {
    this.#entries.delete(key);
  }
}
