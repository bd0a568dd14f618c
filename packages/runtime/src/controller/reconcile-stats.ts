/**
 * Per-key reconcile counts over a sliding window, for hot-loop detection: a key
 * reconciled far more often than anything changes (a reconcile that requeues
 * itself at once, or wakes on its own write) shows as a key with a high count.
 * The manager publishes each controller's busiest keys on its leader Lease
 * (`RECONCILE_STATS_ANNOTATION`), where `setpoint doctor` reads them.
 *
 * Memory is bounded whatever the number of keys: the window is
 * `RECONCILE_STATS_BUCKETS` buckets of `RECONCILE_STATS_BUCKET_MS`, and each
 * bucket counts at most `RECONCILE_STATS_KEYS_PER_BUCKET` keys with the
 * Space-Saving algorithm: a new key replaces the least counted one and inherits
 * its count as a possible overcount. So a controller holds at most
 * 12 × 64 = 768 counters (under 200 KiB with 100-byte keys), and any key that
 * takes more than 1/64 of a bucket's reconciles is always among them. Published
 * counts are lower bounds (the inherited overcount taken off): a hot key may be
 * undercounted after a burst of other keys, never a cold key overcounted.
 */
import { type Clock, realClock } from "../clock.ts";

/** The window over which reconciles are counted. */
export const RECONCILE_STATS_WINDOW_MS = 60_000;
/** Buckets the window is kept in (the oldest is dropped as time moves on). */
export const RECONCILE_STATS_BUCKETS = 12;
/** Length of one bucket. */
export const RECONCILE_STATS_BUCKET_MS = RECONCILE_STATS_WINDOW_MS / RECONCILE_STATS_BUCKETS;
/** Keys counted per bucket. */
export const RECONCILE_STATS_KEYS_PER_BUCKET = 64;
/** Keys published per controller. */
export const RECONCILE_STATS_TOP_KEYS = 10;

/** How often one key was reconciled in the window. */
export interface KeyReconciles {
  /** "namespace/name", or "name" for a cluster-scoped object. */
  key: string;
  reconciles: number;
}

/** One controller's reconciles in the window. */
export interface ControllerReconcileStats {
  /** Every reconcile (exact). */
  reconciles: number;
  /** The busiest keys, most first (lower bounds; see the module doc). */
  topKeys: KeyReconciles[];
}

/** What the manager publishes in `RECONCILE_STATS_ANNOTATION`. */
export interface ReconcileStats {
  windowSeconds: number;
  controllers: Record<string, ControllerReconcileStats>;
}

interface Counter {
  count: number;
  /** What the key inherited when it replaced another (its possible overcount). */
  error: number;
}

interface Bucket {
  /** floor(time / RECONCILE_STATS_BUCKET_MS) */
  slot: number;
  total: number;
  counters: Map<string, Counter>;
  /**
   * No counter holds less (counts only grow, and a replacement starts above the
   * one it replaces), so a counter found holding exactly this is a least one.
   */
  floor: number;
}

/** One controller's per-key reconcile counts over the sliding window. */
export class ReconcileCounter {
  private readonly buckets: Bucket[] = [];

  constructor(private readonly clock: Clock = realClock) {}

  /** Counts one reconcile of `key`. */
  record(key: string): void {
    const bucket = this.current();
    bucket.total++;
    const c = bucket.counters.get(key);
    if (c) {
      c.count++;
      return;
    }
    if (bucket.counters.size < RECONCILE_STATS_KEYS_PER_BUCKET) {
      bucket.counters.set(key, { count: 1, error: 0 });
      return;
    }
    // The first least counter (in insertion order) is replaced. Most often one
    // holding `floor` comes early; only when none is left is the floor raised by
    // a full scan (once per RECONCILE_STATS_KEYS_PER_BUCKET replacements at most).
    let minKey: string | undefined;
    let min = 0;
    for (const [k, v] of bucket.counters) {
      if (v.count === bucket.floor) {
        minKey = k;
        min = v.count;
        break;
      }
    }
    if (minKey === undefined) {
      min = Number.POSITIVE_INFINITY;
      for (const [k, v] of bucket.counters) {
        if (v.count < min) {
          min = v.count;
          minKey = k;
        }
      }
      if (minKey === undefined) return;
      bucket.floor = min;
    }
    bucket.counters.delete(minKey);
    bucket.counters.set(key, { count: min + 1, error: min });
  }

  /** The reconciles of the window and its `top` busiest keys. */
  snapshot(top = RECONCILE_STATS_TOP_KEYS): ControllerReconcileStats {
    this.prune();
    let reconciles = 0;
    const perKey = new Map<string, number>();
    for (const b of this.buckets) {
      reconciles += b.total;
      for (const [key, c] of b.counters) {
        const sure = c.count - c.error;
        if (sure > 0) perKey.set(key, (perKey.get(key) ?? 0) + sure);
      }
    }
    const topKeys = [...perKey]
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .slice(0, top)
      .map(([key, n]) => ({ key, reconciles: n }));
    return { reconciles, topKeys };
  }

  private slot(): number {
    return Math.floor(this.clock.now() / RECONCILE_STATS_BUCKET_MS);
  }

  private current(): Bucket {
    const slot = this.slot();
    const last = this.buckets[this.buckets.length - 1];
    if (last?.slot === slot) return last;
    const b: Bucket = { slot, total: 0, counters: new Map(), floor: 1 };
    this.buckets.push(b);
    this.prune();
    return b;
  }

  /** Drops buckets that left the window. */
  private prune(): void {
    const oldest = this.slot() - RECONCILE_STATS_BUCKETS + 1;
    while (this.buckets.length > 0 && this.buckets[0].slot < oldest) this.buckets.shift();
  }
}
