/**
 * The watch cache of one resource type: a single storage watch on the type's key
 * prefix feeds every client watch of that type. It keeps
 *
 * - the current state of every object (serialized once, with what selectors
 *   need; the JSON packed outside the heap, see watch-slabs.ts), which serves lists
 *   with resourceVersion=0 and the initial events of watches that start "now";
 * - a window of the most recent events, so a watch can start from a recent
 *   resourceVersion without touching storage;
 * - per event, each rendering a watcher asked for (JSON line, Table row...),
 *   computed once however many watchers receive it.
 *
 * The storage watch is re-opened after errors (from the last revision applied);
 * if its start was compacted the cache re-lists and ends its watchers, which then
 * re-watch and are told 410 if they are too far behind.
 */

import type { KubeObject } from "@setpoint/api";
import type { Logger } from "pino";
import { extraFieldValues } from "../../registry/field-selectors.ts";
import { resourcePrefix } from "../../registry/storage-keys.ts";
import type { ResourceDefinition } from "../../registry/types.ts";
import { ClosedError, CompactedError } from "../../storage/errors.ts";
import type { Store, Watch, WatchEvent } from "../../storage/store.ts";
import { type EncodedObject, parseStored, withResourceVersion } from "../wire/codec.ts";
import { JsonSlabs, SlabJson } from "./watch-slabs.ts";

/**
 * Flushes of watch output are spaced by at least the time the previous flush
 * took, times this: with many watchers, writing out takes at most about half the
 * event loop's time, and each flush carries every event since the previous one in
 * one write per watcher (fewer, larger writes), instead of one per turn of the loop.
 */

/** The bounds a watch cache works within (the server's ApiLimits carry them). */
export interface WatchCacheLimits {
  /** Recent events kept to start watches from a past resourceVersion. */
  watchCacheWindow: number;
  /** Items read from storage per page while priming. */
  storagePageSize: number;
  /** Delay before the storage watch is opened again after an error, in ms. */
  watchRestartDelayMs: number;
}

export const WATCH_FLUSH_SPACING = 1;
/** The longest a flush of watch output is put off by WATCH_FLUSH_SPACING, in ms. */
export const WATCH_FLUSH_MAX_DELAY_MS = 25;

/** Events a storage watch may buffer for the cache before it is cut off. */
export const CACHE_STORAGE_WATCH_BUFFER = 100_000;
/**
 * Announced writes whose events have not arrived yet, kept at most (beyond, they
 * are forgotten, and their events decoded as any other).
 */
export const CACHE_WRITE_HINTS = 10_000;

/** A write this server is making: what it stores at a key, and the object itself. */
interface WriteHint {
  encoded: EncodedObject;
  obj: KubeObject;
  /** The read hook of the definition the object was written under. */
  onRead: ((obj: KubeObject) => void) | undefined;
}

/**
 * One object as the cache holds it: what selectors need, and its JSON
 * (resourceVersion included, in the storage version) in the cache's slabs. The
 * cache's map and the events of its window that name an entry hold it; its bytes
 * stay readable by anyone who still has the entry after that.
 */
export class CacheEntry extends SlabJson {
  constructor(
    slabs: JsonSlabs,
    readonly key: string,
    /** The object's resourceVersion (its last write's revision). */
    readonly rev: number,
    json: string,
    readonly namespace: string,
    readonly name: string,
    readonly labels: Record<string, string> | undefined,
    /**
     * Values of the type's selectable fields beyond metadata.name and
     * metadata.namespace (undefined when it has none; see entryField).
     */
    readonly fields: Record<string, string> | undefined,
  ) {
    super(slabs, json);
  }
}

/** The value of a selectable field of a cache entry ("" when the object has none). */
export function entryField(e: CacheEntry, field: string): string | undefined {
  if (field === "metadata.name") return e.name;
  if (field === "metadata.namespace") return e.namespace;
  return e.fields?.[field];
}

export type EventType = "ADDED" | "MODIFIED" | "DELETED";

/** Which object a watcher is sent for an event: the new state, or the old one (when it left). */
export type EventSide = "cur" | "prev";

/** One change, as the cache distributes it. */
export class CacheEvent {
  /** Renderings of this event by key, each computed once (made on first use). */
  #lines: Map<string, string> | undefined;
  #prevAtRev: KubeObject | undefined;
  #cur: KubeObject | undefined;
  /** The new state's JSON as a string, while the event waits for its flush. */
  #curJson: string | undefined;

