/**
 * The informer's local copy of a collection: objects by key ("namespace/name", or
 * "name" for cluster-scoped ones), deep-frozen so that no reader can change what
 * others read, with secondary indexes kept up to date on every write.
 */

import type { KubeObject } from "@setpoint/api";
import { deepFreeze } from "@setpoint/api";

/** Maps an object to the index values it is found under. */
export type IndexFunc<T extends KubeObject> = (obj: T) => string[];

/** Index of objects by namespace (cluster-scoped objects are not in it). */
export const NAMESPACE_INDEX = "namespace";
/** Index of objects by the UID of each of their owners. */
export const OWNER_UID_INDEX = "owner-uid";
/** Index of objects by the UID of their controlling owner (`controller: true`). */
export const CONTROLLER_UID_INDEX = "controller-uid";

/** The key of an object: "namespace/name", or "name" when it has no namespace. */
export function objectKey(ref: {
  name?: string | undefined;
  namespace?: string | undefined;
}): string {
  return ref.namespace ? `${ref.namespace}/${ref.name ?? ""}` : (ref.name ?? "");
}

/** The key of a stored object. */
export function keyOf(obj: KubeObject): string {
  return objectKey(obj.metadata);
}

/** The built-in indexes every store has. */
export function builtinIndexes<T extends KubeObject>(): Record<string, IndexFunc<T>> {
  return {
    [NAMESPACE_INDEX]: (o) => (o.metadata.namespace ? [o.metadata.namespace] : []),
    [OWNER_UID_INDEX]: (o) => (o.metadata.ownerReferences ?? []).map((r) => r.uid),
    [CONTROLLER_UID_INDEX]: (o) =>
      (o.metadata.ownerReferences ?? []).filter((r) => r.controller === true).map((r) => r.uid),
  };
}

interface Index<T extends KubeObject> {
  fn: IndexFunc<T>;
  /** value → keys */
  entries: Map<string, Set<string>>;
  /** key → the values it was indexed under (so removal never depends on re-running `fn`) */
  valuesOf: Map<string, string[]>;
}

/** What `replace` changed. */
export interface ReplaceResult<T> {
  added: T[];
  updated: [old: T, current: T][];
  deleted: T[];
}

export class ObjectStore<T extends KubeObject> {
  private readonly items = new Map<string, T>();
  private readonly indexes = new Map<string, Index<T>>();

  constructor(indexers: Record<string, IndexFunc<T>> = builtinIndexes<T>()) {
    for (const [name, fn] of Object.entries(indexers)) this.addIndex(name, fn);
  }

  get size(): number {
    return this.items.size;
  }

  /** Adds an index and fills it from the current objects. Replaces an index of the same name. */
  addIndex(name: string, fn: IndexFunc<T>): void {
    const index: Index<T> = { fn, entries: new Map(), valuesOf: new Map() };
    this.indexes.set(name, index);
    for (const [key, obj] of this.items) this.indexInto(index, key, obj);
  }

  /** Whether an index of that name exists. */
  hasIndex(name: string): boolean {
    return this.indexes.has(name);
  }

  get(key: string): T | undefined {
    return this.items.get(key);
  }

  /** Every object, in insertion order. */
  list(): T[] {
    return [...this.items.values()];
  }

  keys(): IterableIterator<string> {
    return this.items.keys();
  }

  values(): IterableIterator<T> {
    return this.items.values();
  }

  /** Objects whose index `name` yields `value`. Throws on an unknown index. */
  byIndex(name: string, value: string): T[] {
    const index = this.indexes.get(name);
    if (!index) throw new Error(`no index named "${name}"`);
    const keys = index.entries.get(value);
    if (!keys) return [];
    const out: T[] = [];
    for (const k of keys) {
      const obj = this.items.get(k);
      if (obj) out.push(obj);
    }
    return out;
  }

  /** Index values that currently have objects. */
  indexValues(name: string): string[] {
    const index = this.indexes.get(name);
    if (!index) throw new Error(`no index named "${name}"`);
    return [...index.entries.keys()];
  }

  /** Stores `obj` (deep-frozen in place) and returns the object it replaced, if any. */
  upsert(obj: T): T | undefined {
    deepFreeze(obj);
    const key = keyOf(obj);
    const old = this.items.get(key);
    if (old) this.unindex(key);
    this.items.set(key, obj);
    for (const index of this.indexes.values()) this.indexInto(index, key, obj);
    return old;
  }

  /** Removes the object under `key` and returns it, if there was one. */
  delete(key: string): T | undefined {
    const old = this.items.get(key);
    if (!old) return undefined;
    this.unindex(key);
    this.items.delete(key);
    return old;
  }

  /**
   * Makes the store hold exactly `objs` and reports the difference: objects not
   * held before, objects whose resourceVersion changed, objects no longer present.
   */
  replace(objs: T[]): ReplaceResult<T> {
    const result: ReplaceResult<T> = { added: [], updated: [], deleted: [] };
    const seen = new Set<string>();
    for (const obj of objs) {
      const key = keyOf(obj);
      seen.add(key);
      const old = this.items.get(key);
      if (old && old.metadata.resourceVersion === obj.metadata.resourceVersion) continue;
      this.upsert(obj);
      if (old) result.updated.push([old, obj]);
      else result.added.push(obj);
    }
    for (const key of [...this.items.keys()]) {
      if (seen.has(key)) continue;
      const old = this.delete(key);
      if (old) result.deleted.push(old);
    }
    return result;
  }

  private indexInto(index: Index<T>, key: string, obj: T): void {
    const values = safeValues(index.fn, obj);
    if (values.length === 0) return;
    index.valuesOf.set(key, values);
    for (const value of values) {
      let keys = index.entries.get(value);
      if (!keys) {
        keys = new Set();
        index.entries.set(value, keys);
      }
      keys.add(key);
    }
  }

  private unindex(key: string): void {
    for (const index of this.indexes.values()) {
      const values = index.valuesOf.get(key);
      if (!values) continue;
      index.valuesOf.delete(key);
      for (const value of values) {
        const keys = index.entries.get(value);
        if (!keys) continue;
        keys.delete(key);
        if (keys.size === 0) index.entries.delete(value);
      }
    }
  }
}

/** An index function's values; one that throws indexes the object under nothing. */
function safeValues<T extends KubeObject>(fn: IndexFunc<T>, obj: T): string[] {
  try {
    const v = fn(obj);
    return Array.isArray(v) ? [...new Set(v.filter((x) => typeof x === "string"))] : [];
  } catch {
    return [];
  }
}
