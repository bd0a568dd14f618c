/**
 * Controllers against a real apiserver over HTTP: reconcile loop, owned
 * objects, retries with backoff, terminal errors surfaced as Events,
 * requeueAfter, per-key exclusivity under concurrency, read-your-own-writes.
 */
import { Writable } from "node:stream";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../packages/api/src/meta.ts";
import { Client as RuntimeClient } from "../../packages/runtime/src/client/client.ts";
import { isConflict, isNotFound } from "../../packages/runtime/src/client/errors.ts";
import { kind } from "../../packages/runtime/src/client/kind.ts";
import { matching } from "../../packages/runtime/src/controller/predicates.ts";
import { ExponentialBackoffRateLimiter } from "../../packages/runtime/src/controller/rate-limiter.ts";
import { TerminalError } from "../../packages/runtime/src/controller/reconciler.ts";
import { createOrUpdate } from "../../packages/runtime/src/helpers/create-or-update.ts";
import { setControllerReference } from "../../packages/runtime/src/helpers/owner-references.ts";
import { silentLogger } from "../../packages/runtime/src/log.ts";
import { Manager } from "../../packages/runtime/src/manager/manager.ts";
import { freshNamespace } from "../helpers/namespace.ts";
import { eventually, sleep } from "../helpers/poll.ts";
import { startForFile, startTestServer } from "../helpers/test-server.ts";
import { startDelayProxy } from "./delayproxy.ts";

type ConfigMap = KubeObject & { data?: Record<string, string> };
type Secret = KubeObject & { data?: Record<string, string> };
const CM = kind<ConfigMap>("v1", "ConfigMap");
const SECRET = kind<Secret>("v1", "Secret");
const EVENT = kind("v1", "Event");

const env = startForFile(startTestServer);

function manager(): Manager {
  return new Manager({ client: env.newClient(), logger: silentLogger(), metrics: undefined });
}

function cm(namespace: string, name: string, data: Record<string, string>, labels = {}): ConfigMap {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace, labels }, data };
}

const b64 = (s: string) => Buffer.from(s).toString("base64");

