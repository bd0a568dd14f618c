/**
 * An informer: a reflector keeping an indexed, deep-frozen local copy of one
 * collection, and event handlers told about every change to it. Handlers run
 * synchronously, in event order, and should only record the key (enqueue it):
 * events are hints that something changed, never the input of a decision.
 *
 * Guarantees:
 * - After a re-list (a 410, or a failure), the copy is reconciled against the list:
 *   vanished objects produce onDelete, changed ones onUpdate, new ones onAdd;
 *   unchanged ones produce nothing. A watch event at or below the version already
 *   held for its key is dropped. So neither a dropped connection nor a compaction
 *   loses or repeats a change.
 * - Objects handed out (to handlers, get, list, byIndex) are deep-frozen; clone to
 *   change. `metadata.managedFields` is stripped unless asked to keep it.
 * - A periodic resync (off by default) re-delivers every object as
 *   onUpdate(obj, obj, true) without calling the API.
 */

import type { KubeObject } from "@setpoint/api";
import { deepFreeze, type LabelSelector, matchesLabels, parseLabelSelector } from "@setpoint/api";
import type { Client, TypeRef } from "../client/client.ts";
import { type IndexFunc, keyOf, NAMESPACE_INDEX, ObjectStore, objectKey } from "./object-store.ts";
import { NOOP_LOGGER, Reflector, type ReflectorOptions, type RuntimeLogger } from "./reflector.ts";

/** Callbacks for changes to an informer's collection. All optional. */
export interface EventHandler<T> {
  /** A new object; `isInitialList` when it came from the first list (or was already there when the handler was added). */
  onAdd?(obj: T, isInitialList: boolean): void;
  /** A changed object; on a periodic resync `oldObj === newObj` and `isResync` is true. */
  onUpdate?(oldObj: T, newObj: T, isResync: boolean): void;
  /** A deleted object, in its last known state. */
  onDelete?(obj: T): void;
}

export interface InformerOptions<T extends KubeObject>
  extends Omit<ReflectorOptions<T>, "transform" | "logger"> {
  /** Re-deliver every object as an update this often, in ms (0 or unset: never). */
  resyncMs?: number | undefined;
  /** Drop `metadata.managedFields` from every object (default true). */
  stripManagedFields?: boolean | undefined;
  /** Applied to every object before it is stored (after stripping). */
  transform?: ((obj: KubeObject) => T) | undefined;
  logger?: RuntimeLogger | undefined;
}

/** The health of one informer, as readiness checks read it. */
export interface InformerHealth {
  /** The first list completed. */
  synced: boolean;
  /** Time since something last arrived (list, event, bookmark); since start if nothing yet. */
  lastEventAgeMs: number;
  /** A watch is open. */
  watching: boolean;
  /** Lists after the first one. */
  relists: number;
  /** Watches resumed after they ended, dropped or went silent. */
  rewatches: number;
  /** Watches given up because nothing (not even a bookmark) arrived within the idle deadline. */
  idleRestarts: number;
  /** Consecutive failures of list or watch. */
  failures: number;
  lastError?: string | undefined;
  /** The newest resourceVersion seen. */
  resourceVersion: string;
  /** Objects held. */
  objects: number;
}

/**
 * Orders two resourceVersions: negative, zero, positive; undefined when either is
 * not a decimal integer (resourceVersions are opaque in general; Kubernetes and
 * Setpoint both use storage revisions, which are).
 */
