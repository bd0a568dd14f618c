/**
 * The several-apiserver benchmark: `npm run bench:ha`.
 *
 * In one run, with real processes: the same create load (ConfigMaps of 1 KiB through
 * the runtime's client, BENCH_CALLERS concurrent callers) against one apiserver on a
 * one-member etcd, and spread over two apiservers on a three-member etcd cluster (half
 * the callers prefer each apiserver; each client names both, and fails over). The two
 * are measured in alternating slices, so both see the same load on a shared machine;
 * the ratio is spread / single.
 *
 * Then, on the spread layout under the same load, one fault at a time, and the p99 of
 * the writes acknowledged in the BENCH_FAULT_MS after it, against the write p99 with
 * no fault, with Kubernetes' SLO for mutating calls (p99 < 1 s) as the goal:
 * SIGKILL of an etcd follower (restarted after), of the etcd leader (restarted after),
 * and of one apiserver. The p99 is of acknowledged writes only; those that failed
 * meanwhile (an error to the client: not acknowledged, possibly applied) are counted
 * and printed beside it.
 *
 * Environment:
 *   BENCH_MS        length of each rate measurement (default 6000)
 *   BENCH_CALLERS   concurrent callers (default 50)
 *   BENCH_FAULT_MS  window measured after each fault (default 5000)
 */
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import os, { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, type RestConfig } from "@setpoint/runtime";
import { EtcdClient } from "../src/storage/etcd/index.ts";
import { type SetpointProcess, startSetpoint } from "../test/e2e/helpers/setpoint.ts";
import {
  ETCD_INSTALL_HINT,
  type EtcdCluster,
  type EtcdProcess,
  etcdBinary,
  startEtcd,
  startEtcdCluster,
} from "../test/helpers/etcd.ts";
import { benchValue } from "./lib/store-bench.ts";
import { printTable, type Row } from "./lib/table.ts";
import { callersFor, interleaved, now, percentile, type Rate } from "./lib/timing.ts";

const DURATION_MS = Number(process.env.BENCH_MS ?? 6000);
const CALLERS = Number(process.env.BENCH_CALLERS ?? 50);
const FAULT_MS = Number(process.env.BENCH_FAULT_MS ?? 5000);
const ROUNDS = 6;
/** Kubernetes' SLO for mutating API calls: p99 under 1 s. */
const SLO_MS = 1000;
const CM = { apiVersion: "v1", kind: "ConfigMap" } as const;
const VALUE = benchValue(1024);

const cleanups: (() => unknown)[] = [];
const dirs: string[] = [];

/** `setpoint up` on etcd, no controllers, agent or gateway; `shareFrom`: that data dir's credentials. */
async function apiserver(endpoints: string[], shareFrom?: string): Promise<SetpointProcess> {
  const dir = mkdtempSync(join(tmpdir(), "setpoint-bench-ha-"));
  dirs.push(dir);
  if (shareFrom) {
    for (const f of ["ca.crt", "apiserver.crt", "apiserver.key", "admin-token"]) {
      copyFileSync(join(shareFrom, f), join(dir, f));
    }
  }
  const p = await startSetpoint([
    "--data-dir",
    dir,
    "--storage",
    "etcd",
    "--etcd-endpoints",
    endpoints.join(","),
    "--no-controllers",
    "--log-level",
    "warn",
  ]);
  cleanups.push(() => p.stop("SIGKILL"));
  return p;
}

function configOf(p: SetpointProcess, servers: string[]): RestConfig {
  return {
    server: servers[0],
    servers,
    ca: Buffer.from(p.target.ca),
    token: p.target.token,
    timeoutMs: 10_000,
  };
}

/** Creates through `clients` (callers spread evenly), latencies recorded with their end time. */
class Load {
  private n = 0;
  readonly latencies: { at: number; ms: number }[] = [];
  failed = 0;

  constructor(
    private readonly clients: Client[],
    private readonly prefix: string,
  ) {}

  private async create(caller: number): Promise<void> {
    const client = this.clients[caller % this.clients.length];
    const t = now();
    try {
      await client.create({
        ...CM,
        metadata: { name: `${this.prefix}-${this.n++}`, namespace: "default" },
        data: { v: VALUE },
      });
      this.latencies.push({ at: Date.now(), ms: now() - t });
    } catch {
      this.failed++;
    }
  }

  run(ms: number): Promise<Rate> {
    return callersFor(CALLERS, ms, (c) => this.create(c));
  }

  p99(from: number, to: number): number {
    return percentile(
      this.latencies.filter((l) => l.at >= from && l.at <= to).map((l) => l.ms),
      99,
    );
  }
}

