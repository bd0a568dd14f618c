/**
 * Property tests of the work queue's guarantees under random schedules of
 * add / addAfter / addRateLimited / forget / get / done and random worker timing.
 * A reference model tracks, per key, what the guarantees allow; every handout
 * and every step is checked against it.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  ExponentialBackoffRateLimiter,
  type RateLimiter,
} from "../../packages/runtime/src/controller/rate-limiter.ts";
import { type Lane, WorkQueue } from "../../packages/runtime/src/controller/work-queue.ts";
import { FakeClock } from "./fakeclock.ts";

const KEYS = ["a", "b", "c", "d"];
const WORKERS = 4;

type Op =
  | { op: "add"; key: string; lane: Lane }
  | { op: "addAfter"; key: string; delay: number }
  | { op: "addRateLimited"; key: string }
  | { op: "forget"; key: string }
  | { op: "get"; worker: number }
  | { op: "finish"; worker: number; outcome: "ok" | "error" | "requeue" | "plain"; delay: number }
  | { op: "advance"; ms: number };

const key = fc.constantFrom(...KEYS);
const worker = fc.integer({ min: 0, max: WORKERS - 1 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant("add" as const),
      key,
      lane: fc.constantFrom<Lane>("live", "initial"),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant("addAfter" as const),
      key,
      delay: fc.integer({ min: 0, max: 300 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("addRateLimited" as const), key }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("forget" as const), key }) },
  { weight: 5, arbitrary: fc.record({ op: fc.constant("get" as const), worker }) },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant("finish" as const),
      worker,
      outcome: fc.constantFrom(
        "ok" as const,
        "error" as const,
        "requeue" as const,
        "plain" as const,
      ),
      delay: fc.integer({ min: 1, max: 300 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant("advance" as const),
      ms: fc.integer({ min: 0, max: 400 }),
    }),
  },
);

/** Wraps a limiter to record the backoff gate each failure sets. */
class Recording implements RateLimiter {
  readonly gates = new Map<string, number>();
  readonly failures = new Map<string, number>();
  constructor(
    private readonly inner: RateLimiter,
    private readonly clock: FakeClock,
  ) {}
  when(k: string): number {
    const d = this.inner.when(k);
    this.gates.set(k, Math.max(this.gates.get(k) ?? 0, this.clock.now() + d));
    this.failures.set(k, (this.failures.get(k) ?? 0) + 1);
    return d;
  }
  forget(k: string): void {
    this.inner.forget(k);
    this.failures.delete(k);
  }
  retries(k: string): number {
    return this.inner.retries(k);
  }
}

interface KeyModel {
  /** An add happened since the key was last handed out (it must run again). */
  needsRun: boolean;
  /** Earliest time any add since the last handout asked for. */
  due: number;
}

function run(ops: Op[], seed: number): void {
  const clock = new FakeClock();
  let s = seed >>> 0;
  const random = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
  const limiter = new Recording(
    new ExponentialBackoffRateLimiter({ baseDelayMs: 5, maxDelayMs: 1000, jitter: 0.5, random }),
    clock,
  );
  const q = new WorkQueue({ clock, rateLimiter: limiter });
  const model = new Map<string, KeyModel>(KEYS.map((k) => [k, { needsRun: false, due: Infinity }]));
  const held: (string | undefined)[] = Array(WORKERS).fill(undefined);
  const handouts = new Map<string, number>();

  const requested = (k: string, at: number) => {
    const m = model.get(k)!;
    m.needsRun = true;
    m.due = Math.min(m.due, at);
  };
  const readyInModel = (k: string) => {
    const m = model.get(k)!;
    const gate = limiter.gates.get(k) ?? 0;
    return m.needsRun && !held.includes(k) && clock.now() >= Math.max(m.due, gate);
  };
  const handOut = (w: number, k: string) => {
    // Never two workers on one key.
    expect(held).not.toContain(k);
    const m = model.get(k)!;
    // No spurious run: something asked for it since its last handout (collapse).
    expect(m.needsRun).toBe(true);
    // Not before it was asked for, nor before its backoff gate.
    expect(clock.now()).toBeGreaterThanOrEqual(m.due);
    expect(clock.now()).toBeGreaterThanOrEqual(limiter.gates.get(k) ?? 0);
    m.needsRun = false;
    m.due = Infinity;
    held[w] = k;
    handouts.set(k, (handouts.get(k) ?? 0) + 1);
  };
  const finish = (w: number, outcome: "ok" | "error" | "requeue" | "plain", delay: number) => {
    const k = held[w];
    if (k === undefined) return;
    if (outcome === "ok") q.forget(k);
    if (outcome === "error") {
      q.addRateLimited(k);
      requested(k, limiter.gates.get(k)!);
    }
    if (outcome === "requeue") {
      q.forget(k);
      q.addAfter(k, delay);
      requested(k, clock.now() + delay);
    }
    held[w] = undefined;
    q.done(k);
  };

  for (const o of ops) {
    switch (o.op) {
      case "add":
        q.add(o.key, { lane: o.lane });
        requested(o.key, clock.now());
        break;
      case "addAfter":
        q.addAfter(o.key, o.delay);
        requested(o.key, clock.now() + o.delay);
        break;
      case "addRateLimited":
        q.addRateLimited(o.key);
        requested(o.key, limiter.gates.get(o.key)!);
        break;
      case "forget":
        q.forget(o.key);
        break;
      case "get": {
        if (held[o.worker] !== undefined) break;
        const anyReady = KEYS.some(readyInModel);
        const k = q.tryGet();
        // The queue never stalls: if some key may run, a free worker gets one.
        if (anyReady) expect(k).toBeDefined();
        if (k !== undefined) handOut(o.worker, k);
        break;
      }
      case "finish":
        finish(o.worker, o.outcome, o.delay);
        break;
      case "advance":
        clock.advance(o.ms);
        break;
    }
    // Failures are counted exactly: one per addRateLimited since the last forget.
    for (const k of KEYS) expect(q.numRequeues(k)).toBe(limiter.failures.get(k) ?? 0);
  }

  // Liveness: finish everything, let time pass, and every requested key runs.
  for (let w = 0; w < WORKERS; w++) finish(w, "ok", 0);
  for (let round = 0; round < 100 && q.size > 0; round++) {
    clock.advance(1000);
    for (let k = q.tryGet(); k !== undefined; k = q.tryGet()) {
      handOut(0, k);
      held[0] = undefined;
      q.forget(k);
      q.done(k);
    }
  }
  expect(q.size).toBe(0);
  for (const k of KEYS) expect(model.get(k)!.needsRun).toBe(false);
}

