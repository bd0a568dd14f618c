/**
 * Leader election between real managers on a real apiserver's Lease: one
 * leader at a time, standby with a warm cache, release on shutdown, fail-over
 * after a leader dies without releasing, prompt stop on a lost lease, and the
 * finalizers annotation.
 */
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../packages/api/src/meta.ts";
import { kind } from "../../packages/runtime/src/client/kind.ts";
import { ReconcileStoppedError } from "../../packages/runtime/src/controller/controller.ts";
import { matching } from "../../packages/runtime/src/controller/predicates.ts";
import { silentLogger } from "../../packages/runtime/src/log.ts";
import {
  LEASE_TYPE,
  LeaderElector,
  type Lease,
  microTime,
} from "../../packages/runtime/src/manager/leader-election.ts";
import { FINALIZERS_ANNOTATION, Manager } from "../../packages/runtime/src/manager/manager.ts";
import { freshNamespace } from "../helpers/namespace.ts";
import { eventually, sleep } from "../helpers/poll.ts";
import { startForFile, startTestServer } from "../helpers/test-server.ts";

const CM = kind("v1", "ConfigMap");
const LEASE_MS = 2_000;
const RENEW_MS = 1_500;
const RETRY_MS = 200;
/** Leader election on a Lease in "default" with the short timings above. */
const ELECTION = {
  namespace: "default",
  leaseDurationMs: LEASE_MS,
  renewDeadlineMs: RENEW_MS,
  retryPeriodMs: RETRY_MS,
};

const env = startForFile(startTestServer);

interface Member {
  mgr: Manager;
  reconciled: string[];
}

function member(
  id: string,
  identity: string,
  ns: string,
  opts: { release?: boolean } = {},
): Member {
  const mgr = new Manager({
    client: env.newClient(),
    identity,
    logger: silentLogger(),
    leaderElection: { ...ELECTION, id, releaseOnCancel: opts.release ?? true },
  });
  const reconciled: string[] = [];
  mgr
    .controller("elected")
    .for(CM, { predicates: [matching((o) => o.metadata.namespace === ns)] })
    .withOptions({ finalizers: ["example.com/b", "example.com/a"] })
    .complete(async (req) => {
      reconciled.push(req.name);
    });
  mgr
    .controller("other")
    .for(CM, { predicates: [matching(() => false)] })
    .withOptions({ finalizers: ["example.com/a", "example.com/c"] })
    .complete(async () => {});
  return { mgr, reconciled };
}

async function setup(opts: { release?: boolean } = {}) {
  const ns = await freshNamespace(env.client, "le");
  const id = `lease-${ns}`;
  const a = member(id, `a-${ns}`, ns, opts);
  const b = member(id, `b-${ns}`, ns, opts);
  await Promise.all([a.mgr.start(), b.mgr.start()]);
  await Promise.race([a.mgr.elected(), b.mgr.elected()]);
  const [leader, standby] = a.mgr.isLeader ? [a, b] : [b, a];
  return { ns, id, leader, standby };
}

const lease = (id: string) => env.client.get<Lease>(LEASE_TYPE, id, "default");

