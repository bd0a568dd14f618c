/**
 * `npm run bench:testenv`: how long `startTestEnv()` takes to hand back a ready
 * apiserver (in-memory SQLite, system namespaces created, kubeconfig written),
 * first in the process and then again. Baseline, in the same run: a bare node:http
 * server started and answering one request in process. Goal: under 100 ms.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { startTestEnv } from "../src/testenv/testenv.ts";
import { printTable } from "./lib/table.ts";

const RUNS = Number(process.env.BENCH_TESTENV_RUNS ?? 20);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function bareServer(): Promise<number> {
  const t = performance.now();
  const server = http.createServer((_q, s) => s.end("ok"));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  await (await fetch(`http://127.0.0.1:${port}/`)).text();
  const ms = performance.now() - t;
  await new Promise((r) => server.close(r));
  return ms;
}

async function testEnv(): Promise<number> {
  const t = performance.now();
  const env = await startTestEnv();
  const ms = performance.now() - t;
  await env.stop();
  return ms;
}

const first = await testEnv();
const later: number[] = [];
const bare: number[] = [];
for (let i = 0; i < RUNS; i++) {
  later.push(await testEnv());
  bare.push(await bareServer());
}
const bareMs = median(bare);
printTable(`startTestEnv: call to ready, ${RUNS} runs`, [
  {
    backend: "memory",
    metric: "first in process",
    value: first,
    unit: "ms",
    baseline: bareMs,
    baselineLabel: "bare http server",
    better: "lower",
    goal: { text: "< 100 ms", met: first < 100 },
  },
  {
    backend: "memory",
    metric: "later (median)",
    value: median(later),
    unit: "ms",
    baseline: bareMs,
    baselineLabel: "bare http server",
    better: "lower",
    goal: { text: "< 100 ms", met: median(later) < 100 },
  },
]);