  constructor(
    readonly type: EventType,
    readonly key: string,
    readonly rev: number,
    /** The object after the change (null for deletions). */
    readonly cur: CacheEntry | null,
    /** The object before the change (null for creations). */
    readonly prev: CacheEntry | null,
  ) {}

  /** The new state, parsed (shared: do not modify). */
  curObject(): KubeObject {
    this.#cur ??= JSON.parse(this.json("cur")) as KubeObject;
    return this.#cur;
  }

  /**
   * Keeps the new state's JSON string (the one its entry was made from) until the
   * event's flush, so the watchers' renderings need not read it back from the slab.
   */
  keepJson(json: string): void {
    this.#curJson = json;
  }

  /** The old state with this event's resourceVersion, as a deletion is reported (shared). */
  prevObject(): KubeObject {
    if (!this.#prevAtRev) {
      const obj = JSON.parse(this.prev!.json) as KubeObject;
      this.#prevAtRev = withResourceVersion(obj, this.rev);
    }
    return this.#prevAtRev;
  }

  /** The JSON of one side. */
  json(side: EventSide): string {
    if (side === "cur") return this.#curJson ?? this.cur!.json;
    const key = "json:prev";
    let s = this.cachedRendering(key);
    if (s === undefined) {
      s = JSON.stringify(this.prevObject());
      this.keepRendering(key, s);
    }
    return s;
  }

  /** A rendering of this event, computed by `make` the first time `key` is asked for. */
  rendered(key: string, make: () => string): string {
    let s = this.cachedRendering(key);
    if (s === undefined) {
      s = make();
      this.keepRendering(key, s);
    }
    return s;
  }

  /** The rendering kept under `key`, if any. */
  cachedRendering(key: string): string | undefined {
    return this.#lines?.get(key);
  }

  /** Keeps `s` as this event's rendering under `key`. */
  keepRendering(key: string, s: string): void {
    this.#lines ??= new Map();
    this.#lines.set(key, s);
  }

  /**
   * Forgets the renderings and parsed objects (once the event went out to the
   * watchers of its flush: a watch starting later from the window renders it
   * again), so the window holds only the entries.
   */
  dropRenderings(): void {
    this.#lines = undefined;
    this.#cur = undefined;
    this.#curJson = undefined;
    this.#prevAtRev = undefined;
  }
}

/**
 * What the watchers of one flush share: each chunk of output, by a key naming
 * everything that decides it (representation, selection, first event), made once
 * and written to every watcher whose output it is.
 */
export class SharedChunks {
  /** Chunks by key: null when there is nothing to send, false when making it failed. */
  readonly #chunks = new Map<string, Buffer | null | false>();

  /**
   * The chunk under `key`, made by `make` the first time: null when `make` has
   * nothing to send, undefined when it throws (each watcher then renders on its
   * own, and reports the failure itself).
   */
  get(key: string, make: () => Buffer | null): Buffer | null | undefined {
    let chunk = this.#chunks.get(key);
    if (chunk === undefined) {
      try {
        chunk = make();
      } catch {
        chunk = false;
      }
      this.#chunks.set(key, chunk);
    }
    return chunk === false ? undefined : chunk;
  }

  /** Number of distinct chunks made. */
  get size(): number {
    return this.#chunks.size;
  }
}

/** A client watch fed by the cache. */
export interface CacheWatcher {
  /** Events at or below this revision are not delivered. */
  startRev: number;
  deliver(ev: CacheEvent): void;
  /** Events for this batch were delivered: write them out. */
  flush(): void;
  /**
   * Delivers a batch of events (in revision order, some possibly at or below
   * startRev) and writes them out; watchers that have it are given whole batches
   * instead of deliver() and flush(), with the chunks shared among the watchers of
   * the same flush.
   */
  deliverBatch?(events: readonly CacheEvent[], shared: SharedChunks): void;
  /** The cache is stopping or restarting: end the watch. */
  terminate(): void;
}

/** A fixed-capacity ring of the most recent events, in revision order. */
class EventWindow {
  readonly #buf: (CacheEvent | undefined)[];
  #start = 0;
  #size = 0;