describe("leader election", () => {
  it("one leader reconciles; the standby keeps a warm cache; release hands over at once", async () => {
    const { ns, id, leader, standby } = await setup();
    try {
      // Never two leaders.
      for (let i = 0; i < 10; i++) {
        expect(Number(leader.mgr.isLeader) + Number(standby.mgr.isLeader)).toBe(1);
        await sleep(50);
      }
      await env.client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "one", namespace: ns },
      });
      await eventually(() => leader.reconciled.includes("one"));
      await eventually(() => standby.mgr.cache.peek(CM, "one", ns), "standby cache", 5_000);
      await sleep(200);
      expect(standby.reconciled).toEqual([]);

      const l = await lease(id);
      expect(l.spec).toMatchObject({
        holderIdentity: leader.mgr.identity,
        leaseDurationSeconds: 2,
        leaseTransitions: 0,
      });
      expect(l.spec?.renewTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
      expect(l.metadata.annotations?.[FINALIZERS_ANNOTATION]).toBe(
        "example.com/a,example.com/b,example.com/c",
      );

      const t0 = Date.now();
      await leader.mgr.stop();
      const released = await lease(id);
      expect(released.spec?.holderIdentity ?? "").not.toBe(leader.mgr.identity);
      await standby.mgr.elected();
      // Well before the 2 s lease would have expired.
      expect(Date.now() - t0).toBeLessThan(LEASE_MS);
      const taken = await lease(id);
      expect(taken.spec?.holderIdentity).toBe(standby.mgr.identity);
      expect(taken.spec?.leaseTransitions).toBe(1);
      await env.client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "two", namespace: ns },
      });
      await eventually(() => standby.reconciled.includes("two"));
    } finally {
      await Promise.all([leader.mgr.stop(), standby.mgr.stop()]);
    }
  });

  it("fails over after the lease expires when the leader dies without releasing", async () => {
    const { id, leader, standby } = await setup({ release: false });
    try {
      const t0 = Date.now();
      await leader.mgr.stop();
      expect((await lease(id)).spec?.holderIdentity).toBe(leader.mgr.identity);
      await standby.mgr.elected();
      const waited = Date.now() - t0;
      // The standby waited for the lease to expire on its own clock...
      expect(waited).toBeGreaterThanOrEqual(LEASE_MS - 2 * RETRY_MS - 100);
      // ...and not much longer.
      expect(waited).toBeLessThan(LEASE_MS + 2_000);
      expect((await lease(id)).spec?.holderIdentity).toBe(standby.mgr.identity);
    } finally {
      await Promise.all([leader.mgr.stop(), standby.mgr.stop()]);
    }
  });

  it("a leader whose lease is taken stops reconciling promptly, then campaigns again", async () => {
    const ns = await freshNamespace(env.client, "steal");
    const id = `lease-${ns}`;
    const mgr = new Manager({
      client: env.newClient(),
      identity: "victim",
      logger: silentLogger(),
      leaderElection: { ...ELECTION, id },
    });
    const seen: string[] = [];
    let stopReason: unknown;
    let inFlight = false;
    mgr
      .controller("victim")
      .for(CM, { predicates: [matching((o) => o.metadata.namespace === ns)] })
      .complete(async (req, ctx) => {
        seen.push(req.name);
        if (req.name === "long" && stopReason === undefined) {
          inFlight = true;
          await new Promise((r) => ctx.signal.addEventListener("abort", r, { once: true }));
          stopReason = ctx.signal.reason;
          inFlight = false;
          throw ctx.signal.reason;
        }
      });
    await mgr.start();
    await mgr.elected();
    try {
      await env.client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "long", namespace: ns },
      });
      await eventually(() => inFlight);
      // An intruder takes the lease (as if our renewals had been lost).
      const l = await lease(id);
      const now = microTime(new Date());
      await env.client.update<KubeObject>({
        ...l,
        spec: {
          ...l.spec,
          holderIdentity: "intruder",
          renewTime: now,
          acquireTime: now,
          leaseTransitions: 1,
        },
      });
      const t0 = Date.now();
      await eventually(() => !mgr.isLeader, "step down", 5_000);
      await eventually(() => !inFlight, "in-flight abort", 5_000);
      expect(Date.now() - t0).toBeLessThan(RENEW_MS);
      expect(stopReason).toBeInstanceOf(ReconcileStoppedError);
      const count = seen.length;
      await env.client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "while-standby", namespace: ns },
      });
      await sleep(300);
      expect(seen.length).toBe(count);
      // The intruder never renews: the lease expires and we lead again, catching up.
      await mgr.elected();
      await eventually(() => seen.includes("while-standby"), "catch-up reconcile", 10_000);
      expect((await lease(id)).spec).toMatchObject({
        holderIdentity: "victim",
        leaseTransitions: 2,
      });
    } finally {
      await mgr.stop();
    }
  });

  it("validates its timings", () => {
    const base = { name: "x", namespace: "default", identity: "i" };
    expect(
      () =>
        new LeaderElector(env.client, { ...base, leaseDurationMs: 1000, renewDeadlineMs: 1000 }),
    ).toThrow(RangeError);
    expect(
      () => new LeaderElector(env.client, { ...base, renewDeadlineMs: 1000, retryPeriodMs: 900 }),
    ).toThrow(RangeError);
  });
});
