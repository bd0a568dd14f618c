/**
 * Expectations, as Kubernetes' controllers keep them: after creating or
 * deleting Pods, an owner waits until its informer has seen every one of those
 * creations and deletions before it counts Pods again, so a cache that lags
 * behind the writes never makes it create (or delete) twice. Informer events
 * lower the counts; an expectation older than EXPECTATIONS_TTL_MS is treated
 * as met (a lost watch event must not block the owner forever).
 */

/** After this long an owner's unmet expectations no longer hold it back (Kubernetes: 5 min). */
export const EXPECTATIONS_TTL_MS = 5 * 60_000;

interface Expectation {
  adds: number;
  dels: number;
  /** UIDs whose deletion is awaited (a deletion is seen once per UID). */
  deleting: Set<string>;
  at: number;
}

export class Expectations {
  private readonly byKey = new Map<string, Expectation>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Whether `key` may act on what its cache shows (no expectations, met, or expired). */
  satisfied(key: string): boolean {
    const e = this.byKey.get(key);
    if (!e) return true;
    if ((e.adds <= 0 && e.dels <= 0) || this.now() - e.at > EXPECTATIONS_TTL_MS) {
      this.byKey.delete(key);
      return true;
    }
    return false;
  }

  /** Records that `key` is about to create `adds` objects. */
  expectCreations(key: string, adds: number): void {
    this.byKey.set(key, { adds, dels: 0, deleting: new Set(), at: this.now() });
  }

  /** Records that `key` is about to delete the objects with these UIDs. */
  expectDeletions(key: string, uids: readonly string[]): void {
    this.byKey.set(key, { adds: 0, dels: uids.length, deleting: new Set(uids), at: this.now() });
  }

  /** An object of `key` was seen created (or its creation failed and will not be seen). */
  creationObserved(key: string): void {
    const e = this.byKey.get(key);
    if (e) e.adds--;
  }

  /** An object of `key` was seen deleted (or its deletion failed and will not be seen). */
  deletionObserved(key: string, uid: string): void {
    const e = this.byKey.get(key);
    if (e?.deleting.delete(uid)) e.dels--;
  }

  /** Forgets `key` (its owner is gone). */
  delete(key: string): void {
    this.byKey.delete(key);
  }
}
