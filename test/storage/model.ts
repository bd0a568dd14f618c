/**
 * A deliberately simple in-memory model of the Store contract, used by the property
 * test of the conformance suite. It is synchronous, keeps every change in one log and
 * recomputes past state from it; revisions are contiguous from 1. Results are values
 * or the name of the typed error the contract requires.
 */
import type { KeyValue, WatchEvent } from "../../src/storage/index.ts";

export type ModelErrorKind =
  | "AlreadyExistsError"
  | "NotFoundError"
  | "ConflictError"
  | "CompactedError"
  | "FutureRevisionError";

export type ModelResult<T> =
  | { ok: true; value: T }
  | { ok: false; error: ModelErrorKind; currentRevision?: number };

/** Orders keys as the stores do: by their UTF-8 bytes. */
export function compareKeys(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

function ok<T>(value: T): ModelResult<T> {
  return { ok: true, value };
}

function fail<T>(error: ModelErrorKind, currentRevision?: number): ModelResult<T> {
  return currentRevision === undefined
    ? { ok: false, error }
    : { ok: false, error, currentRevision };
}

export class StoreModel {
  /** The newest revision (0: nothing written). */
  revision = 0;
  /** History before this revision is gone. */
  compacted = 0;
  /** Every change, in revision order (log[i].revision === i + 1). */
  readonly log: WatchEvent[] = [];
  readonly #current = new Map<string, KeyValue>();

  /** The live item of `key`, if any. */
  current(key: string): KeyValue | undefined {
    return this.#current.get(key);
  }

  create(key: string, value: string): ModelResult<number> {
    if (this.#current.has(key)) return fail("AlreadyExistsError");
    const revision = ++this.revision;
    this.#current.set(key, { key, value, createRevision: revision, modRevision: revision });
    this.log.push({ type: "create", key, revision, value, createRevision: revision, prev: null });
    return ok(revision);
  }

  update(key: string, value: string, expectedRevision: number): ModelResult<number> {
    const prev = this.#current.get(key);
    if (!prev) return fail("NotFoundError");
    if (prev.modRevision !== expectedRevision) return fail("ConflictError", prev.modRevision);
    const revision = ++this.revision;
    const createRevision = prev.createRevision;
    this.#current.set(key, { key, value, createRevision, modRevision: revision });
    this.log.push({ type: "update", key, revision, value, createRevision, prev });
    return ok(revision);
  }

  delete(key: string, expectedRevision?: number): ModelResult<number> {
    const prev = this.#current.get(key);
    if (!prev) return fail("NotFoundError");
    if (expectedRevision !== undefined && prev.modRevision !== expectedRevision) {
      return fail("ConflictError", prev.modRevision);
    }
    const revision = ++this.revision;
    this.#current.delete(key);
    this.log.push({
      type: "delete",
      key,
      revision,
      value: null,
      createRevision: prev.createRevision,
      prev,
    });
    return ok(revision);
  }

  /** `key` as of `revision` (absent: now). */
  get(key: string, revision?: number): ModelResult<KeyValue | null> {
    const state = this.#stateAt(revision);
    if (!state.ok) return state;
    return ok(state.value.get(key) ?? null);
  }

  /** Items under `prefix` as of `revision` (absent: now), in key order. */
  list(prefix: string, revision?: number): ModelResult<KeyValue[]> {
    const state = this.#stateAt(revision);
    if (!state.ok) return state;
    const items = [...state.value.values()].filter((kv) => kv.key.startsWith(prefix));
    return ok(items.sort((a, b) => compareKeys(a.key, b.key)));
  }

  /** The changes a watch of `prefix` from `fromRevision` must deliver, so far. */
  events(prefix: string, fromRevision: number): ModelResult<WatchEvent[]> {
    if (fromRevision < this.compacted) return fail("CompactedError");
    return ok(this.log.filter((ev) => ev.revision > fromRevision && ev.key.startsWith(prefix)));
  }

  compact(revision: number): ModelResult<void> {
    if (revision > this.revision) return fail("FutureRevisionError");
    this.compacted = Math.max(this.compacted, revision);
    return ok(undefined);
  }

  #stateAt(revision: number | undefined): ModelResult<Map<string, KeyValue>> {
    if (revision === undefined) return ok(this.#current);
    if (revision > this.revision) return fail("FutureRevisionError");
    if (revision < this.compacted) return fail("CompactedError");
    const state = new Map<string, KeyValue>();
    for (const ev of this.log) {
      if (ev.revision > revision) break;
      if (ev.value === null) state.delete(ev.key);
      else {
        state.set(ev.key, {
          key: ev.key,
          value: ev.value,
          createRevision: ev.createRevision,
          modRevision: ev.revision,
        });
      }
    }
    return ok(state);
  }
}
