import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { ExponentialBackoffRateLimiter } from "../../packages/runtime/src/controller/rate-limiter.ts";
import {
  type QueueMetricsSink,
  WorkQueue,
} from "../../packages/runtime/src/controller/work-queue.ts";
import { FakeClock } from "./fakeclock.ts";

function queue(clock = new FakeClock()) {
  const q = new WorkQueue({
    clock,
    rateLimiter: new ExponentialBackoffRateLimiter({ jitter: 0 }),
  });
  return { q, clock };
}

describe("WorkQueue", () => {
  it("collapses a key added many times while waiting", () => {
    const { q } = queue();
    for (let i = 0; i < 5; i++) q.add("a");
    q.add("b");
    expect(q.len()).toBe(2);
    expect(q.tryGet()).toBe("a");
    expect(q.tryGet()).toBe("b");
    expect(q.tryGet()).toBeUndefined();
  });

  it("never hands a key in flight to a second worker, and runs it once more after done", () => {
    const { q } = queue();
    q.add("a");
    expect(q.tryGet()).toBe("a");
    q.add("a");
    q.add("a");
    expect(q.tryGet()).toBeUndefined();
    q.done("a");
    expect(q.tryGet()).toBe("a");
    q.done("a");
    expect(q.tryGet()).toBeUndefined();
    expect(q.size).toBe(0);
  });

  it("backs off failures and does not let events bypass or inflate the backoff", () => {
    const { q, clock } = queue();
    q.add("a");
    q.tryGet();
    q.addRateLimited("a"); // 5 ms
    q.done("a");
    q.tryGet();
    expect(q.tryGet()).toBeUndefined();
    clock.advance(5);
    expect(q.tryGet()).toBe("a");
    q.addRateLimited("a"); // 10 ms
    q.done("a");
    clock.advance(3);
    for (let i = 0; i < 10; i++) q.add("a"); // events during the backoff
    expect(q.numRequeues("a")).toBe(2);
    expect(q.tryGet()).toBeUndefined();
    expect(q.scheduledAt("a")).toBe(15);
    clock.advance(6);
    expect(q.tryGet()).toBeUndefined();
    clock.advance(1);
    expect(q.tryGet()).toBe("a");
    q.forget("a");
    q.done("a");
    expect(q.numRequeues("a")).toBe(0);
    // After a success the next failure starts from the base delay again.
    q.add("a");
    q.tryGet();
    q.addRateLimited("a");
    q.done("a");
    expect(q.scheduledAt("a")).toBe(clock.now() + 5);
  });

  it("requeueAfter is not a failure, and an event brings it forward", () => {
    const { q, clock } = queue();
    q.addAfter("a", 1000);
    expect(q.numRequeues("a")).toBe(0);
    clock.advance(999);
    expect(q.tryGet()).toBeUndefined();
    clock.advance(1);
    expect(q.tryGet()).toBe("a");
    q.done("a");
    q.addAfter("a", 1000);
    clock.advance(10);
    q.add("a");
    expect(q.tryGet()).toBe("a");
    q.done("a");
    // The later requeue was merged into the earlier run.
    clock.advance(2000);
    expect(q.tryGet()).toBeUndefined();
  });

  it("a failure while waiting for a requeue retries at the backoff, not the requeue time", () => {
    const { q, clock } = queue();
    q.addAfter("a", 10_000);
    q.addRateLimited("a");
    clock.advance(5);
    expect(q.tryGet()).toBe("a");
  });

  it("serves the initial and live lanes alternately", () => {
    const { q } = queue();
    for (let i = 0; i < 1000; i++) q.add(`init-${i}`, { lane: "initial" });
    q.add("live-1");
    q.add("live-2");
    const order = [q.tryGet(), q.tryGet(), q.tryGet(), q.tryGet(), q.tryGet()];
    expect(order).toEqual(["live-1", "init-0", "live-2", "init-1", "init-2"]);
  });

  it("a live event for a key waiting in the initial lane moves it ahead", () => {
    const { q } = queue();
    for (let i = 0; i < 100; i++) q.add(`k${i}`, { lane: "initial" });
    q.add("k99");
    expect(q.tryGet()).toBe("k99");
    expect(q.len()).toBe(99);
  });

  it("get waits for a key and wakes when one becomes ready", async () => {
    const { q, clock } = queue();
    const got = q.get();
    q.addAfter("a", 50);
    clock.advance(50);
    expect(await got).toBe("a");
  });

  it("get resolves undefined on abort and on shutdown", async () => {
    const { q } = queue();
    const ac = new AbortController();
    const aborted = q.get(ac.signal);
    const shut = q.get();
    ac.abort();
    expect(await aborted).toBeUndefined();
    q.shutDown();
    expect(await shut).toBeUndefined();
    q.add("a");
    expect(await q.get()).toBeUndefined();
  });

  it("50 workers waiting on one signal add one abort listener, and all wake on abort", async () => {
    const { q } = queue();
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
    process.on("warning", onWarning);
    try {
      const ac = new AbortController();
      const gets = Array.from({ length: 50 }, () => q.get(ac.signal));
      expect(getEventListeners(ac.signal, "abort")).toHaveLength(1);
      // Keys go to the waiters in turn.
      for (let i = 0; i < 10; i++) q.add(`k${i}`);
      expect(await Promise.all(gets.slice(0, 10))).toEqual(
        Array.from({ length: 10 }, (_, i) => `k${i}`),
      );
      expect(getEventListeners(ac.signal, "abort")).toHaveLength(1);
      ac.abort();
      expect(await Promise.all(gets.slice(10))).toEqual(Array(40).fill(undefined));
      expect(getEventListeners(ac.signal, "abort")).toHaveLength(0);
      expect(await q.get(ac.signal)).toBeUndefined();

      // Waiters that come and go leave no listener behind.
      const live = new AbortController();
      for (let round = 0; round < 5; round++) {
        const batch = Array.from({ length: 20 }, () => q.get(live.signal));
        for (let i = 0; i < 20; i++) q.add(`r${round}-${i}`);
        const keys = await Promise.all(batch);
        expect(keys.every((k) => k?.startsWith(`r${round}-`))).toBe(true);
        for (const k of keys) q.done(k as string);
      }
      expect(getEventListeners(live.signal, "abort")).toHaveLength(0);
      await new Promise((r) => setImmediate(r));
      expect(warnings.filter((w) => w.includes("MaxListenersExceeded"))).toEqual([]);
    } finally {
      process.off("warning", onWarning);
    }
  });

  it("shutdown drains keys in flight", async () => {
    const { q } = queue();
    q.add("a");
    q.add("b");
    q.tryGet();
    q.tryGet();
    let drained = false;
    const d = q.shutDownWithDrain().then(() => {
      drained = true;
    });
    await Promise.resolve();
    expect(drained).toBe(false);
    q.done("a");
    await Promise.resolve();
    expect(drained).toBe(false);
    q.done("b");
    await d;
    expect(drained).toBe(true);
    expect(q.tryGet()).toBeUndefined();
  });

  it("reports metrics observations", () => {
    const seen = {
      added: 0,
      depth: [] as number[],
      queued: [] as number[],
      worked: [] as number[],
      retried: 0,
    };
    const sink: QueueMetricsSink = {
      added: () => seen.added++,
      depth: (n) => seen.depth.push(n),
      queued: (ms) => seen.queued.push(ms),
      worked: (ms) => seen.worked.push(ms),
      retried: () => seen.retried++,
    };
    const clock = new FakeClock();
    const q = new WorkQueue({ clock, metrics: sink });
    q.add("a");
    q.add("a");
    clock.advance(7);
    q.tryGet();
    expect(q.inFlightTimes()).toEqual({ totalMs: 0, longestMs: 0 });
    clock.advance(3);
    expect(q.inFlightTimes()).toEqual({ totalMs: 3, longestMs: 3 });
    q.addRateLimited("a");
    q.done("a");
    expect(seen.added).toBe(2); // first add, then the retry while in flight
    expect(seen.queued).toEqual([7]);
    expect(seen.worked).toEqual([3]);
    expect(seen.retried).toBe(1);
    expect(seen.depth.at(-1)).toBe(0);
  });

  it("keeps the delay heap bounded under many reschedules", () => {
    const { q, clock } = queue();
    for (let i = 0; i < 5000; i++) q.addAfter("a", 100_000 - i);
    expect(q.size).toBe(1);
    clock.advance(100_000);
    expect(q.tryGet()).toBe("a");
    expect(q.tryGet()).toBeUndefined();
  });

  it("keeps both lanes in FIFO order through many moves between them and push-backs", () => {
    const { q, clock } = queue();
    const n = 5000;
    for (let i = 0; i < n; i++) q.add(`k${i}`, { lane: "initial" });
    // Most keys move to the live lane (newest first), leaving their initial slots behind;
    // some of the rest fail while ready and wait out a backoff.
    const moved: string[] = [];
    for (let i = n - 1; i >= 0; i--) {
      if (i % 5 !== 0) {
        q.add(`k${i}`);
        moved.push(`k${i}`);
      }
    }
    const pushedBack = new Set<string>();
    for (let i = 0; i < n; i += 15) {
      q.addRateLimited(`k${i}`);
      pushedBack.add(`k${i}`);
    }
    const initial = Array.from({ length: n }, (_, i) => `k${i}`).filter(
      (k, i) => i % 5 === 0 && !pushedBack.has(k),
    );
    expect(q.len()).toBe(moved.length + initial.length);
    // Alternating, live first, until one lane is empty; then the other.
    const want: string[] = [];
    for (let i = 0; want.length < moved.length + initial.length; i++) {
      if (i < moved.length) want.push(moved[i]);
      if (i < initial.length) want.push(initial[i]);
    }
    const got: string[] = [];
    for (let k = q.tryGet(); k !== undefined; k = q.tryGet()) got.push(k);
    expect(got).toEqual(want);
    expect(q.len()).toBe(0);
    clock.advance(1_000);
    const retried = new Set<string>();
    for (let k = q.tryGet(); k !== undefined; k = q.tryGet()) retried.add(k);
    expect(retried).toEqual(pushedBack);
  });
});
