/**
 * Reconcile deadlines and the context's lazily made parts, on a fake clock:
 * one timer per controller serves runs that started at different times, a
 * signal first read after its run was aborted is already aborted with the
 * reason, and the run's client refuses writes once it is.
 */
import { afterEach, expect, it } from "vitest";
import { InformerCache } from "../../packages/runtime/src/cache/cache.ts";
import { Client } from "../../packages/runtime/src/client/client.ts";
import {
  Controller,
  ReconcileTimeoutError,
} from "../../packages/runtime/src/controller/controller.ts";
import type { ReconcileContext } from "../../packages/runtime/src/controller/reconciler.ts";
import { FakeClock } from "./fakeclock.ts";

/** Lets promise chains and the workers' yields run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

const controllers: Controller[] = [];
afterEach(async () => {
  for (const c of controllers.splice(0)) await c.shutDown();
});

it("one timer aborts each run at its own deadline", async () => {
  const clock = new FakeClock(1_000);
  const client = new Client({ server: "http://127.0.0.1:9" }); // never contacted
  const releases = new Map<string, () => void>();
  const abortedAt = new Map<string, number>();
  const controller = new Controller({
    name: "deadlines",
    client,
    cache: new InformerCache(client),
    clock,
    reconcileTimeoutMs: 100,
    maxConcurrentReconciles: 2,
    reconciler: async (req, ctx) => {
      ctx.signal.addEventListener("abort", () => abortedAt.set(req.name, clock.now()));
      await new Promise<void>((r) => releases.set(req.name, r));
    },
  });
  controllers.push(controller);
  controller.enqueue({ name: "quick" }); // deadline 1100
  controller.start();
  await settle();
  expect(clock.pendingTimers).toBe(1);

  clock.advance(50);
  controller.enqueue({ name: "slow" }); // deadline 1150
  await settle();
  releases.get("quick")?.();
  await settle();
  expect(clock.pendingTimers).toBe(1); // still the one set for quick

  // At 1100 the timer finds quick gone and slow within its deadline: it is set again.
  clock.advance(50);
  await settle();
  expect(abortedAt.size).toBe(0);
  expect(clock.pendingTimers).toBe(1);
  clock.advance(49);
  expect(abortedAt.size).toBe(0);
  clock.advance(1);
  expect([...abortedAt]).toEqual([["slow", 1150]]);
  releases.get("slow")?.();
  await settle();
});

it("a run past its deadline sees an aborted signal on first access, and its writes are refused", async () => {
  const clock = new FakeClock();
  const client = new Client({ server: "http://127.0.0.1:9" });
  let ctxSeen: ReconcileContext | undefined;
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const seen: { aborted?: boolean; reason?: unknown; write?: unknown } = {};
  const controller = new Controller({
    name: "late-signal",
    client,
    cache: new InformerCache(client),
    clock,
    reconcileTimeoutMs: 100,
    reconciler: async (_req, ctx) => {
      ctxSeen = ctx;
      await released;
      seen.aborted = ctx.signal.aborted;
      seen.reason = ctx.signal.reason;
      seen.write = await ctx.client
        .create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x", namespace: "d" } })
        .catch((e: unknown) => e);
      throw seen.write;
    },
  });
  controllers.push(controller);
  controller.enqueue({ namespace: "d", name: "slow" });
  controller.start();
  await settle();
  expect(ctxSeen).toBeDefined();
  clock.advance(100);
  release();
  await settle();
  expect(seen.aborted).toBe(true);
  expect(seen.reason).toBeInstanceOf(ReconcileTimeoutError);
  expect(seen.write).toBe(seen.reason);
  expect(client.stats.requests).toBe(0);
  // Failed by its deadline: retried with backoff.
  expect(controller.queue.numRequeues("d/slow")).toBe(1);
  await controller.stop();
  expect(clock.pendingTimers).toBe(1); // the retry's backoff timer; the deadline timer is gone
});
