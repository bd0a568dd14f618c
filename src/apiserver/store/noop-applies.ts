/**
 * Remembered no-op applies. Controllers and GitOps tools apply the same
 * configuration again and again; once an apply changed nothing, the same request
 * (same object, same configuration bytes, same manager and options, same type
 * definition) against the same stored revision of the object changes nothing
 * again, and gets the same answer. This remembers that answer, so that the
 * repeat costs a storage read (to check the object's revision) instead of a
 * decode, merge, comparison and validation.
 *
 * An entry is used only while the object's revision is the one it was made at
 * (any write moves it) and the request addresses the very same version
 * definition (a CRD change makes new ones), so a remembered answer is always the
 * one the full apply would give.
 */
import type { VersionDefinition } from "../../registry/types.ts";

/** Most no-op applies remembered (least recently used ones are forgotten). */
export const NOOP_APPLY_ENTRIES = 4096;
/** Largest request body or response remembered, in bytes. */
export const NOOP_APPLY_MAX_BYTES = 64 * 1024;

/** A remembered answer. */
export interface NoopApply {
  /** The version definition the apply was made against. */
  version: VersionDefinition;
  /** The object's revision the apply changed nothing at. */
  revision: number;
  /** The response body (JSON). */
  json: string;
  /** Warnings the apply answered with. */
  warnings: string[];
}

export class NoopApplies {
  readonly #entries = new Map<string, NoopApply>();

  /** The identity of an apply request: where, how (query), what (body). */
  static key(objectKey: string, subresource: string, query: string, body: string): string {
    return `${objectKey}\u0000${subresource}\u0000${query}\u0000${body}`;
  }

  /** Whether a request body is small enough to be remembered. */
  static fits(body: Buffer): boolean {
    return body.length <= NOOP_APPLY_MAX_BYTES;
  }

  /** The answer remembered for `key`, if it was made against `version`. */
  get(key: string, version: VersionDefinition): NoopApply | undefined {
    const e = this.#entries.get(key);
    if (!e) return undefined;
    if (e.version !== version) {
      this.#entries.delete(key);
      return undefined;
    }
    // Most recently used last.
    this.#entries.delete(key);
    this.#entries.set(key, e);
    return e;
  }

  /** Remembers the answer of a no-op apply. */
  set(key: string, entry: NoopApply): void {
    if (entry.json.length > NOOP_APPLY_MAX_BYTES) return;
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    if (this.#entries.size > NOOP_APPLY_ENTRIES) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
  }

  /** Forgets `key` (its object changed). */
  delete(key: string): void {
    this.#entries.delete(key);
  }

  /** Entries held. */
  get size(): number {
    return this.#entries.size;
  }
}
