/**
 * `npm run bench:port-forward`: `kubectl port-forward` through the apiserver to the
 * agent (kubectl 1.32's SPDY-over-WebSocket tunnel, carried to the agent as SPDY),
 * each figure beside the same work done directly against the Pod's address in the
 * same run:
 *
 * - Requests: BENCH_PF_REQUESTS (500) HTTP GETs to a `hello` Pod, one new TCP
 *   connection each (so one SPDY stream pair each), BENCH_PF_CONCURRENCY (8) at
 *   a time: requests per second and p50/p99 latency.
 * - Bulk: one connection that reads BENCH_PF_MIB (64) MiB from a Pod that writes
 *   them: MiB per second.
 *
 * A real `setpoint up`, a real `setpoint agent` and the real kubectl, as in
 * test/agent/port-forward.test.ts; everything is stopped at the end.
 */
import { connect } from "node:net";
import type { Pod } from "@setpoint/api";
import { startKubectl, startUpWithAgent, stopUpWithAgent } from "../test/agent/up-with-agent.ts";
import { printTable, type Row } from "./lib/table.ts";

const REQUESTS = Number(process.env.BENCH_PF_REQUESTS ?? 500);
const CONCURRENCY = Number(process.env.BENCH_PF_CONCURRENCY ?? 8);
const MIB = Number(process.env.BENCH_PF_MIB ?? 64);
const RANGE = 97;
const NODE = "bench-pf-node";
const POD = { apiVersion: "v1", kind: "Pod" } as const;
/** The bulk Pod's program: every connection gets MIB MiB, then the end. */
const BULK_SERVER = `
const net = require("node:net");
const chunk = Buffer.alloc(1 << 20, 120);
net.createServer((s) => {
  let left = Number(process.env.MIB);
  const more = () => { while (left > 0) { left--; if (!s.write(chunk)) return s.once("drain", more); } s.end(); };
  more();
}).listen(9000, process.env.SETPOINT_POD_IP);
`;

function log(message: string): void {
  process.stderr.write(`bench:port-forward: ${message}\n`);
}

function pct(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

/** One GET on a connection of its own; its latency in ms. */
function get(host: string, port: number): Promise<number> {
  return new Promise((done, fail) => {
    const t = performance.now();
    const socket = connect({ host, port });
    let answer = "";
    socket.on("data", (d: Buffer) => {
      answer += d.toString();
    });
    socket.on("error", fail);
    socket.on("close", () => {
      if (!answer.startsWith("HTTP/1.1 200")) fail(new Error(`answer: ${answer.slice(0, 80)}`));
      else done(performance.now() - t);
    });
    socket.write(`GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
  });
}

/** REQUESTS GETs, CONCURRENCY at a time: requests per second and latencies. */
async function requests(host: string, port: number): Promise<{ rps: number; ms: number[] }> {
  const ms: number[] = [];
  let next = 0;
  const t = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < REQUESTS) {
        next++;
        ms.push(await get(host, port));
      }
    }),
  );
  return { rps: (REQUESTS * 1000) / (performance.now() - t), ms };
}

/** Reads everything one connection gets; MiB per second. */
function bulk(host: string, port: number): Promise<number> {
  return new Promise((done, fail) => {
    const t = performance.now();
    let bytes = 0;
    const socket = connect({ host, port });
    socket.on("data", (d: Buffer) => {
      bytes += d.length;
    });
    socket.on("error", fail);
    socket.on("close", () => {
      if (bytes !== MIB * 1024 * 1024) fail(new Error(`read ${bytes} bytes`));
      else done(bytes / 1024 / 1024 / ((performance.now() - t) / 1000));
    });
  });
}

const parts = await startUpWithAgent({
  prefix: "setpoint-bench-pf-",
  nodeName: NODE,
  range: RANGE,
  tokens: [],
});
try {
  const { client, kubectl } = parts;
  type Container = NonNullable<Pod["spec"]>["containers"][number];
  const spec = (name: string, container: Container): Pod =>
    ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, namespace: "default" },
      spec: { nodeName: NODE, terminationGracePeriodSeconds: 1, containers: [container] },
    }) as Pod;
  await client.create(spec("web", { name: "web", image: "hello:1.0" }));
  await client.create(
    spec("bulk", {
      name: "bulk",
      image: "shell:1",
      command: ["node", "-e", BULK_SERVER],
      env: [{ name: "MIB", value: String(MIB) }],
    }),
  );
  const ips: Record<string, string> = {};
  for (let i = 0; i < 600 && Object.keys(ips).length < 2; i++) {
    for (const name of ["web", "bulk"]) {
      const p = await client.get<Pod>(POD, name, "default");
      if (p.status?.phase === "Running" && p.status.podIP) ips[name] = p.status.podIP;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  if (!ips.web || !ips.bulk) throw new Error("the Pods never ran");
  await new Promise((r) => setTimeout(r, 500));
  const pf = startKubectl(kubectl, ["port-forward", "pod/web", "0:8080"]);
  const pfBulk = startKubectl(kubectl, ["port-forward", "pod/bulk", "0:9000"]);
  const port = Number((await pf.waitFor(/127\.0\.0\.1:(\d+) -> 8080/))[1]);
  const bulkPort = Number((await pfBulk.waitFor(/127\.0\.0\.1:(\d+) -> 9000/))[1]);

  log(`${REQUESTS} requests, ${CONCURRENCY} at a time: direct, then forwarded`);
  await requests(ips.web, 8080);
  const direct = await requests(ips.web, 8080);
  await requests("127.0.0.1", port);
  const forwarded = await requests("127.0.0.1", port);
  log(`${MIB} MiB on one connection: direct, then forwarded`);
  const bulkDirect = await bulk(ips.bulk, 9000);
  const bulkForwarded = await bulk("127.0.0.1", bulkPort);

  const rows: Row[] = [
    {
      backend: "port-forward",
      metric: `requests/s, new connection each (${CONCURRENCY} at a time)`,
      value: forwarded.rps,
      unit: "req/s",
      baseline: direct.rps,
      baselineLabel: "direct to the Pod",
      better: "higher",
    },
    {
      backend: "port-forward",
      metric: "request p50",
      value: pct(forwarded.ms, 50),
      unit: "ms",
      baseline: pct(direct.ms, 50),
      baselineLabel: "direct p50",
      better: "lower",
    },
    {
      backend: "port-forward",
      metric: "request p99",
      value: pct(forwarded.ms, 99),
      unit: "ms",
      baseline: pct(direct.ms, 99),
      baselineLabel: "direct p99",
      better: "lower",
    },
    {
      backend: "port-forward",
      metric: `bulk read, ${MIB} MiB on one connection`,
      value: bulkForwarded,
      unit: "MiB/s",
      baseline: bulkDirect,
      baselineLabel: "direct",
      better: "higher",
    },
  ];
  printTable(
    "kubectl port-forward (kubectl -> apiserver WebSocket tunnel -> agent SPDY -> Pod)",
    rows,
  );
} finally {
  await stopUpWithAgent(parts, RANGE);
}
