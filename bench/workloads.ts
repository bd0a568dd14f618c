/**
 * Workloads benchmark: `npm run bench:workloads`.
 *
 * A control plane (`setpoint up`, with its controllers and the scheduler) and
 * simulated nodes (`setpoint agent --simulate`), each its own process, as a user
 * runs them; the benchmark drives them through the API and watches. In one run:
 *
 * - baseline: BENCH_PODS (default 1,000) bare Pod creates through the API, 32 at a
 *   time (what the server alone does per second);
 * - baseline for the same work: BENCH_PODS Pods each created, bound through the
 *   binding subresource and given the status a simulated node posts, through the
 *   API with nothing else running, 32 Pods at a time (the Deployment's ratio is
 *   to this);
 * - a Deployment of BENCH_PODS replicas on BENCH_NODES (default 100) simulated
 *   nodes, from create to all available: Pods per second end to end (goal at
 *   least 300), and the API writes per Pod (creates, bindings, status writes and
 *   the deletions, counted from the server's apiserver_request_total; goal no
 *   more than 4);
 * - a rolling update of those Pods: a watcher checks at every Pod event that the
 *   Pods not being deleted never exceed replicas + maxSurge and the available
 *   (Ready, not being deleted) never drop below replicas - maxUnavailable;
 *   violations (goal 0);
 * - a node lost, on a second control plane whose node monitor grace period is
 *   shortened to BENCH_GRACE_S (default 5) seconds: a simulated node (its own
 *   agent process, renewing its Lease every BENCH_HEARTBEAT_S, default 1, a
 *   fifth of the grace as the kubelet's 10 s is of Kubernetes' 50 s) runs
 *   BENCH_LOST_PODS (default 100) Pods that tolerate `unreachable` for
 *   BENCH_TOLERATION_S (default 5) seconds; the agent is killed with SIGKILL; the
 *   time until the node is Ready=Unknown and until every Pod is evicted, beside
 *   what was configured.
 *
 * The first control plane and its nodes keep Kubernetes' node timings (50 s
 * grace, Leases renewed every 10 s: 10 Lease writes a second from 100 nodes),
 * so the Deployment and the rolling update run under the load a cluster of 100
 * nodes puts on its apiserver by default, not under the tenfold one the node-lost
 * part's shortened timings would add.
 *
 * The Deployment's time is broken down by stage, measured in the same run by a
 * Pod watch started before the create: until every Pod exists, is bound to a
 * node, is Ready (as the simulated nodes post it), until the ReplicaSet's
 * status.availableReplicas is BENCH_PODS, and until the Deployment is rolled out.
 *
 * BENCH_WORKLOADS_ONLY=deployment stops after the Deployment's figures.
 * BENCH_UP_NODE_FLAGS passes flags to node for the `setpoint up` child (for
 * example `--cpu-prof --cpu-prof-dir=/tmp/prof`; the child is then stopped with
 * SIGTERM, so that it writes its profile); BENCH_AGENT_NODE_FLAGS likewise for
 * the simulated nodes' child.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Deployment, KubeObject, Node, Pod, ReplicaSet } from "@setpoint/api";
import { Client, loadKubeconfig } from "@setpoint/runtime";
import { simulatedRecord, simulatedStatus } from "../src/agent/simulate/sim-pod.ts";

const PODS = Number(process.env.BENCH_PODS ?? 1_000);
const NODES = Number(process.env.BENCH_NODES ?? 100);
const LOST_PODS = Number(process.env.BENCH_LOST_PODS ?? 100);
const GRACE_S = Number(process.env.BENCH_GRACE_S ?? 5);
const TOLERATION_S = Number(process.env.BENCH_TOLERATION_S ?? 5);
const HEARTBEAT_S = Number(process.env.BENCH_HEARTBEAT_S ?? 1);
const CREATE_CONCURRENCY = 32;
const WAIT_MS = 10 * 60_000;

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const BIN = join(ROOT, "bin", "setpoint.mjs");
const DEPLOY = { apiVersion: "apps/v1", kind: "Deployment" } as const;
const POD = { apiVersion: "v1", kind: "Pod" } as const;
const NODE = { apiVersion: "v1", kind: "Node" } as const;
const NS_KIND = { apiVersion: "v1", kind: "Namespace" } as const;

/** One printed figure, with its ratio to the baseline where it has one. */
interface Line {
  name: string;
  value: string;
  ratio?: number;
  /** What the ratio is to (default "the baseline"). */
  of?: string;
}

