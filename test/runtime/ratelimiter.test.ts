import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_BASE_DELAY_MS,
  DEFAULT_MAX_DELAY_MS,
  defaultControllerRateLimiter,
  ExponentialBackoffRateLimiter,
  MaxOfRateLimiter,
  TokenBucketRateLimiter,
} from "../../packages/runtime/src/controller/rate-limiter.ts";
import { FakeClock } from "./fakeclock.ts";

describe("ExponentialBackoffRateLimiter", () => {
  it("doubles from the base delay up to the cap, per key", () => {
    const l = new ExponentialBackoffRateLimiter({ jitter: 0 });
    const delays = Array.from({ length: 30 }, () => l.when("a"));
    expect(delays.slice(0, 4)).toEqual([5, 10, 20, 40]);
    expect(delays.at(-1)).toBe(DEFAULT_MAX_DELAY_MS);
    for (let i = 1; i < delays.length; i++) expect(delays[i]).toBeGreaterThanOrEqual(delays[i - 1]);
    expect(l.retries("a")).toBe(30);
    // Another key has its own history.
    expect(l.when("b")).toBe(DEFAULT_BASE_DELAY_MS);
  });

  it("forget resets a key to the base delay", () => {
    const l = new ExponentialBackoffRateLimiter({ jitter: 0 });
    l.when("a");
    l.when("a");
    l.when("a");
    l.forget("a");
    expect(l.retries("a")).toBe(0);
    expect(l.when("a")).toBe(DEFAULT_BASE_DELAY_MS);
  });

  it("never overflows for very many failures", () => {
    const l = new ExponentialBackoffRateLimiter({ jitter: 0 });
    for (let i = 0; i < 2000; i++) l.when("a");
    expect(l.when("a")).toBe(DEFAULT_MAX_DELAY_MS);
  });

  it("jitter only shortens, within the configured fraction", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 60 }),
        fc.double({ min: 0, max: 0.99, noNaN: true }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (failures, jitter, r) => {
          const l = new ExponentialBackoffRateLimiter({ jitter, random: () => r });
          for (let i = 0; i < failures; i++) l.when("k");
          const d = l.when("k");
          const full = l.delayFor(failures);
          expect(d).toBeLessThanOrEqual(full);
          expect(d).toBeGreaterThanOrEqual(full * (1 - jitter) - 1e-9);
          expect(full).toBeLessThanOrEqual(DEFAULT_MAX_DELAY_MS);
        },
      ),
    );
  });

  it("rejects nonsensical settings", () => {
    expect(() => new ExponentialBackoffRateLimiter({ baseDelayMs: 0 })).toThrow(RangeError);
    expect(() => new ExponentialBackoffRateLimiter({ baseDelayMs: 10, maxDelayMs: 5 })).toThrow();
    expect(() => new ExponentialBackoffRateLimiter({ jitter: 1 })).toThrow(RangeError);
  });
});

describe("TokenBucketRateLimiter", () => {
  it("lets a burst through, then spaces retries at the rate", () => {
    const clock = new FakeClock();
    const l = new TokenBucketRateLimiter({ qps: 10, burst: 100, clock });
    for (let i = 0; i < 100; i++) expect(l.when(`k${i}`)).toBe(0);
    expect(l.when("x")).toBeCloseTo(100);
    expect(l.when("y")).toBeCloseTo(200);
    // Refills with time, never beyond the burst.
    clock.advance(60_000);
    for (let i = 0; i < 100; i++) expect(l.when(`z${i}`)).toBe(0);
    expect(l.when("w")).toBeGreaterThan(0);
  });

  it("the n-th token beyond the burst waits (n - burst) / qps", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 200 }),
        (qps, burst, n) => {
          const l = new TokenBucketRateLimiter({ qps, burst, clock: new FakeClock() });
          let last = 0;
          for (let i = 0; i < n; i++) last = l.when("k");
          const expected = Math.max(0, ((n - burst) / qps) * 1000);
          expect(last).toBeCloseTo(expected, 6);
        },
      ),
    );
  });
});

describe("defaultControllerRateLimiter", () => {
  it("is the slower of per-key backoff and the overall bucket", () => {
    const clock = new FakeClock();
    const l = defaultControllerRateLimiter({ clock, jitter: 0 });
    expect(l.when("a")).toBe(5);
    expect(l.when("a")).toBe(10);
    // 98 more distinct keys exhaust the burst of 100...
    for (let i = 0; i < 98; i++) l.when(`k${i}`);
    // ...so a fresh key now waits for the bucket, not for its own 5 ms.
    expect(l.when("fresh")).toBeCloseTo(100);
    expect(l.retries("a")).toBe(2);
    l.forget("a");
    expect(l.retries("a")).toBe(0);
  });

  it("MaxOf needs a limiter", () => {
    expect(() => new MaxOfRateLimiter()).toThrow(RangeError);
  });
});
