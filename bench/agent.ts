/**
 * `npm run bench:agent`: the node agent (issue 13 §5), each figure beside a baseline
 * measured in the same run.
 *
 * - Pod start: BENCH_AGENT_PODS (100) hello Pods created at once, bound to one agent;
 *   per Pod, create to answering HTTP on its address, and create to Ready seen in a
 *   watch, p50 and p99. Baseline: the same number of hello processes spawned at once
 *   directly, spawn to answering. Goal: p99 within 100 ms of the baseline's p99.
 * - Idle: the agent's resident memory and CPU with BENCH_AGENT_IDLE (200) idle Pods
 *   (`sleep`, the `idle:1` image built here); goal under 100 MiB. Baseline: the agent with no Pods.
 * - Recovery: the agent restarted with those Pods running: time from spawn until
 *   every Pod is adopted, and restarts of healthy Pods (goal 0). Baseline: the
 *   agent's start with no Pods.
 *
 * The agent runs as its own process (`setpoint agent`) against an in-process apiserver.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Pod } from "@setpoint/api";
import { Client, Informer } from "@setpoint/runtime";
import { ImageStore, importBuiltinImages } from "../src/agent/images/index.ts";
import { startTestEnv } from "../src/testenv/testenv.ts";
import { printTable, type Row } from "./lib/table.ts";

const PODS = Number(process.env.BENCH_AGENT_PODS ?? 100);
const IDLE = Number(process.env.BENCH_AGENT_IDLE ?? 200);
const BIN = new URL("../bin/setpoint.mjs", import.meta.url).pathname;
const HELLO = new URL("../images/hello/server.mjs", import.meta.url).pathname;
const POD = { apiVersion: "v1", kind: "Pod" } as const;
const RANGE = 83;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How long any one wait may take before the run stops, naming what it waited for. */
const WAIT_MS = Number(process.env.BENCH_AGENT_WAIT_MS ?? 180_000);