function print(title: string, lines: Line[]): void {
  console.log(`\n${title}`);
  const width = Math.max(...lines.map((l) => l.name.length));
  for (const l of lines) {
    const ratio =
      l.ratio === undefined ? "" : `  (${l.ratio.toFixed(2)}x ${l.of ?? "the baseline"})`;
    console.log(`  ${l.name.padEnd(width)}  ${l.value}${ratio}`);
  }
}

const children: ChildProcess[] = [];
function stopAll(): void {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
}

/** Stops the children with SIGTERM and waits for them (so that a --cpu-prof child writes its profile). */
async function stopGently(): Promise<void> {
  await Promise.all(
    children.map((c) =>
      c.exitCode !== null || c.signalCode !== null
        ? undefined
        : new Promise<void>((resolve) => {
            const kill = setTimeout(() => c.kill("SIGKILL"), 30_000);
            c.once("exit", () => {
              clearTimeout(kill);
              resolve();
            });
            c.kill("SIGTERM");
          }),
    ),
  );
}
process.on("exit", stopAll);
process.on("SIGINT", () => process.exit(130));

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
}

function nodeFlags(v: string | undefined): string[] {
  return (v ?? "").split(/\s+/).filter((f) => f.length > 0);
}

function run(args: string[], name: string, flags: string[] = []): ChildProcess {
  const child = spawn(process.execPath, [...flags, BIN, ...args], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, NODE_OPTIONS: "" },
  });
  let err = "";
  child.stderr?.on("data", (d) => {
    err = (err + d).slice(-4000);
  });
  child.on("exit", (code, signal) => {
    if (code && code !== 0)
      process.stderr.write(`${name} exited ${code} ${signal ?? ""}\n${err}\n`);
  });
  children.push(child);
  return child;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Mutating requests (create, update, patch, delete) by resource[/subresource]. */
async function writesByResource(client: Client): Promise<Map<string, number>> {
  const res = await client.raw("GET", "/metrics");
  const out = new Map<string, number>();
  for (const line of res.text.split("\n")) {
    if (!line.startsWith("apiserver_request_total{")) continue;
    if (!/verb="(POST|PUT|PATCH|DELETE|CREATE|UPDATE)"/i.test(line)) continue;
    const resource = /resource="([^"]*)"/.exec(line)?.[1] ?? "";
    const sub = /subresource="([^"]*)"/.exec(line)?.[1] ?? "";
    const k = sub ? `${resource}/${sub}` : resource;
    out.set(k, (out.get(k) ?? 0) + Number(line.slice(line.lastIndexOf(" ") + 1)));
  }
  return out;
}

/** Mutating requests on pods and their subresources. */
async function podWrites(client: Client): Promise<number> {
  let total = 0;
  for (const [k, n] of await writesByResource(client)) if (k.split("/")[0] === "pods") total += n;
  return total;
}