export function compareResourceVersions(a: string, b: string): number | undefined {
  if (!/^\d+$/.test(a) || !/^\d+$/.test(b)) return a === b ? 0 : undefined;
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Whether `have` is the same as or newer than `want`. */
function atLeast(have: string | undefined, want: string): boolean {
  if (!have) return false;
  const c = compareResourceVersions(have, want);
  return c !== undefined && c >= 0;
}

interface RvWaiter {
  key: string;
  rv: string;
  done: (ok: boolean) => void;
}

export class Informer<T extends KubeObject> {
  private readonly store = new ObjectStore<T>();
  private readonly handlers = new Set<EventHandler<T>>();
  private readonly reflector: Reflector<T>;
  private readonly log: RuntimeLogger;
  private synced = false;
  private syncWaiters: { done: () => void; fail: (e: Error) => void }[] = [];
  private rvWaiters = new Set<RvWaiter>();
  private startedAt = 0;
  private signal: AbortSignal | undefined;
  private resyncTimer: NodeJS.Timeout | undefined;
  private lastRv = "";
  private readonly lastSelector = { text: "", parsed: undefined as LabelSelector | undefined };

  constructor(
    readonly client: Client,
    readonly type: TypeRef,
    readonly opts: InformerOptions<T> = {},
  ) {
    this.log = opts.logger ?? NOOP_LOGGER;
    const strip = opts.stripManagedFields !== false;
    const user = opts.transform;
    const transform = (obj: KubeObject): T => {
      if (strip && obj.metadata?.managedFields) delete obj.metadata.managedFields;
      return user ? user(obj) : (obj as T);
    };
    this.reflector = new Reflector<T>(
      client,
      type,
      {
        replace: (items, rv) => this.onReplace(items, rv),
        apply: (t, obj) => this.onEvent(t, obj),
        bookmark: (rv) => this.onProgress(rv),
      },
      { ...opts, transform, logger: this.log },
    );
  }

  /**
   * Adds a handler and returns a function that removes it. A handler added after
   * objects arrived first gets onAdd(obj, true) for every object held now.
   */
  addEventHandler(h: EventHandler<T>): () => void {
    this.handlers.add(h);
    if (h.onAdd) {
      for (const obj of this.store.values()) this.call(() => h.onAdd?.(obj, true));
    }
    return () => {
      this.handlers.delete(h);
    };
  }

  /**
   * Adds an index: `fn` maps an object to the values it is found under with
   * byIndex. Built in: "namespace", "owner-uid" (every owner's UID), "controller-uid".
   */
  addIndex(name: string, fn: (obj: T) => string[]): void {
    this.store.addIndex(name, fn as IndexFunc<T>);
  }

  /** The object named `name` (in `namespace`), deep-frozen; undefined if not held. */
  get(name: string, namespace?: string): T | undefined {
    return this.store.get(objectKey({ name, namespace }));
  }

  /** The object under a "namespace/name" (or "name") key. */
  getByKey(key: string): T | undefined {
    return this.store.get(key);
  }

  /** Every object held, optionally only one namespace's and those a label selector matches. */
  list(opts: { namespace?: string | undefined; labelSelector?: string | undefined } = {}): T[] {
    const objs = opts.namespace
      ? this.store.byIndex(NAMESPACE_INDEX, opts.namespace)
      : this.store.list();
    if (!opts.labelSelector) return objs;
    const sel = this.selector(opts.labelSelector);
    return objs.filter((o) => matchesLabels(sel, o.metadata.labels));
  }

  /** Objects that index `index` maps to `value`. */
  byIndex(index: string, value: string): T[] {
    return this.store.byIndex(index, value);
  }

  /** Keys of every object held. */
  keys(): string[] {
    return [...this.store.keys()];
  }

  /** Whether the first list has been stored. */
  hasSynced(): boolean {
    return this.synced;
  }

  /**
   * Resolves once the first list has been stored; rejects if `signal` aborts first,
   * or if the informer is stopped before it synced.
   */
  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.synced) return Promise.resolve();
    if (this.signal?.aborted) {
      return Promise.reject(new Error(`the ${this.type.kind} informer stopped before it synced`));
    }
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        this.syncWaiters = this.syncWaiters.filter((w) => w !== waiter);
        reject(signal?.reason ?? new Error("aborted"));
      };
      const waiter = {
        done: (): void => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
        fail: (e: Error): void => {
          signal?.removeEventListener("abort", onAbort);
          reject(e);
        },
      };
      if (signal?.aborted) {
        onAbort();
        return;
      }
      signal?.addEventListener("abort", onAbort, { once: true });
      this.syncWaiters.push(waiter);
    });
  }

  /** The newest resourceVersion this informer has seen (list, event or bookmark). */
  get resourceVersion(): string {
    return this.lastRv;
  }

  /**
   * Resolves true once the copy reflects resourceVersion `rv` for `key`: it holds
   * the object at `rv` or newer, or the informer has seen the collection up to `rv`
   * (then the copy, with or without the object, is at least that fresh); false on
   * timeout. Used for read-your-own-writes after a write returned `rv`.
   */
  waitForResourceVersion(
    key: { name: string; namespace?: string | undefined },
    rv: string,
    timeoutMs: number,
  ): Promise<boolean> {
    const k = objectKey(key);
    if (this.reflects(k, rv)) return Promise.resolve(true);
    if (timeoutMs <= 0) return Promise.resolve(false);
    return new Promise((resolve) => {
      const waiter: RvWaiter = {
        key: k,
        rv,
        done: (ok) => {
          clearTimeout(timer);
          this.rvWaiters.delete(waiter);
          resolve(ok);
        },
      };
      const timer = setTimeout(() => waiter.done(false), timeoutMs);
      this.rvWaiters.add(waiter);
    });
  }

  /** Synced, age of the last event, watch state and counters. */
  health(): InformerHealth {
    const s = this.reflector.state;
    const since = s.lastActivity || this.startedAt || Date.now();
    const h: InformerHealth = {
      synced: this.synced,
      lastEventAgeMs: Math.max(0, Date.now() - since),
      watching: s.watching,
      relists: s.relists,
      rewatches: s.rewatches,
      idleRestarts: s.idleRestarts,
      failures: s.failures,
      resourceVersion: this.lastRv,
      objects: this.store.size,
    };
    if (s.lastError !== undefined) h.lastError = s.lastError;
    return h;
  }

  /** Whether start() was called. */
  get started(): boolean {
    return this.signal !== undefined;
  }

  /** Starts listing and watching until `signal` aborts. Calling it again does nothing. */
  start(signal: AbortSignal): void {
    if (this.signal) return;
    this.signal = signal;
    this.startedAt = Date.now();
    void this.reflector.run(signal);
    const every = this.opts.resyncMs ?? 0;
    if (every > 0) {
      this.resyncTimer = setInterval(() => this.resync(), every);
      this.resyncTimer.unref?.();
    }
    signal.addEventListener(
      "abort",
      () => {
        if (this.resyncTimer) clearInterval(this.resyncTimer);
        for (const w of [...this.rvWaiters]) w.done(false);
        const waiters = this.syncWaiters;
        this.syncWaiters = [];
        const stopped = new Error(`the ${this.type.kind} informer stopped before it synced`);
        for (const w of waiters) w.fail(stopped);
      },
      { once: true },
    );
  }

  /** Re-delivers every object as onUpdate(obj, obj, true). Runs on the resync period; callable directly. */
  resync(): void {
    if (!this.synced) return;
    for (const obj of this.store.values()) {
      for (const h of this.handlers) if (h.onUpdate) this.call(() => h.onUpdate?.(obj, obj, true));
    }
  }

  // ---- reflector sink ----

  private onReplace(items: T[], rv: string): void {
    const initial = !this.synced;
    const diff = this.store.replace(items);
    for (const obj of diff.added) this.emitAdd(obj, initial);
    for (const [old, obj] of diff.updated) this.emitUpdate(old, obj);
    for (const old of diff.deleted) this.emitDelete(old);
    if (rv) this.lastRv = rv;
    if (!this.synced) {
      this.synced = true;
      const waiters = this.syncWaiters;
      this.syncWaiters = [];
      for (const w of waiters) w.done();
    }
    this.checkRvWaiters();
  }

  private onEvent(type: "ADDED" | "MODIFIED" | "DELETED", obj: T): void {
    const key = keyOf(obj);
    const held = this.store.get(key);
    const rv = obj.metadata.resourceVersion ?? "";
    if (held && rv) {
      const c = compareResourceVersions(held.metadata.resourceVersion ?? "", rv);
      // An event not newer than what is held (a replay after a reconnect): nothing new.
      if (c !== undefined && c >= 0 && !(type === "DELETED" && c === 0)) {
        this.advance(rv);
        return;
      }
    }
    if (type === "DELETED") {
      const old = this.store.delete(key);
      if (old) this.emitDelete(deepFreeze(obj) as T);
    } else {
      const old = this.store.upsert(obj);
      if (old) this.emitUpdate(old, obj);
      else this.emitAdd(obj, false);
    }
    this.advance(rv);
  }

  private onProgress(rv: string): void {
    this.advance(rv);
  }

  private advance(rv: string): void {
    if (rv && (this.lastRv === "" || atLeast(rv, this.lastRv) || !/^\d+$/.test(rv))) {
      this.lastRv = rv;
    }
    this.checkRvWaiters();
  }

  private reflects(key: string, rv: string): boolean {
    if (atLeast(this.store.get(key)?.metadata.resourceVersion, rv)) return true;
    return atLeast(this.lastRv, rv);
  }

  private checkRvWaiters(): void {
    if (this.rvWaiters.size === 0) return;
    for (const w of [...this.rvWaiters]) if (this.reflects(w.key, w.rv)) w.done(true);
  }

  private selector(text: string): LabelSelector {
    if (this.lastSelector.text !== text || !this.lastSelector.parsed) {
      this.lastSelector.parsed = parseLabelSelector(text);
      this.lastSelector.text = text;
    }
    return this.lastSelector.parsed;
  }

  private emitAdd(obj: T, initial: boolean): void {
    for (const h of this.handlers) if (h.onAdd) this.call(() => h.onAdd?.(obj, initial));
  }

  private emitUpdate(old: T, obj: T): void {
    for (const h of this.handlers) if (h.onUpdate) this.call(() => h.onUpdate?.(old, obj, false));
  }

  private emitDelete(obj: T): void {
    for (const h of this.handlers) if (h.onDelete) this.call(() => h.onDelete?.(obj));
  }

  /** Runs a handler; one that throws is logged and does not stop the others or the informer. */
  private call(fn: () => void): void {
    try {
      fn();
    } catch (e) {
      this.log.error(
        { kind: this.type.kind, err: e instanceof Error ? e.message : String(e) },
        "event handler threw",
      );
    }
  }
}