/** Polls `check` until it returns a value other than undefined or false; throws after WAIT_MS. */
async function until<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  everyMs = 10,
): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline)
      throw new Error(`bench:agent: gave up after ${WAIT_MS} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

function pct(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : Number.NaN;
}

/** Resolves once something accepts connections at host:port. */
async function listening(host: string, port: number): Promise<void> {
  await until(
    `something listening on ${host}:${port}`,
    () =>
      new Promise<boolean>((done) => {
        const s = connect({ host, port });
        s.once("connect", () => {
          s.destroy();
          done(true);
        });
        s.once("error", () => done(false));
      }),
  );
}

/** Bare baseline: `n` hello processes spawned at once, spawn to listening (ms each). */
async function bareStarts(n: number): Promise<number[]> {
  const children: ChildProcess[] = [];
  try {
    return await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const ip = `127.84.${i >> 8}.${(i & 255) + 1}`;
        const t = performance.now();
        const child = spawn(process.execPath, [HELLO], {
          env: { ...process.env, SETPOINT_POD_IP: ip, PORT: "8080", HOSTNAME: `bare-${i}` },
          stdio: "ignore",
        });
        children.push(child);
        await listening(ip, 8080);
        return performance.now() - t;
      }),
    );
  } finally {
    for (const c of children) c.kill("SIGKILL");
  }
}

interface AgentProc {
  child: ChildProcess;
  endpoint: string;
  startedMs: number;
  log: () => string;
}

async function startAgent(
  kubeconfig: string,
  dataDir: string,
  imageDir: string,
): Promise<AgentProc> {
  const t = performance.now();
  const child = spawn(
    process.execPath,
    [
      BIN,
      "agent",
      "--kubeconfig",
      kubeconfig,
      "--node-name",
      "bench-node",
      "--data-dir",
      dataDir,
      "--image-dir",
      imageDir,
      "--pod-range",
      String(RANGE),
      "--log-format",
      "json",
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  child.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  for (;;) {
    const m = /endpoint (http:\/\/\S+)/.exec(out);
    if (m) return { child, endpoint: m[1], startedMs: performance.now() - t, log: () => out };
    if (child.exitCode !== null) throw new Error(`agent exited:\n${out}`);
    await sleep(5);
  }
}

async function stopAgent(a: AgentProc): Promise<void> {
  if (a.child.exitCode !== null || a.child.signalCode !== null) return;
  const exited = new Promise((r) => a.child.once("exit", r));
  a.child.kill("SIGTERM");
  await exited;
}

/** Resident memory (bytes) and CPU time (ms) of a process. */
function usage(pid: number): { rss: number; cpuMs: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const rss = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { rss, cpuMs: ((Number(f[11]) + Number(f[12])) * 1000) / 100 };
}

function pod(name: string, image: string, args?: string[]): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default" },
    spec: {
      nodeName: "bench-node",
      terminationGracePeriodSeconds: 1,
      containers: [{ name: "c", image, ...(args ? { args } : {}) }],
    },
  };
}

const dir = mkdtempSync(join(tmpdir(), "setpoint-bench-agent-"));
const env = await startTestEnv({ controllers: false });
const client = new Client(env.config);
const imageDir = join(dir, "images");
const store = new ImageStore(imageDir);
importBuiltinImages(store);
const idleSrc = join(dir, "idle-image");
mkdirSync(idleSrc);
writeFileSync(
  join(idleSrc, "setpoint-image.json"),
  JSON.stringify({ entrypoint: ["sleep", "1000000"] }),
);
store.build(idleSrc, ["idle:1"]);
const rows: Row[] = [];
let agent: AgentProc | undefined;
try {
  // Baseline first, on an idle machine.
  const bare = await bareStarts(PODS);

  agent = await startAgent(env.kubeconfigPath, join(dir, "agent"), imageDir);
  const emptyStartMs = agent.startedMs;
  await sleep(1_000);
  const emptyUsage = usage(agent.child.pid ?? 0);

  // Pod start: create to serving, create to Ready.
  const created = new Map<string, number>();
  const ready = new Map<string, number>();
  const informer = new Informer<Pod>(client, POD, { namespace: "default" });
  // Seen as an update, or as an add when a relist is the first to bring the Pod.
  const seeReady = (p: Pod) => {
    const name = p.metadata.name ?? "";
    if (
      created.has(name) &&
      !ready.has(name) &&
      p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")
    ) {
      ready.set(name, performance.now() - (created.get(name) ?? 0));
    }
  };
  informer.addEventHandler({ onAdd: seeReady, onUpdate: (_o, p) => seeReady(p) });
  const stopInformer = new AbortController();
  informer.start(stopInformer.signal);
  await informer.waitForSync();
  const serving = await Promise.all(
    Array.from({ length: PODS }, async (_, i) => {
      const name = `start-${i}`;
      const t = performance.now();
      created.set(name, t);
      await client.create(pod(name, "hello:1.0"));
      const ip = await until(`${name}'s podIP`, () => informer.get(name, "default")?.status?.podIP);
      await listening(ip, 8080);
      return performance.now() - t;
    }),
  );
  await until(`all ${PODS} Pods Ready (${ready.size} so far)`, () => ready.size >= PODS);
  const readyMs = [...ready.values()];
  const bareP99 = pct(bare, 99);
  rows.push(
    {
      backend: "agent",
      metric: `pod start p50, create to serving (${PODS} at once)`,
      value: pct(serving, 50),
      unit: "ms",
      baseline: pct(bare, 50),
      baselineLabel: "bare spawn to listening p50",
      better: "lower",
    },
    {
      backend: "agent",
      metric: "pod start p99, create to serving",
      value: pct(serving, 99),
      unit: "ms",
      baseline: bareP99,
      baselineLabel: "bare spawn to listening p99",
      better: "lower",
      goal: { text: "within 100 ms of bare p99", met: pct(serving, 99) <= bareP99 + 100 },
    },
    {
      backend: "agent",
      metric: "pod start p50, create to Ready (watch)",
      value: pct(readyMs, 50),
      unit: "ms",
      baseline: pct(bare, 50),
      baselineLabel: "bare spawn to listening p50",
      better: "lower",
    },
    {
      backend: "agent",
      metric: "pod start p99, create to Ready (watch)",
      value: pct(readyMs, 99),
      unit: "ms",
      baseline: bareP99,
      baselineLabel: "bare spawn to listening p99",
      better: "lower",
    },
  );
  stopInformer.abort();
  for (let i = 0; i < PODS; i++)
    await client.delete(POD, `start-${i}`, "default", { gracePeriodSeconds: 1 });
  await until(
    "the started Pods gone",
    async () => (await client.list(POD, { namespace: "default" })).items.length === 0,
    100,
  );

  // Idle Pods: memory and CPU of the agent.
  await Promise.all(
    Array.from({ length: IDLE }, (_, i) => client.create(pod(`idle-${i}`, "idle:1"))),
  );
  const endpoint = agent.endpoint;
  await until(
    `${IDLE} idle Pods running`,
    async () => {
      const res = await fetch(`${endpoint}/pods`);
      const pods = (await res.json()) as { containers: { pid?: number }[] }[];
      return pods.length === IDLE && pods.every((p) => p.containers[0].pid);
    },
    200,
  );
  await sleep(3_000);
  const u1 = usage(agent.child.pid ?? 0);
  await sleep(10_000);
  const u2 = usage(agent.child.pid ?? 0);
  const MiB = 1024 * 1024;
  // The agent's helper processes (service proxy, log relay), by the identity files it keeps.
  const helpersRss = ["service-proxy", "log-relay"].reduce((sum, name) => {
    try {
      const { pid } = JSON.parse(readFileSync(join(dir, "agent", `${name}.json`), "utf8")) as {
        pid: number;
      };
      return sum + usage(pid).rss;
    } catch {
      return sum;
    }
  }, 0);
  rows.push(
    {
      backend: "agent's helpers",
      metric: `service proxy + log relay resident, ${IDLE} idle pods`,
      value: helpersRss / MiB,
      unit: "MiB",
      baseline: u2.rss / MiB,
      baselineLabel: "the agent",
      better: "lower",
    },
    {
      backend: "agent",
      metric: `resident memory, ${IDLE} idle pods`,
      value: u2.rss / MiB,
      unit: "MiB",
      baseline: emptyUsage.rss / MiB,
      baselineLabel: "the agent with no pods",
      better: "lower",
      goal: { text: "under 100 MiB", met: u2.rss / MiB < 100 },
    },
    {
      backend: "agent",
      metric: `CPU, ${IDLE} idle pods (ms per s)`,
      value: (u2.cpuMs - u1.cpuMs) / 10,
      unit: "ms",
      baseline: 1000,
      baselineLabel: "one core",
      better: "lower",
    },
  );

  // Recovery: restart the agent with the idle Pods running.
  const before = (await (await fetch(`${agent.endpoint}/pods`)).json()) as {
    containers: { pid?: number; restartCount: number }[];
  }[];
  await stopAgent(agent);
  agent = await startAgent(env.kubeconfigPath, join(dir, "agent"), imageDir);
  const after = (await (await fetch(`${agent.endpoint}/pods`)).json()) as {
    containers: { pid?: number; restartCount: number }[];
  }[];
  const samePids = after.filter(
    (p, i) => p.containers[0].pid === before[i]?.containers[0].pid,
  ).length;
  const restarts = after.reduce((n, p) => n + p.containers[0].restartCount, 0);
  rows.push(
    {
      backend: "agent",
      metric: `restart to every pod adopted (${samePids}/${IDLE} same pid)`,
      value: agent.startedMs,
      unit: "ms",
      baseline: emptyStartMs,
      baselineLabel: "agent start with no pods",
      better: "lower",
    },
    {
      backend: "agent",
      metric: "restarts of healthy pods after the agent restart",
      value: restarts,
      unit: "",
      baseline: 0,
      baselineLabel: "none",
      better: "lower",
      goal: { text: "0", met: restarts === 0 },
    },
  );
  printTable(`setpoint agent (${PODS} pods started at once, ${IDLE} idle)`, rows);
} finally {
  if (agent) await stopAgent(agent);
  const state = (() => {
    try {
      return JSON.parse(readFileSync(join(dir, "agent", "state.json"), "utf8")) as {
        pods: Record<string, { containers: { process?: { pid: number } }[] }>;
      };
    } catch {
      return { pods: {} };
    }
  })();
  for (const r of Object.values(state.pods)) {
    for (const c of r.containers) {
      try {
        if (c.process) process.kill(-c.process.pid, "SIGKILL");
      } catch {}
    }
  }
  client.close();
  await env.stop();
  rmSync(dir, { recursive: true, force: true });
}
