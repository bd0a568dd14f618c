/**
 * A set of field paths, stored as a trie: at each level, the path elements that are
 * members of the set (`members`) and the subsets below path elements (`children`).
 * A path can be both a member and have children: in FieldsV1 that node carries the
 * `.` marker ("this node itself"), e.g. a keyed list item that is owned as an item
 * and whose fields are owned too:
 *
 *     {"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{}}}}}
 *
 * Set operations follow structured-merge-diff: `difference` removes exact members
 * (not what lies below them), `recursiveDifference` also removes everything below a
 * member of the other set.
 *
 * Invariant: a child set is never empty (setChild drops empty ones, and insert
 * only creates the nodes of the path it adds), so emptiness is known at once.
 */

import { isJsonObject, setMember } from "../deep-copy.ts";
import type { FieldsV1 } from "../meta.ts";
import { canonicalPathKey, comparePathKeys, type Path, type PathKey } from "./field-path.ts";
import { sortInPlace } from "./value.ts";

/** Thrown when a FieldsV1 document cannot be decoded. */
export class FieldsV1Error extends Error {
  override name = "FieldsV1Error";
}

/** The marker of a node that is itself a member of the set. */
const SELF = ".";

export class FieldSet {
  private readonly members = new Set<PathKey>();
  private readonly children = new Map<PathKey, FieldSet>();

  /** A set holding the given paths. */
  static of(...paths: Path[]): FieldSet {
    const s = new FieldSet();
    for (const p of paths) s.insert(p);
    return s;
  }

  /** Adds a path; the empty path (the whole object) is never tracked. */
  insert(path: Path): void {
    if (path.length === 0) return;
    let node: FieldSet = this;
    for (let i = 0; i < path.length - 1; i++) node = node.descend(path[i]);
    node.members.add(path[path.length - 1]);
  }

  /** Adds a member at this level. */
  addMember(key: PathKey): void {
    this.members.add(key);
  }

  /** The child set below `key`, created if missing (insert adds a path below it at once). */
  private descend(key: PathKey): FieldSet {
    let c = this.children.get(key);
    if (!c) {
      c = new FieldSet();
      this.children.set(key, c);
    }
    return c;
  }

  /** Attaches a child set below `key` (dropped if empty). */
  setChild(key: PathKey, child: FieldSet): void {
    if (child.empty) this.children.delete(key);
    else this.children.set(key, child);
  }

  /** True if the path is a member. */
  has(path: Path): boolean {
    if (path.length === 0) return false;
    let node: FieldSet | undefined = this;
    for (let i = 0; i < path.length - 1 && node; i++) node = node.children.get(path[i]);
    return node?.members.has(path[path.length - 1]) ?? false;
  }

  /** True if `key` is a member at this level. */
  hasMember(key: PathKey): boolean {
    return this.members.has(key);
  }

  /** The subset below `key` at this level (structured-merge-diff's WithPrefix), if any. */
  child(key: PathKey): FieldSet | undefined {
    return this.children.get(key);
  }

  /** The members at this level. */
  memberKeys(): IterableIterator<PathKey> {
    return this.members.values();
  }

  /** The child sets at this level. */
  childEntries(): IterableIterator<[PathKey, FieldSet]> {
    return this.children.entries();
  }

  /** True if the set holds no path. */
  get empty(): boolean {
    return this.members.size === 0 && this.children.size === 0;
  }

  /** The number of paths in the set. */
  get size(): number {
    let n = this.members.size;
    for (const c of this.children.values()) n += c.size;
    return n;
  }

  /** A deep copy. */
  clone(): FieldSet {
    const out = new FieldSet();
    for (const m of this.members) out.members.add(m);
    for (const [k, c] of this.children) out.children.set(k, c.clone());
    return out;
  }

  /** Paths in either set. */
  union(other: FieldSet): FieldSet {
    if (other.empty) return this.clone();
    if (this.empty) return other.clone();
    const out = this.clone();
    for (const m of other.members) out.members.add(m);
    for (const [k, c] of other.children) {
      const mine = out.children.get(k);
      out.setChild(k, mine ? mine.union(c) : c.clone());
    }
    return out;
  }