  constructor(readonly capacity: number) {
    this.#buf = new Array(Math.max(1, capacity));
  }

  get size(): number {
    return this.#size;
  }

  /**
   * Adds an event, which holds its entries until evicted; returns the one evicted
   * to make room, if any.
   */
  push(ev: CacheEvent): CacheEvent | undefined {
    ev.cur?.hold();
    ev.prev?.hold();
    const cap = this.#buf.length;
    if (this.#size < cap) {
      this.#buf[(this.#start + this.#size) % cap] = ev;
      this.#size++;
      return undefined;
    }
    const evicted = this.#buf[this.#start]!;
    this.#buf[this.#start] = ev;
    this.#start = (this.#start + 1) % cap;
    evicted.cur?.release();
    evicted.prev?.release();
    return evicted;
  }

  at(i: number): CacheEvent {
    return this.#buf[(this.#start + i) % this.#buf.length]!;
  }

  /** Events with revision > rev, oldest first. */
  since(rev: number): CacheEvent[] {
    let lo = 0;
    let hi = this.#size;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.at(mid).rev <= rev) lo = mid + 1;
      else hi = mid;
    }
    const out: CacheEvent[] = [];
    for (let i = lo; i < this.#size; i++) out.push(this.at(i));
    return out;
  }

  /** Drops every event (their entries' holds go with the slabs they are in). */
  clear(): void {
    this.#buf.fill(undefined);
    this.#start = 0;
    this.#size = 0;
  }
}

/** What starting a watch from a revision found. */
export type ReplayResult = { ok: true; events: CacheEvent[] } | { ok: false; oldest: number };

