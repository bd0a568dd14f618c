/**
 * Per-key reconcile counts: exact while few keys are busy, a sliding one-minute
 * window, and with many distinct keys a bounded count that still finds the hot
 * key and never overstates a cold one.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  RECONCILE_STATS_BUCKET_MS,
  RECONCILE_STATS_KEYS_PER_BUCKET,
  RECONCILE_STATS_TOP_KEYS,
  ReconcileCounter,
} from "../../packages/runtime/src/controller/reconcile-stats.ts";
import { FakeClock } from "./fakeclock.ts";

describe("ReconcileCounter", () => {
  it("counts each key exactly while few are busy, busiest first", () => {
    const clock = new FakeClock(1_000_000);
    const c = new ReconcileCounter(clock);
    for (let i = 0; i < 30; i++) c.record("ns/hot");
    for (let i = 0; i < 3; i++) c.record("ns/warm");
    c.record("cluster-scoped");
    expect(c.snapshot()).toEqual({
      reconciles: 34,
      topKeys: [
        { key: "ns/hot", reconciles: 30 },
        { key: "ns/warm", reconciles: 3 },
        { key: "cluster-scoped", reconciles: 1 },
      ],
    });
    expect(c.snapshot(1).topKeys).toEqual([{ key: "ns/hot", reconciles: 30 }]);
  });

  it("forgets reconciles older than the window, bucket by bucket", () => {
    const clock = new FakeClock(0);
    const c = new ReconcileCounter(clock);
    for (let i = 0; i < 10; i++) c.record("a");
    clock.advance(30_000);
    for (let i = 0; i < 5; i++) c.record("a");
    expect(c.snapshot().topKeys).toEqual([{ key: "a", reconciles: 15 }]);
    clock.advance(30_000); // the first ten are now a minute old
    expect(c.snapshot()).toEqual({ reconciles: 5, topKeys: [{ key: "a", reconciles: 5 }] });
    clock.advance(30_000);
    expect(c.snapshot()).toEqual({ reconciles: 0, topKeys: [] });
  });

  it("finds a hot key among many more distinct keys than it counts, never overstating", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 500, max: 3_000 }),
        fc.integer({ min: 5, max: 20 }),
        fc.integer({ min: 1, max: 2 ** 31 }),
        (coldKeys, every, seed) => {
          const clock = new FakeClock(0);
          const c = new ReconcileCounter(clock);
          const truth = new Map<string, number>();
          let s = seed;
          const rand = () => {
            s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
            return s / 2 ** 32;
          };
          const record = (key: string) => {
            c.record(key);
            truth.set(key, (truth.get(key) ?? 0) + 1);
          };
          // A cold start: every key once, spread over the minute, with a key in a
          // loop taking one reconcile in `every`.
          const total = coldKeys * 2;
          for (let i = 0; i < total; i++) {
            if (i % every === 0) record("ns/loop");
            else record(`ns/cold-${Math.floor(rand() * coldKeys)}`);
            clock.advance(50_000 / total);
          }
          const snap = c.snapshot();
          expect(snap.reconciles).toBe([...truth.values()].reduce((a, b) => a + b, 0));
          expect(snap.topKeys.length).toBeLessThanOrEqual(RECONCILE_STATS_TOP_KEYS);
          expect(snap.topKeys[0].key).toBe("ns/loop");
          for (const k of snap.topKeys) {
            expect(k.reconciles).toBeLessThanOrEqual(truth.get(k.key) ?? 0);
          }
          // The loop's share of each bucket is far above 1/KEYS_PER_BUCKET: it can only
          // lose the few reconciles before it outgrows the coldest counter, per bucket.
          expect(1 / every).toBeGreaterThan(2 / RECONCILE_STATS_KEYS_PER_BUCKET);
          const buckets = Math.floor(50_000 / RECONCILE_STATS_BUCKET_MS) + 1;
          expect(snap.topKeys[0].reconciles).toBeGreaterThanOrEqual(
            (truth.get("ns/loop") ?? 0) - 3 * buckets,
          );
        },
      ),
      { numRuns: 25 },
    );
  });

  it("replaces the same counter as a full scan for the least one would, in any sequence", () => {
    // The textbook Space-Saving step: replace the first (in insertion order) least counter.
    const reference = (keys: string[]): [string, number, number][] => {
      const counters = new Map<string, { count: number; error: number }>();
      for (const key of keys) {
        const c = counters.get(key);
        if (c) c.count++;
        else if (counters.size < RECONCILE_STATS_KEYS_PER_BUCKET) {
          counters.set(key, { count: 1, error: 0 });
        } else {
          let minKey = "";
          let min = Number.POSITIVE_INFINITY;
          for (const [k, v] of counters) {
            if (v.count < min) {
              min = v.count;
              minKey = k;
            }
          }
          counters.delete(minKey);
          counters.set(key, { count: min + 1, error: min });
        }
      }
      return [...counters].map(([k, v]) => [k, v.count - v.error, v.count]);
    };
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 199 }), {
          minLength: 100,
          maxLength: 3_000,
          size: "max",
        }),
        fc.integer({ min: 1, max: 30 }),
        (picks, hotShare) => {
          // A few hot keys among many: picks below hotShare go to one of 3 keys.
          const keys = picks.map((p) => (p < hotShare ? `hot-${p % 3}` : `k-${p}`));
          const c = new ReconcileCounter(new FakeClock(0));
          for (const k of keys) c.record(k);
          const want = reference(keys)
            .filter(([, sure]) => sure > 0)
            .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
            .slice(0, RECONCILE_STATS_KEYS_PER_BUCKET)
            .map(([key, sure]) => ({ key, reconciles: sure }));
          expect(c.snapshot(RECONCILE_STATS_KEYS_PER_BUCKET).topKeys).toEqual(want);
          expect(c.snapshot().reconciles).toBe(keys.length);
        },
      ),
      { numRuns: 100 },
    );
  });
});