  /** Paths in both sets. */
  intersection(other: FieldSet): FieldSet {
    const out = new FieldSet();
    for (const m of this.members) if (other.members.has(m)) out.members.add(m);
    for (const [k, c] of this.children) {
      const theirs = other.children.get(k);
      if (theirs) out.setChild(k, c.intersection(theirs));
    }
    return out;
  }

  /** Paths of this set that are not members of `other` (paths below them stay). */
  difference(other: FieldSet): FieldSet {
    if (other.empty) return this.clone();
    const out = new FieldSet();
    for (const m of this.members) if (!other.members.has(m)) out.members.add(m);
    for (const [k, c] of this.children) {
      const theirs = other.children.get(k);
      out.setChild(k, theirs ? c.difference(theirs) : c.clone());
    }
    return out;
  }

  /** Paths of this set that are not in `other` nor below a member of `other`. */
  recursiveDifference(other: FieldSet): FieldSet {
    const out = new FieldSet();
    for (const m of this.members) if (!other.members.has(m)) out.members.add(m);
    for (const [k, c] of this.children) {
      if (other.members.has(k)) continue;
      const theirs = other.children.get(k);
      out.setChild(k, theirs ? c.recursiveDifference(theirs) : c.clone());
    }
    return out;
  }

  /** True if both sets hold the same paths. */
  equals(other: FieldSet): boolean {
    if (this === other) return true;
    if (this.members.size !== other.members.size) return false;
    if (this.children.size !== other.children.size) return false;
    for (const m of this.members) if (!other.members.has(m)) return false;
    for (const [k, c] of this.children) {
      const t = other.children.get(k);
      if (!t || !c.equals(t)) return false;
    }
    return true;
  }

  /** Every path of the set, in Kubernetes' order. */
  paths(): PathKey[][] {
    const out: PathKey[][] = [];
    this.collect([], out);
    return out;
  }

  private collect(prefix: PathKey[], out: PathKey[][]): void {
    for (const k of this.sortedKeys()) {
      const path = [...prefix, k];
      if (this.members.has(k)) out.push(path);
      this.children.get(k)?.collect(path, out);
    }
  }

  private sortedKeys(): PathKey[] {
    const keys: PathKey[] = [...this.members];
    for (const k of this.children.keys()) if (!this.members.has(k)) keys.push(k);
    return keys.length > 1 ? sortInPlace(keys, comparePathKeys) : keys;
  }

  /** The FieldsV1 form, keys in the order Kubernetes writes them. */
  toFieldsV1(): FieldsV1 {
    return this.encode(false);
  }

  private encode(self: boolean): FieldsV1 {
    const out: FieldsV1 = {};
    if (self) out[SELF] = {};
    for (const k of this.sortedKeys()) {
      const c = this.children.get(k);
      setMember(out, k, c ? c.encode(this.members.has(k)) : {});
    }
    return out;
  }

  /**
   * Decodes FieldsV1. Path elements with an unknown type letter are ignored, as
   * Kubernetes does; anything else malformed throws FieldsV1Error.
   */
  static fromFieldsV1(fields: unknown): FieldSet {
    if (!isJsonObject(fields)) throw new FieldsV1Error("FieldsV1 must be a JSON object");
    const out = new FieldSet();
    decodeInto(out, fields);
    return out;
  }
}

/** Decodes the entries of a FieldsV1 object into `set`; returns true if "." was present. */
function decodeInto(set: FieldSet, obj: Record<string, unknown>): boolean {
  let self = false;
  for (const raw of Object.keys(obj)) {
    const value = obj[raw];
    if (raw === SELF) {
      self = true;
      continue;
    }
    if (!isJsonObject(value))
      throw new FieldsV1Error(`value of ${JSON.stringify(raw)} must be an object`);
    let key: PathKey | undefined;
    try {
      key = canonicalPathKey(raw);
    } catch (e) {
      throw new FieldsV1Error(`parsing key as path element: ${(e as Error).message}`);
    }
    if (key === undefined) continue;
    const child = new FieldSet();
    const childSelf = decodeInto(child, value);
    if (child.empty || childSelf) set.addMember(key);
    if (!child.empty) set.setChild(key, set.child(key)?.union(child) ?? child);
  }
  return self;
}