async function etcdLeader(cluster: EtcdCluster): Promise<EtcdProcess> {
  const client = new EtcdClient({
    endpoints: cluster.endpoints,
    dialTimeoutMs: 1000,
    requestTimeoutMs: 2000,
  });
  try {
    for (;;) {
      for (const m of cluster.members) {
        if (!m.running) continue;
        const s = await client.status(m.clientUrl).catch(() => undefined);
        if (s && s.leader !== 0 && s.leader === s.header.member_id) return m;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    client.close();
  }
}

async function main(): Promise<void> {
  if (!etcdBinary()) {
    console.log(`bench:ha: skipped, no etcd binary (install it with: ${ETCD_INSTALL_HINT})`);
    return;
  }
  // One apiserver on one etcd member.
  const single = await startEtcd();
  cleanups.push(() => single.destroy());
  const a0 = await apiserver(single.endpoints);
  const singleClient = new Client(configOf(a0, [a0.url]));
  // Two apiservers on three members, sharing credentials.
  const cluster = await startEtcdCluster(3);
  cleanups.push(() => cluster.destroy());
  const a = await apiserver(cluster.endpoints);
  const b = await apiserver(cluster.endpoints, dirs.at(-1));
  const spreadClients = [
    new Client(configOf(a, [a.url, b.url])),
    new Client(configOf(a, [b.url, a.url])),
  ];
  const singleLoad = new Load([singleClient], "single");
  const spreadLoad = new Load(spreadClients, "spread");

  // Warm up both, then alternate slices.
  await singleLoad.run(500);
  await spreadLoad.run(500);
  const quietFrom = Date.now();
  const [singleRate, spreadRate] = await interleaved(
    DURATION_MS * 2,
    ROUNDS,
    (ms) => singleLoad.run(ms),
    (ms) => spreadLoad.run(ms),
  );
  const quietP99 = spreadLoad.p99(quietFrom, Date.now());

  // Faults on the spread layout, one at a time, under the same load.
  const faults: { name: string; p99: number; failed: number; writes: number }[] = [];
  const underFault = async (
    name: string,
    inflict: () => Promise<void>,
    heal?: () => Promise<void>,
  ) => {
    const failedBefore = spreadLoad.failed;
    const running = spreadLoad.run(FAULT_MS + 1500);
    await new Promise((r) => setTimeout(r, 1000));
    const t0 = Date.now();
    await inflict();
    await running;
    const t1 = t0 + FAULT_MS;
    faults.push({
      name,
      p99: spreadLoad.p99(t0, t1),
      failed: spreadLoad.failed - failedBefore,
      writes: spreadLoad.latencies.filter((l) => l.at >= t0 && l.at <= t1).length,
    });
    await heal?.();
  };
  const leader = await etcdLeader(cluster);
  const follower = cluster.members.find((m) => m !== leader) as EtcdProcess;
  await underFault(
    `SIGKILL of etcd follower ${follower.name}`,
    () => follower.kill(),
    () => follower.start(),
  );
  const leaderNow = await etcdLeader(cluster);
  await underFault(
    `SIGKILL of the etcd leader ${leaderNow.name}`,
    () => leaderNow.kill(),
    () => leaderNow.start(),
  );
  await underFault("SIGKILL of one apiserver", async () => {
    await a.stop("SIGKILL");
  });

  const rows: Row[] = [
    {
      backend: "ha",
      metric: `creates/s, ${CALLERS} callers, 2 apiservers on 3 etcd members`,
      value: spreadRate.perSecond,
      unit: "/s",
      baseline: singleRate.perSecond,
      baselineLabel: "1 apiserver on 1 etcd member, same load",
      better: "higher",
    },
    ...faults.map(
      (f): Row => ({
        backend: "ha",
        metric: `write p99, ${FAULT_MS / 1000} s after ${f.name} (${f.writes} acknowledged, ${f.failed} failed)`,
        value: f.p99,
        unit: "ms",
        baseline: quietP99,
        baselineLabel: "write p99 without a fault",
        better: "lower",
        goal: { text: `< ${SLO_MS} ms (Kubernetes' SLO)`, met: f.p99 < SLO_MS },
      }),
    ),
  ];
  printTable(`HA benchmark (${DURATION_MS} ms per layout, ${os.cpus().length} CPUs)`, rows);
  for (const c of [singleClient, ...spreadClients]) c.close();
}

try {
  await main();
} finally {
  for (const c of cleanups.reverse()) await c();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}