/** The writes other than Pods' made between two readings, largest first. */
function otherWrites(before: Map<string, number>, after: Map<string, number>): string {
  return [...after]
    .map(([k, n]) => [k, n - (before.get(k) ?? 0)] as const)
    .filter(([k, n]) => n > 0 && k.split("/")[0] !== "pods")
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k} ${n}`)
    .join(", ");
}

function template(image: string, extra: Partial<Pod["spec"]> = {}) {
  return {
    metadata: { labels: { app: "bench" } },
    spec: { containers: [{ name: "app", image }], ...extra },
  };
}

function isReady(p: Pod): boolean {
  return (p.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
}

async function waitRolledOut(client: Client, name: string, ns: string, replicas: number) {
  await until(`${name} rolled out`, async () => {
    const d = await client.get<Deployment>(DEPLOY, name, ns);
    const s = d.status;
    return s &&
      (s.observedGeneration ?? 0) >= (d.metadata.generation ?? 0) &&
      s.updatedReplicas === replicas &&
      s.availableReplicas === replicas &&
      s.replicas === replicas
      ? true
      : undefined;
  });
}

/**
 * The stages of a Deployment's Pods reaching available, from a Pod watch and a
 * ReplicaSet watch in the namespace: the moment the last Pod was created, bound
 * and Ready, and when the ReplicaSet's availableReplicas reached `replicas`.
 */
async function watchStages(client: Client, ns: string, replicas: number) {
  const RS = { apiVersion: "apps/v1", kind: "ReplicaSet" } as const;
  const created = new Set<string>();
  const bound = new Set<string>();
  const ready = new Set<string>();
  const at: Record<string, number> = {};
  let t0 = 0;
  const mark = (stage: string, n: number) => {
    if (n >= replicas && at[stage] === undefined) at[stage] = performance.now();
  };
  const podWatch = client.watch<Pod>(POD, {
    namespace: ns,
    resourceVersion: (await client.list(POD, { namespace: ns, limit: 1 })).metadata.resourceVersion,
  });
  const rsWatch = client.watch<ReplicaSet>(RS, {
    namespace: ns,
    resourceVersion: (await client.list(RS, { namespace: ns, limit: 1 })).metadata.resourceVersion,
  });
  const pods = (async () => {
    for await (const ev of podWatch) {
      if (ev.type !== "ADDED" && ev.type !== "MODIFIED") continue;
      const p = ev.object as Pod;
      const uid = p.metadata.uid ?? "";
      created.add(uid);
      mark("created", created.size);
      if (p.spec?.nodeName) bound.add(uid);
      mark("bound", bound.size);
      if (isReady(p)) ready.add(uid);
      mark("ready", ready.size);
    }
  })().catch(() => undefined);
  const sets = (async () => {
    for await (const ev of rsWatch) {
      if (ev.type !== "ADDED" && ev.type !== "MODIFIED") continue;
      mark("rsAvailable", (ev.object as ReplicaSet).status?.availableReplicas ?? 0);
    }
  })().catch(() => undefined);
  return {
    start(t: number) {
      t0 = t;
    },
    stop(end: number): Line[] {
      podWatch.close();
      rsWatch.close();
      void pods;
      void sets;
      const s = (stage: string) =>
        at[stage] === undefined ? "not seen" : `${((at[stage] - t0) / 1000).toFixed(2)} s`;
      return [
        { name: `  all ${replicas} Pods created`, value: s("created") },
        { name: `  all ${replicas} Pods bound`, value: s("bound") },
        { name: `  all ${replicas} Pods Ready (posted by the nodes)`, value: s("ready") },
        { name: `  ReplicaSet availableReplicas = ${replicas}`, value: s("rsAvailable") },
        {
          name: "  Deployment rolled out (as kubectl rollout status)",
          value: `${((end - t0) / 1000).toFixed(2)} s`,
        },
      ];
    },
  };
}

/** Seconds from `t0` until `n` Scheduled Events are in `ns` (polled), or undefined after 60 s. */
async function allScheduledEvents(
  client: Client,
  ns: string,
  n: number,
  t0: number,
): Promise<number | undefined> {
  const EVENT = { apiVersion: "v1", kind: "Event" } as const;
  const deadline = performance.now() + 60_000;
  while (performance.now() < deadline) {
    const list = await client.list(EVENT, { namespace: ns, fieldSelector: "reason=Scheduled" });
    if (list.items.length >= n) return (performance.now() - t0) / 1000;
    await new Promise((r) => setTimeout(r, 100));
  }
  return undefined;
}

async function parallel(n: number, limit: number, op: (i: number) => Promise<unknown>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < n) await op(next++);
    }),
  );
}

/** Starts `setpoint up` (no agent) on a new data dir with `extra` flags; its admin client once ready. */
async function startControlPlane(
  name: string,
  extra: string[],
  flags: string[] = [],
): Promise<{ client: Client; kubeconfig: string; child: ChildProcess }> {
  const dir = mkdtempSync(join(tmpdir(), "setpoint-bench-workloads-"));
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  const port = await freePort();
  const child = run(
    [
      "up",
      "--data-dir",
      dir,
      "--listen",
      `127.0.0.1:${port}`,
      "--log-level",
      "warn",
      "--no-agent",
      ...extra,
    ],
    name,
    flags,
  );
  const kubeconfig = join(dir, "kubeconfig");
  const client = await until(`the apiserver (${name})`, async () => {
    const c = new Client(loadKubeconfig({ path: kubeconfig }));
    await c.raw("GET", "/readyz").then((r) => {
      if (r.status !== 200) throw new Error("not ready");
    });
    return c;
  });
  return { client, kubeconfig, child };
}

async function main(): Promise<void> {
  // Kubernetes' node timings: 50 s grace here, and the agent's 10 s heartbeat.
  const { client, kubeconfig } = await startControlPlane(
    "setpoint up",
    [],
    nodeFlags(process.env.BENCH_UP_NODE_FLAGS),
  );
  const rows: Line[] = [];

  // Baseline: bare Pod creates (unschedulable: a scheduler name nobody serves).
  await client.create({ ...NS_KIND, metadata: { name: "baseline" } });
  let t = performance.now();
  await parallel(PODS, CREATE_CONCURRENCY, (i) =>
    client.create<Pod>({
      ...POD,
      metadata: { name: `bare-${i}`, namespace: "baseline" },
      spec: { schedulerName: "nobody", containers: [{ name: "app", image: "demo/hello:1" }] },
    }),
  );
  const bareRate = PODS / ((performance.now() - t) / 1000);
  await client.deleteCollection(POD, { namespace: "baseline", gracePeriodSeconds: 0 });

  // Baseline for the same work: each Pod created, bound through its binding
  // subresource and given the Running and Ready status a simulated node posts,
  // CREATE_CONCURRENCY Pods at a time, with no controller, scheduler or node.
  t = performance.now();
  await parallel(PODS, CREATE_CONCURRENCY, async (i) => {
    const pod = await client.create<Pod>({
      ...POD,
      metadata: { name: `same-${i}`, namespace: "baseline", labels: { app: "bench" } },
      spec: { schedulerName: "nobody", containers: [{ name: "app", image: "demo/hello:1" }] },
    });
    const name = pod.metadata.name ?? "";
    const uid = pod.metadata.uid ?? "";
    await client.create(
      {
        apiVersion: "v1",
        kind: "Binding",
        metadata: { name, namespace: "baseline", uid },
        target: { apiVersion: "v1", kind: "Node", name: `baseline-${i % NODES}` },
      },
      { subresource: "binding", parentType: POD },
    );
    const rec = simulatedRecord(pod, `10.255.${(i >> 8) & 255}.${i & 255}`);
    await client.patch(
      POD,
      name,
      "baseline",
      { metadata: { uid }, status: simulatedStatus(rec, "10.254.0.1", pod.status) },
      { type: "merge", subresource: "status" },
    );
  });
  const sameWorkRate = PODS / ((performance.now() - t) / 1000);
  await client.deleteCollection(POD, { namespace: "baseline", gracePeriodSeconds: 0 });
  await client.delete(NS_KIND, "baseline");

  // Nodes.
  run(
    ["agent", "--simulate", String(NODES), "--kubeconfig", kubeconfig, "--log-level", "warn"],
    "setpoint agent --simulate",
    nodeFlags(process.env.BENCH_AGENT_NODE_FLAGS),
  );
  await until(`${NODES} ready nodes`, async () => {
    const nodes = await client.list<Node>(NODE);
    const ready = nodes.items.filter((n) =>
      (n.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True"),
    );
    return ready.length >= NODES ? true : undefined;
  });
  // Every node's Lease made, so that only their renewals (the steady load) fall in the window.
  await until(`${NODES} node Leases`, async () => {
    const leases = await client.list<KubeObject>(
      { apiVersion: "coordination.k8s.io/v1", kind: "Lease" },
      { namespace: "kube-node-lease" },
    );
    return leases.items.length >= NODES ? true : undefined;
  });

  // A Deployment from create to all available.
  await client.create({ ...NS_KIND, metadata: { name: "bench" } });
  const writesBefore = await podWrites(client);
  const allBefore = await writesByResource(client);
  const stages = await watchStages(client, "bench", PODS);
  t = performance.now();
  stages.start(t);
  await client.create<Deployment>({
    ...DEPLOY,
    metadata: { name: "web", namespace: "bench" },
    spec: {
      replicas: PODS,
      selector: { matchLabels: { app: "bench" } },
      template: template("demo/hello:1"),
    },
  });
  await waitRolledOut(client, "web", "bench", PODS);
  const rolloutS = (performance.now() - t) / 1000;
  const stageRows = stages.stop(performance.now());
  if (process.env.BENCH_UP_NODE_FLAGS || process.env.BENCH_AGENT_NODE_FLAGS) {
    // The Deployment's window on the monotonic clock CPU profiles are stamped with (µs).
    const end = process.hrtime.bigint() / 1000n;
    console.error(
      `deployment window (monotonic µs): ${end - BigInt(Math.round(rolloutS * 1e6))} ${end}`,
    );
  }
  const writesPerPod = ((await podWrites(client)) - writesBefore) / PODS;
  const others = otherWrites(allBefore, await writesByResource(client));
  // The scheduler's Events go one at a time behind its bindings (as client-go's
  // broadcaster sends them): most are written after the rollout.
  const eventsDoneS = await allScheduledEvents(client, "bench", PODS, t);
  const deployRate = PODS / rolloutS;
  rows.push({ name: "bare Pod creates (baseline)", value: `${bareRate.toFixed(0)} Pods/s` });
  rows.push({
    name: "create + bind + Ready status per Pod through the API (baseline)",
    value: `${sameWorkRate.toFixed(0)} Pods/s`,
  });
  rows.push({
    name: `Deployment of ${PODS} on ${NODES} nodes, create to available`,
    value: `${deployRate.toFixed(0)} Pods/s (${rolloutS.toFixed(1)} s; goal >= 300)`,
    ratio: deployRate / sameWorkRate,
    of: "the same work through the API",
  });
  rows.push(...stageRows);
  rows.push({
    name: "API writes per Pod (create, bind, status)",
    value: `${writesPerPod.toFixed(2)} (goal <= 4)`,
  });
  rows.push({ name: "  other API writes meanwhile", value: others || "none" });
  rows.push({
    name: `  all ${PODS} Scheduled Events written (one at a time, trailing)`,
    value: eventsDoneS === undefined ? "not within 60 s" : `${eventsDoneS.toFixed(2)} s`,
  });

  if (process.env.BENCH_WORKLOADS_ONLY === "deployment") {
    print(`workloads (${PODS} Pods, ${NODES} simulated nodes)`, rows);
    client.close();
    if (process.env.BENCH_UP_NODE_FLAGS || process.env.BENCH_AGENT_NODE_FLAGS) await stopGently();
    stopAll();
    return;
  }

  // A rolling update, watched.
  const maxSurge = Math.ceil(PODS * 0.25);
  const maxUnavailable = Math.floor(PODS * 0.25);
  const pods = new Map<string, Pod>();
  for (const p of (await client.list<Pod>(POD, { namespace: "bench" })).items) {
    pods.set(p.metadata.name ?? "", p);
  }
  let violations = 0;
  let maxPods = 0;
  let minAvailable = Number.POSITIVE_INFINITY;
  let events = 0;
  const watch = client.watch<Pod>(POD, {
    namespace: "bench",
    resourceVersion: (await client.list(POD, { namespace: "bench", limit: 1 })).metadata
      .resourceVersion,
  });
  const watching = (async () => {
    for await (const ev of watch) {
      if (ev.type === "BOOKMARK" || ev.type === "ERROR") continue;
      const p = ev.object as Pod;
      if (ev.type === "DELETED") pods.delete(p.metadata.name ?? "");
      else pods.set(p.metadata.name ?? "", p);
      events++;
      let live = 0;
      let available = 0;
      for (const q of pods.values()) {
        if (q.metadata.deletionTimestamp) continue;
        live++;
        if (isReady(q)) available++;
      }
      maxPods = Math.max(maxPods, live);
      minAvailable = Math.min(minAvailable, available);
      if (live > PODS + maxSurge || available < PODS - maxUnavailable) violations++;
    }
  })().catch(() => undefined);
  t = performance.now();
  await client.patch(
    DEPLOY,
    "web",
    "bench",
    {
      spec: { template: { spec: { containers: [{ name: "app", image: "demo/hello:2" }] } } },
    },
    { type: "strategic" },
  );
  await waitRolledOut(client, "web", "bench", PODS);
  const updateS = (performance.now() - t) / 1000;
  watch.close();
  await watching;
  rows.push({
    name: `rolling update of ${PODS} (25% surge, 25% unavailable)`,
    value: `${updateS.toFixed(1)} s, ${events} Pod events; Pods at most ${maxPods} (limit ${PODS + maxSurge}), available at least ${minAvailable} (limit ${PODS - maxUnavailable}); violations ${violations} (goal 0)`,
  });

  // A node lost, on a control plane of its own with the grace period shortened.
  client.close();
  await stopGently();
  const second = await startControlPlane("setpoint up (node lost)", [
    "--node-monitor-grace-period",
    `${GRACE_S}s`,
  ]);
  const lostClient = second.client;
  await lostClient.create({ ...NS_KIND, metadata: { name: "bench" } });
  const lost = run(
    [
      "agent",
      "--simulate",
      "1",
      "--node-prefix",
      "lost-",
      "--kubeconfig",
      second.kubeconfig,
      "--heartbeat",
      `${HEARTBEAT_S}s`,
      "--log-level",
      "warn",
    ],
    "setpoint agent (lost node)",
  );
  await until("the lost node", () => lostClient.get<Node>(NODE, "lost-0").then(() => true));
  await lostClient.create<Deployment>({
    ...DEPLOY,
    metadata: { name: "victims", namespace: "bench" },
    spec: {
      replicas: LOST_PODS,
      selector: { matchLabels: { app: "victim" } },
      template: {
        metadata: { labels: { app: "victim" } },
        spec: {
          nodeSelector: { "kubernetes.io/hostname": "lost-0" },
          tolerations: [
            {
              key: "node.kubernetes.io/unreachable",
              operator: "Exists",
              effect: "NoExecute",
              tolerationSeconds: TOLERATION_S,
            },
            {
              key: "node.kubernetes.io/not-ready",
              operator: "Exists",
              effect: "NoExecute",
              tolerationSeconds: TOLERATION_S,
            },
          ],
          containers: [{ name: "app", image: "demo/hello:1" }],
        },
      },
    },
  });
  await waitRolledOut(lostClient, "victims", "bench", LOST_PODS);
  const victims = new Set(
    (
      await lostClient.list<Pod>(POD, { namespace: "bench", labelSelector: "app=victim" })
    ).items.map((p) => p.metadata.uid),
  );
  const lease = await lostClient.get<KubeObject>(
    { apiVersion: "coordination.k8s.io/v1", kind: "Lease" },
    "lost-0",
    "kube-node-lease",
  );
  lost.kill("SIGKILL");
  const killedAt = Date.now();
  const renewedAt = Date.parse(
    String((lease.spec as { renewTime?: string }).renewTime ?? killedAt),
  );
  const unknownAt = await until("Ready=Unknown", async () => {
    const n = await lostClient.get<Node>(NODE, "lost-0");
    const ready = n.status?.conditions?.find((c) => c.type === "Ready");
    return ready?.status === "Unknown" ? Date.now() : undefined;
  });
  const evictedAt = await until("every Pod evicted", async () => {
    const list = await lostClient.list<Pod>(POD, {
      namespace: "bench",
      labelSelector: "app=victim",
    });
    const left = list.items.filter(
      (p) => victims.has(p.metadata.uid) && !p.metadata.deletionTimestamp,
    );
    return left.length === 0 ? Date.now() : undefined;
  });
  rows.push({
    name: `node lost (heartbeat ${HEARTBEAT_S} s): Ready=Unknown`,
    value: `${((unknownAt - renewedAt) / 1000).toFixed(1)} s after its last renewal, ${((unknownAt - killedAt) / 1000).toFixed(1)} s after the kill (configured grace ${GRACE_S} s)`,
  });
  rows.push({
    name: `node lost: all ${LOST_PODS} Pods evicted`,
    value: `${((evictedAt - unknownAt) / 1000).toFixed(1)} s after Ready=Unknown (configured toleration ${TOLERATION_S} s)`,
  });

  print(`workloads (${PODS} Pods, ${NODES} simulated nodes)`, rows);
  lostClient.close();
  stopAll();
}

main().catch((err) => {
  console.error(err);
  stopAll();
  process.exit(1);
});