describe("controller", () => {
  it("reconciles owned objects to the desired state and writes only when something changed", async () => {
    const n = await freshNamespace(env.client, "t");
    const mgr = manager();
    const results: string[] = [];
    mgr
      .controller("mirror")
      .for(CM, { predicates: [matching((o) => o.metadata.labels?.mirror === "yes")] })
      .owns(SECRET)
      .complete(async (req, ctx) => {
        let source: ConfigMap;
        try {
          source = await ctx.reader.get<ConfigMap>(CM, req.name, req.namespace);
        } catch (e) {
          if (isNotFound(e)) return;
          throw e;
        }
        const secret: Secret = {
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: `${req.name}-mirror`, namespace: req.namespace },
        };
        const { result } = await createOrUpdate(
          ctx.client,
          secret,
          (s) => {
            s.data = Object.fromEntries(
              Object.entries(source.data ?? {}).map(([k, v]) => [k, b64(v)]),
            );
            setControllerReference(source, s);
          },
          { reader: ctx.reader },
        );
        results.push(result);
      });
    await env.client.create(cm(n, "a", { x: "1" }, { mirror: "yes" }));
    await env.client.create(cm(n, "ignored", { x: "1" }));
    await mgr.start();
    try {
      const first = await eventually(
        () => env.client.get<Secret>(SECRET, "a-mirror", n),
        "mirror",
        10_000,
      );
      expect(first.data).toEqual({ x: b64("1") });
      expect(first.metadata.ownerReferences?.[0]).toMatchObject({
        kind: "ConfigMap",
        name: "a",
        controller: true,
      });

      await env.client.update({
        ...cm(n, "a", { x: "2" }, { mirror: "yes" }),
        metadata: { ...(await env.client.get<ConfigMap>(CM, "a", n)).metadata },
      });
      await eventually(
        async () => (await env.client.get<Secret>(SECRET, "a-mirror", n)).data?.x === b64("2"),
      );

      // A deleted dependent wakes its owner through the ownerReference and comes back.
      await env.client.delete(SECRET, "a-mirror", n);
      await eventually(
        () => env.client.get<Secret>(SECRET, "a-mirror", n),
        "re-created mirror",
        10_000,
      );

      // Quiet once converged: the owned Secret's own events reconcile to "unchanged".
      await sleep(300);
      const writes = results.filter((r) => r !== "unchanged").length;
      await sleep(300);
      expect(results.filter((r) => r !== "unchanged").length).toBe(writes);
      expect(writes).toBe(3); // created, updated, re-created
      await expect(env.client.get(SECRET, "ignored-mirror", n)).rejects.toSatisfy(isNotFound);
    } finally {
      await mgr.stop();
    }
  });

  it("retries failures with per-key backoff and resets on success", async () => {
    const n = await freshNamespace(env.client, "t");
    const mgr = manager();
    const attempts: number[] = [];
    const c = mgr
      .controller("flaky")
      .for(CM)
      .withOptions({
        rateLimiter: new ExponentialBackoffRateLimiter({ baseDelayMs: 20, jitter: 0 }),
      })
      .complete(async (req) => {
        if (req.namespace !== n) return;
        attempts.push(Date.now());
        if (attempts.length <= 3) throw new Error(`transient failure ${attempts.length}`);
      });
    await mgr.start();
    try {
      await env.client.create(cm(n, "f", {}));
      await eventually(() => attempts.length >= 4, "4 attempts", 10_000);
      // Backoff doubled between attempts: 20, 40, 80 ms (at least).
      const gaps = attempts.slice(1).map((t, i) => t - attempts[i]);
      expect(gaps[0]).toBeGreaterThanOrEqual(18);
      expect(gaps[1]).toBeGreaterThanOrEqual(38);
      expect(gaps[2]).toBeGreaterThanOrEqual(78);
      expect(c.queue.numRequeues(`${n}/f`)).toBe(0);
      await sleep(200);
      expect(attempts.length).toBe(4);
      const text = await mgr.metrics.text();
      expect(text).toMatch(/controller_runtime_reconcile_errors_total\{controller="flaky"\} 3/);
      expect(text).toMatch(/workqueue_retries_total\{name="flaky",controller="flaky"\} 3/);
    } finally {
      await mgr.stop();
    }
  });

  it("does not retry a TerminalError and records it as a Warning Event on the object", async () => {
    const n = await freshNamespace(env.client, "t");
    const mgr = manager();
    let attempts = 0;
    mgr
      .controller("strict")
      .for(CM)
      .complete(async (req) => {
        if (req.namespace !== n) return;
        attempts++;
        throw new TerminalError("spec is invalid: data.size must be a number", {
          reason: "InvalidSpec",
        });
      });
    await mgr.start();
    try {
      await env.client.create(cm(n, "bad", { size: "large" }));
      const events = await eventually(async () => {
        const list = await env.client.list<KubeObject>(EVENT, { namespace: n });
        return list.items.length > 0 ? list.items : undefined;
      });
      expect(events[0]).toMatchObject({
        type: "Warning",
        reason: "InvalidSpec",
        message: "spec is invalid: data.size must be a number",
        involvedObject: { kind: "ConfigMap", name: "bad", namespace: n },
        source: { component: "strict" },
        // Marked, so tools tell errors that are not retried from other warnings.
        action: "TerminalError",
      });
      await sleep(300);
      expect(attempts).toBe(1);
    } finally {
      await mgr.stop();
    }
  });

  it("requeueAfter reconciles again after the delay without counting a failure", async () => {
    const n = await freshNamespace(env.client, "t");
    const mgr = manager();
    const times: number[] = [];
    const c = mgr
      .controller("poller")
      .for(CM)
      .complete(async (req) => {
        if (req.namespace !== n) return;
        times.push(Date.now());
        return times.length < 3 ? { requeueAfter: 100 } : undefined;
      });
    await mgr.start();
    try {
      await env.client.create(cm(n, "p", {}));
      await eventually(() => times.length >= 3);
      expect(times[1] - times[0]).toBeGreaterThanOrEqual(95);
      expect(times[2] - times[1]).toBeGreaterThanOrEqual(95);
      expect(c.queue.numRequeues(`${n}/p`)).toBe(0);
      expect(await mgr.metrics.text()).toMatch(
        /controller_runtime_reconcile_total\{controller="poller",result="requeue_after"\} 2/,
      );
    } finally {
      await mgr.stop();
    }
  });

  it("never runs one key on two workers at once, while using several workers", async () => {
    const n = await freshNamespace(env.client, "t");
    const mgr = manager();
    const running = new Set<string>();
    let overlap = 0;
    let maxParallel = 0;
    let runs = 0;
    mgr
      .controller("exclusive")
      .for(CM)
      .withOptions({ maxConcurrentReconciles: 4 })
      .complete(async (req) => {
        if (req.namespace !== n) return;
        const key = req.name;
        if (running.has(key)) overlap++;
        running.add(key);
        maxParallel = Math.max(maxParallel, running.size);
        await sleep(15);
        running.delete(key);
        runs++;
      });
    await mgr.start();
    try {
      const names = ["a", "b", "c", "d", "e", "f"];
      await Promise.all(names.map((name) => env.client.create(cm(n, name, { v: "0" }))));
      // A stream of updates to the same keys while they are being reconciled.
      for (let i = 1; i <= 5; i++) {
        await Promise.all(
          names.map(async (name) => {
            const cur = await env.client.get<ConfigMap>(CM, name, n);
            await env.client.update({ ...cur, data: { v: String(i) } });
          }),
        );
      }
      await eventually(() => runs >= names.length * 2);
      await sleep(200);
      expect(overlap).toBe(0);
      expect(maxParallel).toBeGreaterThan(1);
      expect(maxParallel).toBeLessThanOrEqual(4);
    } finally {
      await mgr.stop();
    }
  });

  it("runs 50 workers without piling listeners onto their stop signal", async () => {
    const n = await freshNamespace(env.client, "t");
    const mgr = manager();
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
    process.on("warning", onWarning);
    const running = new Set<string>();
    let maxParallel = 0;
    let runs = 0;
    // Every reconcile waits until more than 10 run at once: with fewer workers the
    // gate never opens and the test fails, whatever the machine's speed.
    let open: () => void = () => {};
    const gate = new Promise<void>((r) => {
      open = r;
    });
    mgr
      .controller("wide")
      .for(CM)
      .withOptions({ maxConcurrentReconciles: 50 })
      .complete(async (req) => {
        if (req.namespace !== n) return;
        running.add(req.name);
        maxParallel = Math.max(maxParallel, running.size);
        if (running.size > 10) open();
        await gate;
        running.delete(req.name);
        runs++;
      });
    try {
      await mgr.start();
      await Promise.all(
        Array.from({ length: 60 }, (_, i) => env.client.create(cm(n, `w${i}`, { v: "0" }))),
      );
      await eventually(() => runs >= 60);
      expect(maxParallel).toBeGreaterThan(10);
      await mgr.stop();
      await new Promise((r) => setImmediate(r));
      expect(warnings.filter((w) => w.includes("MaxListenersExceeded"))).toEqual([]);
    } finally {
      process.off("warning", onWarning);
      await mgr.stop();
    }
  });

  it("requeueAfter 0 runs a key again at once without starving the process, and is counted per key", async () => {
    const n = await freshNamespace(env.client, "t");
    const mgr = manager();
    let spins = 0;
    const others: string[] = [];
    mgr
      .controller("spinner")
      .for(CM, { predicates: [matching((o) => o.metadata.namespace === n)] })
      .withOptions({ maxConcurrentReconciles: 2 })
      .complete(async (req) => {
        if (req.name !== "spin") {
          others.push(req.name);
          return;
        }
        spins++;
        return { requeueAfter: 0 }; // no I/O at all: only the queue brings it back
      });
    await mgr.start();
    try {
      await env.client.create(cm(n, "spin", {}));
      await eventually(() => spins > 50);
      // Timers fire and other keys' events still get through.
      const started = Date.now();
      await sleep(50);
      expect(Date.now() - started).toBeLessThan(2_000);
      await env.client.create(cm(n, "other", {}));
      await eventually(() => others.includes("other"));
      const stats = mgr.reconcileStats();
      expect(stats.windowSeconds).toBe(60);
      const top = stats.controllers.spinner.topKeys;
      expect(top[0].key).toBe(`${n}/spin`);
      expect(top[0].reconciles).toBeGreaterThan(50);
      expect(top.find((k) => k.key === `${n}/other`)?.reconciles).toBe(1);
      expect(stats.controllers.spinner.reconciles).toBeGreaterThanOrEqual(top[0].reconciles + 1);
    } finally {
      await mgr.stop();
    }
  });

  it("waits for the cache to see its own writes before reconciling the key again", async () => {
    // Watches reach this manager 150 ms late, so its cache lags behind its writes.
    const proxy = await startDelayProxy(env.url, 150);
    const n = await freshNamespace(env.client, "t");
    const mgr = new Manager({
      client: new RuntimeClient({ server: proxy.url }),
      logger: silentLogger(),
    });
    let conflicts = 0;
    let stale = 0;
    let lastWritten = "";
    mgr
      .controller("counter")
      .for(CM, { predicates: [matching((o) => o.metadata.namespace === n)] })
      .complete(async (req, ctx) => {
        const cur = await ctx.reader.get<ConfigMap>(CM, req.name, req.namespace);
        if (lastWritten && cur.metadata.resourceVersion !== lastWritten) stale++;
        const count = Number(cur.data?.count ?? "0");
        if (count >= 5) return;
        try {
          const out = await ctx.client.update({ ...cur, data: { count: String(count + 1) } });
          lastWritten = out.metadata.resourceVersion ?? "";
        } catch (e) {
          if (isConflict(e)) conflicts++;
          throw e;
        }
        // Come back at once, long before the watch delivers the write.
        return { requeueAfter: 1 };
      });
    await mgr.start();
    try {
      await env.client.create(cm(n, "c", { count: "0" }));
      await eventually(
        async () => (await env.client.get<ConfigMap>(CM, "c", n)).data?.count === "5",
      );
      expect(conflicts).toBe(0);
      expect(stale).toBe(0);
    } finally {
      await mgr.stop();
      await proxy.close();
    }
  });

  it("logs with the controller, key and a reconcile id", async () => {
    const n = await freshNamespace(env.client, "t");
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        for (const l of String(chunk).split("\n")) if (l) lines.push(JSON.parse(l));
        done();
      },
    });
    const mgr = new Manager({ client: env.newClient(), logger: pino({ level: "info" }, sink) });
    const ids: string[] = [];
    mgr
      .controller("chatty")
      .for(CM, { predicates: [matching((o) => o.metadata.namespace === n)] })
      .complete(async (_req, ctx) => {
        ids.push(ctx.reconcileID);
        ctx.log.info({ step: "observe" }, "hello");
        if (ids.length === 1) throw new Error("first pass fails");
      });
    await mgr.start();
    try {
      await env.client.create(cm(n, "logged", {}));
      await eventually(() => ids.length >= 2);
      await sleep(50);
    } finally {
      await mgr.stop();
    }
    const hellos = lines.filter((l) => l.msg === "hello");
    expect(hellos.length).toBeGreaterThanOrEqual(2);
    for (const l of hellos) {
      expect(l).toMatchObject({
        controller: "chatty",
        key: `${n}/logged`,
        namespace: n,
        name: "logged",
        step: "observe",
      });
    }
    expect(hellos.map((l) => l.reconcileID)).toEqual(ids.slice(0, hellos.length));
    expect(new Set(ids).size).toBe(ids.length);
    const failure = lines.find((l) => l.msg === "reconcile failed; retrying with backoff");
    expect(failure).toMatchObject({
      controller: "chatty",
      key: `${n}/logged`,
      reconcileID: ids[0],
      err: "first pass fails",
    });
  });
});