describe("WorkQueue properties", () => {
  it("holds its guarantees under random schedules", () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 200 }), fc.integer(), (ops, seed) => run(ops, seed)),
      { numRuns: 400 },
    );
  });

  it("a key added any number of times while in flight runs exactly once more", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20 }), (n) => {
        const q = new WorkQueue({ clock: new FakeClock() });
        q.add("k");
        expect(q.tryGet()).toBe("k");
        for (let i = 0; i < n; i++) q.add("k");
        q.done("k");
        expect(q.tryGet()).toBe("k");
        q.done("k");
        expect(q.tryGet()).toBeUndefined();
      }),
    );
  });

  it("a fresh key is served after at most as many initial keys as live keys ahead of it", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 500 }),
        fc.integer({ min: 0, max: 20 }),
        fc.integer({ min: 0, max: 50 }),
        (initial, liveAhead, servedBefore) => {
          const q = new WorkQueue({ clock: new FakeClock() });
          for (let i = 0; i < initial; i++) q.add(`i${i}`, { lane: "initial" });
          // Some of the backlog is already being worked on.
          for (let i = 0; i < servedBefore; i++) {
            const k = q.tryGet();
            if (k) q.done(k);
          }
          for (let i = 0; i < liveAhead; i++) q.add(`l${i}`);
          q.add("fresh");
          let gets = 0;
          for (let k = q.tryGet(); k !== "fresh"; k = q.tryGet()) {
            expect(k).toBeDefined();
            gets++;
          }
          expect(gets).toBeLessThanOrEqual(2 * liveAhead + 1);
        },
      ),
    );
  });

  it("every key of a huge initial list is still served under a stream of live events", () => {
    const q = new WorkQueue({ clock: new FakeClock() });
    for (let i = 0; i < 1000; i++) q.add(`i${i}`, { lane: "initial" });
    const served = new Set<string>();
    for (let step = 0; step < 2000; step++) {
      q.add(`live${step}`);
      const k = q.tryGet()!;
      served.add(k);
      q.done(k);
    }
    for (let i = 0; i < 1000; i++) expect(served.has(`i${i}`)).toBe(true);
  });

  it("async workers waiting in get(): exclusive, complete, under random timing", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            key: fc.constantFrom(...KEYS),
            kind: fc.constantFrom("add" as const, "after" as const, "fail" as const),
            gap: fc.integer({ min: 0, max: 30 }),
            work: fc.integer({ min: 0, max: 40 }),
          }),
          { maxLength: 60 },
        ),
        fc.integer({ min: 1, max: 4 }),
        async (steps, workers) => {
          const clock = new FakeClock();
          const q = new WorkQueue({
            clock,
            rateLimiter: new ExponentialBackoffRateLimiter({
              baseDelayMs: 5,
              maxDelayMs: 200,
              jitter: 0,
            }),
          });
          const flush = async () => {
            for (let i = 0; i < 10; i++) await Promise.resolve();
          };
          const held = new Set<string>();
          const pending = new Set<string>();
          const failNext = new Set<string>();
          let overlap = 0;
          const work = new Map<string, number>();
          const loops = Array.from({ length: workers }, async () => {
            for (;;) {
              const k = await q.get();
              if (k === undefined) return;
              if (held.has(k)) overlap++;
              held.add(k);
              pending.delete(k);
              await new Promise<void>((r) => clock.setTimer(r, work.get(k) ?? 0));
              held.delete(k);
              if (failNext.delete(k)) q.addRateLimited(k);
              else q.forget(k);
              q.done(k);
            }
          });
          for (const s of steps) {
            work.set(s.key, s.work);
            pending.add(s.key);
            if (s.kind === "add") q.add(s.key);
            if (s.kind === "after") q.addAfter(s.key, s.gap);
            if (s.kind === "fail") {
              failNext.add(s.key);
              q.add(s.key);
            }
            await flush();
            clock.advance(s.gap);
            await flush();
          }
          // Let everything finish: failures retry until they succeed.
          for (let i = 0; i < 500 && (q.size > 0 || held.size > 0); i++) {
            clock.advance(50);
            await flush();
          }
          expect(overlap).toBe(0);
          expect(q.size).toBe(0);
          expect([...pending]).toEqual([]);
          q.shutDown();
          await Promise.all(loops);
        },
      ),
      { numRuns: 200 },
    );
  });
});