/** The index of the first of the sorted `keys` not below `key`. */
function lowerBound(keys: readonly string[], key: string): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keys[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

export class WatchCache {
  readonly prefix: string;
  /** The last revision applied: the cache's state is the store's state at this revision. */
  rev = 0;
  /** Every event with a revision above this is in the window. */
  oldestRev = 0;
  #entries = new Map<string, CacheEntry>();
  /** Bytes of the entries' JSON, in all. */
  #entryBytes = 0;
  /** The entries' keys in order, made when asked for and kept until a key comes or goes. */
  #sortedKeys: string[] | null = null;
  /** Where the entries' JSON is (replaced with the entries when they are read again). */
  #slabs = new JsonSlabs();
  /** The JSON string the last entry was made from (see CacheEvent.keepJson). */
  #madeJson: string | undefined;
  readonly #window: EventWindow;
  readonly #watchers = new Set<CacheWatcher>();
  #storageWatch: Watch | null = null;
  #stopped = false;
  #ready = false;
  #readyPromise: Promise<void>;
  #resolveReady!: () => void;
  #rejectReady!: (err: unknown) => void;
  #flushScheduled = false;
  /** Events applied since the last flush, in revision order. */
  #batch: CacheEvent[] = [];
  /** When the last flush ended (performance.now()) and how long it took, in ms. */
  #lastFlushEnd = 0;
  #lastFlushTook = 0;
  #loop: Promise<void> | null = null;
  /** Set when the objects must be read again (see reload()). */
  #reloadWanted = false;
  /** Writes announced by this server, by key (see expectWrite()). */
  readonly #hints = new Map<string, WriteHint>();
  /** Waiters for the cache to reach a revision. */
  #waiters: { rev: number; resolve: () => void }[] = [];

  constructor(
    readonly store: Store,
    /** The type served (replaced when its definition changes; the prefix stays). */
    public def: ResourceDefinition,
    readonly limits: WatchCacheLimits,
    readonly logger?: Logger,
  ) {
    this.prefix = resourcePrefix(def);
    this.#window = new EventWindow(limits.watchCacheWindow);
    this.#readyPromise = new Promise((resolve, reject) => {
      this.#resolveReady = resolve;
      this.#rejectReady = reject;
    });
    // Callers await ready(); an unobserved rejection must not crash the process.
    this.#readyPromise.catch(() => {});
  }

  /** True once the first listing is loaded. */
  get isReady(): boolean {
    return this.#ready;
  }

  /** Resolves when the first listing is loaded. */
  ready(): Promise<void> {
    return this.#readyPromise;
  }

  /**
   * The revision up to which every event has been handed to the watchers: events
   * above it wait for the next flush (a bookmark must not claim them yet).
   */
  get deliveredRev(): number {
    return this.#batch.length > 0 ? this.#batch[0].rev - 1 : this.rev;
  }

  /** Number of objects held. */
  get size(): number {
    return this.#entries.size;
  }

  /** The average size of an object's JSON, in bytes (0 when there are none). */
  get averageEntryBytes(): number {
    return this.#entries.size === 0 ? 0 : this.#entryBytes / this.#entries.size;
  }

  /** Slabs holding the objects' JSON (see watch-slabs.ts; for diagnostics and tests). */
  get slabCount(): number {
    return this.#slabs.slabCount;
  }

  /** Number of client watches attached. */
  get watcherCount(): number {
    return this.#watchers.size;
  }

  /** Loads the current state and starts following the storage watch. */
  start(): void {
    if (this.#loop) return;
    this.#loop = this.#run().catch((err) => {
      this.logger?.error({ err, prefix: this.prefix }, "watch cache stopped on an error");
    });
  }

  /** Stops following storage and ends every client watch. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#storageWatch?.cancel();
    this.#terminateWatchers();
    this.#rejectReady(new ClosedError());
    for (const w of this.#waiters) w.resolve();
    this.#waiters = [];
    await this.#loop;
  }

  /** The entry at `key`, if the cache holds it. */
  get(key: string): CacheEntry | undefined {
    return this.#entries.get(key);
  }

  /**
   * Entries under `prefix` (the type's prefix or a namespace's), sorted by key. The
   * keys are sorted once and kept until a key comes or goes (modifications keep
   * the order), and a namespace's are found by binary search.
   */
  entries(prefix = this.prefix): CacheEntry[] {
    if (this.#sortedKeys === null) {
      this.#sortedKeys = [...this.#entries.keys()];
      this.#sortedKeys.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    }
    const keys = this.#sortedKeys;
    let from = 0;
    let to = keys.length;
    if (prefix !== this.prefix) {
      from = lowerBound(keys, prefix);
      to = from;
      while (to < keys.length && keys[to].startsWith(prefix)) to++;
    }
    const out: CacheEntry[] = new Array(to - from);
    for (let i = from; i < to; i++) out[i - from] = this.#entries.get(keys[i])!;
    return out;
  }

  /** Events after `rev`, or the oldest revision still servable when `rev` is older. */
  replaySince(rev: number): ReplayResult {
    if (rev < this.oldestRev) return { ok: false, oldest: this.oldestRev };
    return { ok: true, events: this.#window.since(rev) };
  }

  /** Resolves once the cache has applied revision `rev` (or after `timeoutMs`). */
  waitFor(rev: number, timeoutMs: number): Promise<boolean> {
    if (this.rev >= rev) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w !== waiter);
        resolve(this.rev >= rev);
      }, timeoutMs);
      timer.unref();
      const waiter = {
        rev,
        resolve: () => {
          clearTimeout(timer);
          resolve(this.rev >= rev);
        },
      };
      this.#waiters.push(waiter);
    });
  }

  addWatcher(w: CacheWatcher): void {
    this.#watchers.add(w);
  }

  removeWatcher(w: CacheWatcher): void {
    this.#watchers.delete(w);
  }

  /**
   * Announces that this server is about to store `encoded` at `key` for `obj` (an
   * object it wrote, defaulted under a definition with read hook `onRead`): when
   * the event storing exactly that value arrives, its entry is made from `obj`
   * and the encoded JSON instead of decoding the value again. `obj` must not be
   * modified afterwards (its resourceVersion aside).
   */
  expectWrite(
    key: string,
    encoded: EncodedObject,
    obj: KubeObject,
    onRead: ((obj: KubeObject) => void) | undefined,
  ): void {
    if (this.#hints.size >= CACHE_WRITE_HINTS) this.#hints.clear();
    this.#hints.set(key, { encoded, obj, onRead });
  }

  /** The entry of a put event, from this server's announced write when it is that write. */
  #putEntry(key: string, value: string, rev: number): CacheEntry | null {
    const hint = this.#hints.get(key);
    if (hint !== undefined && hint.encoded.stored === value) {
      this.#hints.delete(key);
      // Written under the same read hook: reading the value back would add nothing.
      if (hint.onRead === this.def.strategy.onRead) {
        const m = hint.obj.metadata;
        const json = hint.encoded.withRevision(rev);
        this.#madeJson = json;
        return new CacheEntry(
          this.#slabs,
          key,
          rev,
          json,
          m.namespace ?? "",
          m.name ?? "",
          // The written object is not modified afterwards: its labels can be shared.
          m.labels,
          extraFieldValues(this.def, hint.obj),
        );
      }
    }
    return this.#safeEntry(key, value, rev);
  }

  /** Builds an entry from a stored value, its JSON in `slabs`. */
  makeEntry(key: string, value: string, rev: number, slabs = this.#slabs): CacheEntry {
    const obj = withResourceVersion(parseStored(value), rev);
    // Once per stored value: every reader and watcher shares the completed object.
    this.def.strategy.onRead?.(obj);
    const json = JSON.stringify(obj);
    this.#madeJson = json;
    return new CacheEntry(
      slabs,
      key,
      rev,
      json,
      obj.metadata.namespace ?? "",
      obj.metadata.name ?? "",
      obj.metadata.labels,
      extraFieldValues(this.def, obj),
    );
  }

  /**
   * Reads every object again from storage, because how stored objects are read
   * changed (the type's read hook, e.g. a CRD's defaults): the current state is
   * re-listed and swapped in when complete, the event window starts afresh, and
   * client watches end (they re-watch, and re-list when told 410), as Kubernetes
   * ends the watches of a custom resource whose definition changed.
   */
  reload(): void {
    if (this.#stopped || !this.#loop) return;
    this.#reloadWanted = true;
    this.#storageWatch?.cancel();
  }

  async #prime(): Promise<void> {
    // Built aside and swapped in whole: reads keep the previous state meanwhile.
    // The previous entries and events go with their slabs.
    const slabs = new JsonSlabs();
    const entries = new Map<string, CacheEntry>();
    let token: string | undefined;
    let revision = 0;
    do {
      const page = await this.store.list(this.prefix, {
        limit: this.limits.storagePageSize,
        ...(token ? { continue: token } : {}),
      });
      revision = page.revision;
      for (const kv of page.items) {
        try {
          const entry = this.makeEntry(kv.key, kv.value, kv.modRevision, slabs);
          entry.hold();
          entries.set(kv.key, entry);
        } catch (err) {
          this.logger?.error({ err, key: kv.key }, "watch cache skipped an unreadable object");
        }
      }
      token = page.continue;
    } while (token && !this.#stopped);
    this.#entries = entries;
    this.#sortedKeys = null;
    this.#entryBytes = 0;
    for (const e of entries.values()) this.#entryBytes += e.byteLength;
    this.#slabs = slabs;
    this.#window.clear();
    this.rev = revision;
    this.oldestRev = revision;
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      try {
        await this.#prime();
        break;
      } catch (err) {
        if (this.#stopped || err instanceof ClosedError) {
          this.#rejectReady(err);
          return;
        }
        this.logger?.warn({ err, prefix: this.prefix }, "watch cache listing failed; retrying");
        await sleep(this.limits.watchRestartDelayMs);
      }
    }
    if (this.#stopped) return;
    this.#ready = true;
    this.#resolveReady();
    while (!this.#stopped) {
      if (this.#reloadWanted) {
        this.#reloadWanted = false;
        this.#terminateWatchers();
        try {
          await this.#prime();
        } catch (err) {
          if (this.#stopped || err instanceof ClosedError) return;
          this.logger?.warn({ err, prefix: this.prefix }, "watch cache re-listing failed");
          this.#reloadWanted = true;
          await sleep(this.limits.watchRestartDelayMs);
          continue;
        }
      }
      let w: Watch;
      try {
        w = this.store.watch(this.prefix, this.rev, { bufferSize: CACHE_STORAGE_WATCH_BUFFER });
      } catch (err) {
        if (err instanceof ClosedError) return;
        this.logger?.warn({ err, prefix: this.prefix }, "watch cache could not watch storage");
        await sleep(this.limits.watchRestartDelayMs);
        continue;
      }
      this.#storageWatch = w;
      try {
        for await (const ev of w) this.#apply(ev);
        if (this.#stopped) return;
        if (this.#reloadWanted) continue;
        // The iteration ended without an error: the store closed or cancelled us.
        await sleep(this.limits.watchRestartDelayMs);
      } catch (err) {
        if (this.#stopped || err instanceof ClosedError) return;
        if (this.#reloadWanted) continue;
        if (err instanceof CompactedError) {
          this.logger?.warn(
            { prefix: this.prefix },
            "watch cache fell behind compaction; re-listing",
          );
          this.#terminateWatchers();
          try {
            await this.#prime();
          } catch (primeErr) {
            this.logger?.warn({ err: primeErr }, "watch cache re-listing failed");
          }
          continue;
        }
        this.logger?.warn(
          { err, prefix: this.prefix },
          "watch cache storage watch failed; resuming",
        );
        await sleep(this.limits.watchRestartDelayMs);
      } finally {
        this.#storageWatch = null;
      }
    }
  }

  #apply(ev: WatchEvent): void {
    if (ev.revision <= this.rev) return;
    const before =
      this.#entries.get(ev.key) ??
      (ev.prev ? this.#safeEntry(ev.key, ev.prev.value, ev.prev.modRevision) : null);
    let event: CacheEvent | null = null;
    let replaced: CacheEntry | undefined;
    if (ev.type === "delete") {
      replaced = this.#entries.get(ev.key);
      this.#entries.delete(ev.key);
      if (replaced) {
        this.#entryBytes -= replaced.byteLength;
        this.#sortedKeys = null;
      }
      if (before) event = new CacheEvent("DELETED", ev.key, ev.revision, null, before);
    } else if (ev.value !== null) {
      this.#madeJson = undefined;
      const cur = this.#putEntry(ev.key, ev.value, ev.revision);
      if (cur) {
        replaced = this.#entries.get(ev.key);
        cur.hold();
        this.#entries.set(ev.key, cur);
        this.#entryBytes += cur.byteLength - (replaced?.byteLength ?? 0);
        if (replaced === undefined) this.#sortedKeys = null;
        const type: EventType = before ? "MODIFIED" : "ADDED";
        event = new CacheEvent(type, ev.key, ev.revision, cur, before);
      }
    }
    this.rev = ev.revision;
    if (event) {
      // The window holds the entries of the event before the map lets go of the old one.
      const evicted = this.#window.push(event);
      replaced?.release();
      if (evicted) this.oldestRev = evicted.rev;
      if (this.#watchers.size > 0) {
        if (event.cur !== null && this.#madeJson !== undefined) event.keepJson(this.#madeJson);
        this.#madeJson = undefined;
        this.#batch.push(event);
        this.#scheduleFlush();
      }
    } else {
      replaced?.release();
    }
    if (this.#waiters.length > 0) {
      const due = this.#waiters.filter((w) => w.rev <= this.rev);
      this.#waiters = this.#waiters.filter((w) => w.rev > this.rev);
      for (const w of due) w.resolve();
    }
  }

  #safeEntry(key: string, value: string, rev: number): CacheEntry | null {
    try {
      return this.makeEntry(key, value, rev);
    } catch (err) {
      this.logger?.error({ err, key }, "watch cache skipped an unreadable object");
      return null;
    }
  }

  #scheduleFlush(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    const run = () => {
      this.#flushScheduled = false;
      this.#flush();
    };
    const wait =
      this.#lastFlushEnd +
      Math.min(this.#lastFlushTook * WATCH_FLUSH_SPACING, WATCH_FLUSH_MAX_DELAY_MS) -
      performance.now();
    if (wait >= 1) setTimeout(run, wait);
    else setImmediate(run);
  }

  /** Hands the events applied since the last flush to every watcher, and writes them out. */
  #flush(): void {
    const events = this.#batch;
    if (events.length === 0) return;
    this.#batch = [];
    const start = performance.now();
    const shared = new SharedChunks();
    for (const w of [...this.#watchers]) {
      if (w.deliverBatch) {
        w.deliverBatch(events, shared);
        continue;
      }
      for (const ev of events) if (ev.rev > w.startRev) w.deliver(ev);
      w.flush();
    }
    for (const ev of events) ev.dropRenderings();
    const end = performance.now();
    this.#lastFlushEnd = end;
    this.#lastFlushTook = end - start;
  }

  #terminateWatchers(): void {
    // Events applied before the end still go out.
    this.#flush();
    for (const w of [...this.#watchers]) w.terminate();
    this.#watchers.clear();
  }
}
