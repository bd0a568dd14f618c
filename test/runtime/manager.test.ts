/**
 * The manager against a real apiserver: probes and metrics over HTTP, a stalled
 * informer failing /healthz and /readyz, graceful shutdown draining reconciles
 * in flight, and aborting them when the grace runs out.
 */
import { describe, expect, it } from "vitest";
import { Client as RuntimeClient } from "../../packages/runtime/src/client/client.ts";
import { kind } from "../../packages/runtime/src/client/kind.ts";
import { ReconcileStoppedError } from "../../packages/runtime/src/controller/controller.ts";
import { matching } from "../../packages/runtime/src/controller/predicates.ts";
import { silentLogger } from "../../packages/runtime/src/log.ts";
import { Manager } from "../../packages/runtime/src/manager/manager.ts";
import { freshNamespace } from "../helpers/namespace.ts";
import { eventually, sleep } from "../helpers/poll.ts";
import { startForFile, startTestServer } from "../helpers/test-server.ts";
import { FaultProxy } from "./netfault.ts";

const CM = kind("v1", "ConfigMap");

const env = startForFile(startTestServer);

describe("Manager", () => {
  it("serves /metrics, /healthz and /readyz once its caches are synced", async () => {
    const n = await freshNamespace(env.client, "m");
    const mgr = new Manager({
      client: env.newClient(),
      logger: silentLogger(),
      metricsAddr: "127.0.0.1:0",
      healthAddr: "127.0.0.1:0",
    });
    let reconciled = 0;
    mgr
      .controller("probed")
      .for(CM, { predicates: [matching((o) => o.metadata.namespace === n)] })
      .complete(async () => {
        reconciled++;
      });
    await mgr.start();
    try {
      expect(mgr.metricsAddress).not.toBe(mgr.healthAddress);
      const health = `http://${mgr.healthAddress}`;
      expect((await fetch(`${health}/healthz`)).status).toBe(200);
      const ready = await fetch(`${health}/readyz?verbose`);
      expect(ready.status).toBe(200);
      expect(await ready.text()).toContain("[+]informers-synced ok");
      await env.client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "x", namespace: n },
      });
      await eventually(() => reconciled > 0);
      const metrics = await (await fetch(`http://${mgr.metricsAddress}/metrics`)).text();
      expect(metrics).toMatch(
        /controller_runtime_reconcile_total\{controller="probed",result="success"\} [1-9]/,
      );
      expect(metrics).toContain(
        'controller_runtime_max_concurrent_reconciles{controller="probed"} 4',
      );
      expect(metrics).toContain('workqueue_depth{name="probed",controller="probed"}');
      expect(metrics).toContain("process_cpu_user_seconds_total");
      // The metrics server does not answer probes, and the reverse.
      expect((await fetch(`http://${mgr.metricsAddress}/healthz`)).status).toBe(404);
    } finally {
      await mgr.stop();
    }
    await expect(fetch(`http://${mgr.healthAddress}/healthz`)).rejects.toThrow();
  });

  it("fails /healthz and /readyz when an informer's watch is stalled", async () => {
    const proxy = await FaultProxy.start(env.url);
    const c = new RuntimeClient({ server: proxy.url, timeoutMs: 1_000 });
    const mgr = new Manager({
      client: c,
      logger: silentLogger(),
      healthAddr: "127.0.0.1:0",
      metricsAddr: "127.0.0.1:0",
      informerStallMs: 300,
    });
    mgr
      .controller("stalls")
      .for(CM)
      .complete(async () => {});
    await mgr.start();
    const health = `http://${mgr.healthAddress}`;
    try {
      expect((await fetch(`${health}/healthz`)).status).toBe(200);
      await proxy.close(); // the server becomes unreachable
      const res = await eventually(
        async () => {
          const r = await fetch(`${health}/healthz`);
          return r.status === 500 ? r : undefined;
        },
        "healthz failure",
        10_000,
      );
      expect(await res.text()).toMatch(/\[-\]informers failed: stalled informers: ConfigMap/);
      expect((await fetch(`${health}/readyz`)).status).toBe(500);
    } finally {
      await mgr.stop();
      c.close();
    }
  });

  it("runs runnables leader or not, with their readiness in /readyz, and stops them on shutdown", async () => {
    // Someone else holds the Lease for a minute: this manager stays a standby.
    const leaseName = `held-${Date.now().toString(36)}`;
    const now = new Date().toISOString().replace("Z", "000Z");
    await env.client.create({
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name: leaseName, namespace: "default" },
      spec: { holderIdentity: "someone-else", leaseDurationSeconds: 60, renewTime: now },
    });
    const mgr = new Manager({
      client: env.newClient(),
      logger: silentLogger(),
      healthAddr: "127.0.0.1:0",
      leaderElection: { id: leaseName, namespace: "default", retryPeriodMs: 100 },
    });
    const events: string[] = [];
    let warm = false;
    mgr.add({
      name: "warmer",
      start: async (signal) => {
        events.push("warmer started");
        await new Promise((r) => signal.addEventListener("abort", r, { once: true }));
        await sleep(50); // winding down takes a while; shutdown waits for it
        events.push("warmer stopped");
      },
      ready: () => (warm ? { ok: true } : { ok: false, reason: "warming up" }),
    });
    mgr.add({
      name: "broken",
      start: () => {
        throw new Error("cannot start");
      },
    });
    expect(() => mgr.add({ name: "warmer", start: () => {} })).toThrow(/already added/);
    const readyz = async () => {
      const r = await fetch(`http://${mgr.healthAddress}/readyz?verbose`);
      return { status: r.status, text: await r.text() };
    };
    try {
      await mgr.start();
      expect(events).toEqual(["warmer started"]);
      expect(mgr.isLeader).toBe(false);
      let r = await readyz();
      expect(r.status).toBe(500);
      expect(r.text).toContain("[-]warmer failed: warming up");
      expect(r.text).toContain("[-]broken failed: failed: cannot start");
      warm = true;
      r = await readyz();
      expect(r.text).toContain("[+]warmer ok");

      // Added while running: started at once.
      let lateStarted = false;
      mgr.add({
        name: "late",
        start: () => {
          lateStarted = true;
        },
      });
      expect(lateStarted).toBe(true);
      expect((await readyz()).text).toContain("[+]late ok");
    } finally {
      await mgr.stop();
    }
    expect(events).toEqual(["warmer started", "warmer stopped"]);
    expect(mgr.isLeader).toBe(false);
  });

  it("drains reconciles in flight on shutdown before returning", async () => {
    const n = await freshNamespace(env.client, "m");
    const mgr = new Manager({ client: env.newClient(), logger: silentLogger() });
    let started = false;
    let finished = false;
    let abortedInside = false;
    mgr
      .controller("slow")
      .for(CM, { predicates: [matching((o) => o.metadata.namespace === n)] })
      .complete(async (_req, ctx) => {
        started = true;
        await sleep(400);
        abortedInside = ctx.signal.aborted;
        // Writes still work during the drain.
        await ctx.client.create({
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: "written-while-draining", namespace: n },
        });
        finished = true;
      });
    const ac = new AbortController();
    await mgr.start(ac.signal);
    await env.client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "s", namespace: n },
    });
    await eventually(() => started);
    ac.abort(); // shutdown through the signal
    await mgr.done;
    expect(finished).toBe(true);
    expect(abortedInside).toBe(false);
    await env.client.get(CM, "written-while-draining", n);
  });

  it("aborts reconciles that outlive the shutdown grace, and refuses their writes", async () => {
    const n = await freshNamespace(env.client, "m");
    const mgr = new Manager({
      client: env.newClient(),
      logger: silentLogger(),
      gracefulShutdownTimeoutMs: 100,
    });
    let started = false;
    let reason: unknown;
    let writeError: unknown;
    mgr
      .controller("stubborn")
      .for(CM, { predicates: [matching((o) => o.metadata.namespace === n)] })
      .complete(async (_req, ctx) => {
        started = true;
        await new Promise((r) => ctx.signal.addEventListener("abort", r, { once: true }));
        reason = ctx.signal.reason;
        try {
          await ctx.client.create({
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name: "too-late", namespace: n },
          });
        } catch (e) {
          writeError = e;
        }
      });
    await mgr.start();
    await env.client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "s", namespace: n },
    });
    await eventually(() => started);
    const t0 = Date.now();
    await mgr.stop();
    expect(Date.now() - t0).toBeLessThan(3_000);
    expect(reason).toBeInstanceOf(ReconcileStoppedError);
    expect(writeError).toBeInstanceOf(ReconcileStoppedError);
    await expect(env.client.get(CM, "too-late", n)).rejects.toThrow();
  });

  it("a reconcile past its deadline sees its signal abort and is retried", async () => {
    const n = await freshNamespace(env.client, "m");
    const mgr = new Manager({ client: env.newClient(), logger: silentLogger() });
    let attempts = 0;
    mgr
      .controller("deadline")
      .for(CM, { predicates: [matching((o) => o.metadata.namespace === n)] })
      .withOptions({ reconcileTimeoutMs: 100 })
      .complete(async (_req, ctx) => {
        attempts++;
        if (attempts === 1) {
          await new Promise((_, reject) =>
            ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true }),
          );
        }
      });
    await mgr.start();
    try {
      await env.client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "d", namespace: n },
      });
      await eventually(() => attempts >= 2);
      expect(await mgr.metrics.text()).toMatch(
        /controller_runtime_reconcile_errors_total\{controller="deadline"\} 1/,
      );
    } finally {
      await mgr.stop();
    }
  });
});
