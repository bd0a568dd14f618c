/**
 * The outage test: steady requests through the gateway to three backends while
 * the apiserver goes away, one backend dies (no readiness update can arrive),
 * and the gateway is replaced by a new instance started from its table on disk
 * while the apiserver is still down. Every request must succeed. Prints the
 * counts and p99 latency per phase. Short by default; GATEWAY_OUTAGE_LONG=1 keeps
 * the apiserver down for 30 s.
 */
import { request } from "node:http";
import { afterAll, expect, it } from "vitest";
import type { Gateway } from "../../src/gateway/index.ts";
import { startTestEnv, type TestEnv } from "../../src/testenv/testenv.ts";
import { eventually, sleep } from "../helpers/poll.ts";
import {
  type Backend,
  createService,
  ingressObject,
  startBackend,
  startGateway,
  tempDir,
} from "./helpers.ts";

const LONG = process.env.GATEWAY_OUTAGE_LONG === "1";
const PHASE_MS = LONG ? 30_000 : 1_000;

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await Promise.resolve(c()).catch(() => {});
});

const agent = new (await import("node:http")).Agent({ keepAlive: true });

function once(addr: string): Promise<number> {
  const i = addr.lastIndexOf(":");
  return new Promise((resolve) => {
    const req = request(
      {
        host: addr.slice(0, i),
        port: Number(addr.slice(i + 1)),
        path: "/",
        headers: { host: "outage.test" },
        agent,
        timeout: 5000,
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
        res.on("error", () => resolve(-1));
      },
    );
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(-1));
    req.end();
  });
}

interface Phase {
  sent: number;
  failed: number;
  latencies: number[];
}

function p99(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * 0.99))] ?? 0;
}

it(
  `serves every request while the apiserver is down, a backend dies and the gateway is replaced (${LONG ? "long" : "short"})`,
  async () => {
    const env: TestEnv = await startTestEnv({ controllers: false });
    let envStopped = false;
    cleanups.push(() => (envStopped ? undefined : env.stop()));
    const data = tempDir();
    cleanups.push(() => data.remove());
    const backends: Backend[] = [];
    backends.push(await startBackend("o-1", "127.0.60.1"));
    for (const n of [2, 3])
      backends.push(await startBackend(`o-${n}`, `127.0.60.${n}`, backends[0].port));
    for (const b of backends) cleanups.push(() => b.kill());
    await env.client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "outage" } });
    await createService(env.client, "outage", "app", backends);
    await env.client.create(
      ingressObject("outage", "app", [{ host: "outage.test", paths: [["/", "Prefix", "app"]] }]),
    );

    let gw: Gateway = await startGateway(env.config, data.dir, { accessLog: false });
    const first = gw;
    cleanups.push(() => first.stop(1000));
    await eventually(async () => (await once(gw.address)) === 200, "route");

    const phases: Record<string, Phase> = {};
    let phase: Phase = { sent: 0, failed: 0, latencies: [] };
    phases.before = phase;
    let running = true;
    const worker = async () => {
      while (running) {
        const p = phase;
        const t = performance.now();
        const code = await once(gw.address);
        p.latencies.push(performance.now() - t);
        p.sent++;
        if (code !== 200) p.failed++;
      }
    };
    const workers = [worker(), worker(), worker(), worker()];
    try {
      await sleep(PHASE_MS);
      phase = { sent: 0, failed: 0, latencies: [] };
      phases.during = phase;
      // 1. The apiserver goes away.
      envStopped = true;
      await env.stop();
      await sleep(PHASE_MS / 3);
      // 2. A backend dies; no readiness update will come.
      await backends[1].kill();
      await sleep(PHASE_MS / 3);
      // 3. A new gateway starts from the table on disk (the apiserver still down),
      //    traffic moves to it, and the old one drains and stops.
      const second = await startGateway(env.config, data.dir, { accessLog: false });
      cleanups.push(() => second.stop(1000));
      expect(second.ready).toBe(true);
      gw = second;
      await first.stop(5000);
      await sleep(PHASE_MS / 3);
      phase = { sent: 0, failed: 0, latencies: [] };
      phases.after = phase;
      await sleep(PHASE_MS / 2);
    } finally {
      running = false;
      await Promise.all(workers);
    }
    const sent = Object.values(phases).reduce((n, p) => n + p.sent, 0);
    const failed = Object.values(phases).reduce((n, p) => n + p.failed, 0);
    const lat = Object.entries(phases)
      .map(
        ([k, p]) =>
          `${k} ${p.sent} sent, ${p.failed} failed, p99 ${p99(p.latencies).toFixed(1)} ms`,
      )
      .join("; ");
    console.log(`gateway outage: sent ${sent}, failed ${failed} (${lat})`);
    expect(phases.during.sent).toBeGreaterThan(0);
    expect(phases.after.sent).toBeGreaterThan(0);
    expect(failed).toBe(0);
  },
  LONG ? 180_000 : 30_000,
);
