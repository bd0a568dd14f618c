import { Histogram, Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { WorkQueue } from "../../packages/runtime/src/controller/work-queue.ts";
import {
  HealthChecks,
  type ProbeServer,
  parseListenAddress,
  startProbeServer,
} from "../../packages/runtime/src/manager/health.ts";
import { LabelledHistogram } from "../../packages/runtime/src/metrics/histogram.ts";
import {
  QUEUE_DURATION_BUCKETS,
  RuntimeMetrics,
} from "../../packages/runtime/src/metrics/metrics.ts";
import { FakeClock } from "./fakeclock.ts";

/** The value of one sample line (`name{labels} value`) in a Prometheus text exposition. */
function sample(
  text: string,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (want.every((w) => line.includes(w))) return Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return undefined;
}

let servers: ProbeServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

describe("RuntimeMetrics", () => {
  it("exposes controller-runtime's metric names from a queue and a controller", async () => {
    const m = new RuntimeMetrics({ processMetrics: false });
    const clock = new FakeClock();
    const q = new WorkQueue({ clock, metrics: m.queueSink("demo") });
    m.trackQueue("demo", q);
    const c = m.controller("demo");
    c.maxConcurrent(4);
    q.add("a");
    q.add("b");
    q.add("a");
    q.tryGet();
    clock.advance(2500);
    c.activeWorkers(1);
    let text = await m.text();
    expect(sample(text, "workqueue_depth", { name: "demo", controller: "demo" })).toBe(1);
    expect(sample(text, "workqueue_adds_total", { name: "demo" })).toBe(2);
    expect(sample(text, "workqueue_unfinished_work_seconds", { name: "demo" })).toBe(2.5);
    expect(sample(text, "workqueue_longest_running_processor_seconds", { name: "demo" })).toBe(2.5);
    expect(sample(text, "controller_runtime_active_workers", { controller: "demo" })).toBe(1);
    expect(
      sample(text, "controller_runtime_max_concurrent_reconciles", { controller: "demo" }),
    ).toBe(4);
    q.addRateLimited("a");
    q.done("a");
    c.reconciled("error", 0.02);
    c.failed(false);
    c.reconciled("success", 0.01);
    c.reconciled("requeue_after", 0.01);
    c.failed(true);
    text = await m.text();
    expect(sample(text, "workqueue_retries_total", { name: "demo" })).toBe(1);
    expect(
      sample(text, "controller_runtime_reconcile_total", { controller: "demo", result: "error" }),
    ).toBe(1);
    expect(
      sample(text, "controller_runtime_reconcile_total", { controller: "demo", result: "success" }),
    ).toBe(1);
    expect(sample(text, "controller_runtime_reconcile_errors_total", { controller: "demo" })).toBe(
      2,
    );
    expect(
      sample(text, "controller_runtime_terminal_reconcile_errors_total", { controller: "demo" }),
    ).toBe(1);
    expect(
      sample(text, "controller_runtime_reconcile_time_seconds_count", { controller: "demo" }),
    ).toBe(3);
    expect(sample(text, "workqueue_work_duration_seconds_count", { name: "demo" })).toBe(1);
    expect(sample(text, "workqueue_queue_duration_seconds_count", { name: "demo" })).toBe(1);
    m.leaderStatus("lease-a", true);
    expect(sample(await m.text(), "leader_election_master_status", { name: "lease-a" })).toBe(1);
  });

  it("bound histogram series expose what prom-client's Histogram does for the same values", async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const opts = { name: "h_seconds", help: "A histogram.", buckets: QUEUE_DURATION_BUCKETS };
    const bound = new LabelledHistogram({ ...opts, registers: [ours] });
    const reference = new Histogram({ ...opts, labelNames: ["q"], registers: [theirs] });
    // Series are listed in the order they were first observed (prom-client) or bound (ours).
    const b = bound.child({ q: "b" });
    const a = bound.child({ q: "a" });
    const values = [0, 1e-9, 1e-8, 3e-6, 0.25, 1, 999, 1e4, 0.000123];
    for (const [i, v] of values.entries()) {
      (i % 3 === 0 ? b : a).observe(v);
      reference.observe({ q: i % 3 === 0 ? "b" : "a" }, v);
    }
    expect(await ours.metrics()).toBe(await theirs.metrics());
    // The same samples as JSON too (prom-client adds an empty exemplar to each bucket).
    const withoutExemplars = JSON.parse(
      JSON.stringify(await theirs.getMetricsAsJSON(), (k, v) => (k === "exemplar" ? undefined : v)),
    );
    expect(await ours.getMetricsAsJSON()).toEqual(withoutExemplars);
    ours.resetMetrics();
    expect(sample(await ours.metrics(), "h_seconds_count", { q: "a" })).toBe(0);
  });

  it("two instances do not clash over metric names", () => {
    expect(() => {
      new RuntimeMetrics();
      new RuntimeMetrics();
    }).not.toThrow();
  });
});

describe("probe server", () => {
  it("serves /metrics, /healthz and /readyz in the apiserver's format", async () => {
    const m = new RuntimeMetrics({ processMetrics: false });
    m.controller("x").maxConcurrent(2);
    let synced = false;
    const healthz = new HealthChecks().add("ping", () => ({ ok: true }));
    const readyz = new HealthChecks()
      .add("ping", () => ({ ok: true }))
      .add("informers-synced", () =>
        synced ? { ok: true } : { ok: false, reason: "caches not synced" },
      )
      .add("throws", () => {
        if (!synced) throw new Error("boom");
        return { ok: true };
      });
    const s = await startProbeServer("127.0.0.1:0", { metrics: m, healthz, readyz });
    servers.push(s);
    const base = `http://${s.address}`;

    const metrics = await fetch(`${base}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get("content-type")).toContain("text/plain");
    expect(
      sample(await metrics.text(), "controller_runtime_max_concurrent_reconciles", {
        controller: "x",
      }),
    ).toBe(2);

    expect(await (await fetch(`${base}/healthz`)).text()).toBe("ok");
    const notReady = await fetch(`${base}/readyz`);
    expect(notReady.status).toBe(500);
    const body = await notReady.text();
    expect(body).toContain("[+]ping ok");
    expect(body).toContain("[-]informers-synced failed: caches not synced");
    expect(body).toContain("[-]throws failed: boom");
    expect(body).toContain("readyz check failed");

    synced = true;
    const ready = await fetch(`${base}/readyz?verbose`);
    expect(ready.status).toBe(200);
    expect(await ready.text()).toContain("readyz check passed");
    expect((await fetch(`${base}/readyz/ping`)).status).toBe(200);
    expect((await fetch(`${base}/readyz/nope`)).status).toBe(404);
    expect((await fetch(`${base}/other`)).status).toBe(404);
    expect((await fetch(`${base}/healthz`, { method: "POST" })).status).toBe(405);
  });

  it("parses listen addresses", () => {
    expect(parseListenAddress(":8080")).toEqual({ host: undefined, port: 8080 });
    expect(parseListenAddress("127.0.0.1:0")).toEqual({ host: "127.0.0.1", port: 0 });
    expect(parseListenAddress("[::1]:9")).toEqual({ host: "::1", port: 9 });
    expect(parseListenAddress("9090")).toEqual({ host: undefined, port: 9090 });
    expect(parseListenAddress(0)).toEqual({ port: 0 });
    expect(() => parseListenAddress("nope")).toThrow();
  });
});
