/**
 * Runtime benchmark: `npm run bench:runtime`.
 *
 * Against the Setpoint apiserver in a child process (bench/lib/api-child.ts),
 * holding BENCH_OBJECTS (default 10,000) ConfigMaps of about 1 KiB in one
 * namespace, each figure beside a baseline measured in the same run:
 *
 * - cold start: a Manager with one controller for the ConfigMaps, from start
 *   until its cache has synced, and until every key has been reconciled once
 *   (list, sync, reconcile), against @kubernetes/client-node's informer from
 *   start until its handler has seen every object once (it has no queue);
 *   COLDSTART_ROUNDS fresh children of each, alternating, medians printed;
 * - API requests of that cold start (the runtime client's own counts): the goal
 *   is one list (paged; a first list at resourceVersion=0 is answered from the
 *   watch cache in one response, as Kubernetes does) and one watch, and no
 *   per-object GETs;
 * - steady-state reconcile throughput: every key enqueued again, through the
 *   queue and the default 4 workers, against a bare loop doing the same cache
 *   read with the same concurrency (the runtime's own cost per reconcile);
 * - retained heap of an informer holding the ConfigMaps (after GC, each in its
 *   own process), the runtime's against client-node's makeInformer: the goal is
 *   no more than it;
 * - event-to-reconcile latency p50/p99: a writer stamps its send time on
 *   ConfigMaps at a steady rate; the runtime's reconcile (or client-node's
 *   update handler) reads it on arrival.
 *
 * BENCH_OBJECTS sets the object count; BENCH_LATENCY_MS the length of each
 * latency round (default 4000).
 */
import { fork } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { KubeObject } from "@setpoint/api";
import { DEFAULT_LIST_PAGE_SIZE } from "../packages/runtime/src/cache/reflector.ts";
import { Client } from "../packages/runtime/src/client/client.ts";
import { ChildServer } from "./lib/child-server.ts";
import { printTable, type Row } from "./lib/table.ts";
import { percentile } from "./lib/timing.ts";
import { epochMs, type Report, SENT_ANNOTATION, type Task } from "./runtime/child.ts";

const OBJECTS = Number(process.env.BENCH_OBJECTS ?? 10_000);
/** Size of each ConfigMap as JSON, without managedFields. */
const OBJECT_BYTES = 1024;
const NAMESPACE = "bench";
const LATENCY_NAMESPACE = "bench-latency";
/** ConfigMaps the latency writer cycles through. */
const LATENCY_OBJECTS = 200;
/** Writes per second during a latency round. */
const LATENCY_RATE = 100;
const LATENCY_MS = Number(process.env.BENCH_LATENCY_MS ?? 4_000);
/** Rounds of each side in the latency comparison (alternating). */
const LATENCY_ROUNDS = 3;
/** Rounds of the steady-state throughput comparison (in each cold-start child). */
const THROUGHPUT_ROUNDS = 3;
/** Cold starts of each side, alternating; the medians are printed. */
const COLDSTART_ROUNDS = 3;
/** Concurrent creates while seeding. */
const SEED_CONCURRENCY = 32;

const CHILD = join(dirname(fileURLToPath(import.meta.url)), "runtime", "child.ts");

function configMap(namespace: string, name: string, padding: number): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace, labels: { app: "bench", shard: String(name.length % 7) } },
    data: { payload: "x".repeat(Math.max(0, padding)) },
  };
}

/** Bytes of an object as JSON without managedFields. */
function sizeOf(obj: KubeObject): number {
  const { managedFields: _mf, ...metadata } = obj.metadata;
  return JSON.stringify({ ...obj, metadata }).length;
}

async function seed(client: Client, namespace: string, count: number): Promise<number> {
  await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
  // Size the padding so that a stored object is OBJECT_BYTES.
  const probe = await client.create(configMap(namespace, "cm-00000", 0));
  const padding = OBJECT_BYTES - sizeOf(probe);
  await client.update({ ...probe, data: { payload: "x".repeat(padding) } });
  let next = 1;
  let lastShown = 0;
  await Promise.all(
    Array.from({ length: SEED_CONCURRENCY }, async () => {
      while (next < count) {
        const i = next++;
        await client.create(configMap(namespace, `cm-${String(i).padStart(5, "0")}`, padding));
        if (count >= 1000 && i - lastShown >= count / 10) {
          lastShown = i;
          process.stdout.write(
            `  seeded ${i.toLocaleString("en-US")}/${count.toLocaleString("en-US")}\r`,
          );
        }
      }
    }),
  );
  const sample = await client.get<KubeObject>(
    { apiVersion: "v1", kind: "ConfigMap" },
    "cm-00001",
    namespace,
  );
  return sizeOf(sample);
}

/** Runs one task in a fresh child; `onReady` runs when a latency child is ready, before it reports. */
function runChild(task: Task, onReady?: () => Promise<void>): Promise<Report> {
  const child = fork(CHILD, [JSON.stringify(task)], {
    execArgv: ["--import", "tsx", "--expose-gc"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  return new Promise((resolve, reject) => {
    child.once("exit", (code) =>
      reject(new Error(`child ${task.kind}/${task.impl} exited with ${code}`)),
    );
    child.on("message", (msg: Report) => {
      if (msg.type === "ready") {
        void (onReady ?? (async () => {}))().then(() => child.send({ type: "report" }));
      } else if (msg.type === "error") {
        reject(new Error(`child ${task.kind}/${task.impl}: ${msg.message}`));
      } else {
        resolve(msg);
      }
    });
  });
}

/** Writes LATENCY_RATE stamped merge patches per second for `ms`. */
async function stampedWrites(client: Client, ms: number): Promise<number> {
  const total = Math.floor((LATENCY_RATE * ms) / 1000);
  const start = performance.now();
  let i = 0;
  const writer = async () => {
    while (i < total) {
      const n = i++;
      const due = start + (n * 1000) / LATENCY_RATE;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const name = `cm-${String(n % LATENCY_OBJECTS).padStart(5, "0")}`;
      await client.patch(
        { apiVersion: "v1", kind: "ConfigMap" },
        name,
        LATENCY_NAMESPACE,
        { metadata: { annotations: { [SENT_ANNOTATION]: String(epochMs()) } } },
        { type: "merge" },
      );
    }
  };
  await Promise.all(Array.from({ length: 8 }, writer));
  return total;
}

function expect<T extends Report["type"]>(r: Report, type: T): Extract<Report, { type: T }> {
  if (r.type !== type) throw new Error(`expected a ${type} report, got ${r.type}`);
  return r as Extract<Report, { type: T }>;
}

const KIB = 1024;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.floor((s.length - 1) / 2)];
}

async function main(): Promise<void> {
  console.log(
    `runtime benchmark: ${OBJECTS.toLocaleString("en-US")} ConfigMaps of ~${OBJECT_BYTES} B`,
  );
  const server = await ChildServer.start("api", { tls: false });
  const client = new Client({ server: server.url });
  const rows: Row[] = [];
  try {
    const objectBytes = await seed(client, NAMESPACE, OBJECTS);
    await seed(client, LATENCY_NAMESPACE, LATENCY_OBJECTS);
    const sample = await client.get<KubeObject>(
      { apiVersion: "v1", kind: "ConfigMap" },
      "cm-00001",
      NAMESPACE,
    );
    console.log(
      `seeded; each object is ${objectBytes} B as JSON (${JSON.stringify(sample).length} B with managedFields)`,
    );
    const base = { url: server.url, namespace: NAMESPACE, count: OBJECTS };

    // Cold start and steady-state throughput, alternating fresh children.
    const runs: Extract<Report, { type: "coldstart" }>[] = [];
    const cnRuns: Extract<Report, { type: "coldstart" }>[] = [];
    for (let round = 0; round < COLDSTART_ROUNDS; round++) {
      runs.push(
        expect(
          await runChild({
            kind: "coldstart",
            impl: "runtime",
            ...base,
            throughputRounds: THROUGHPUT_ROUNDS,
          }),
          "coldstart",
        ),
      );
      cnRuns.push(
        expect(await runChild({ kind: "coldstart", impl: "client-node", ...base }), "coldstart"),
      );
    }
    const rt = runs[0];
    const rtMs = median(runs.map((r) => r.ms));
    const rtSyncedMs = median(runs.map((r) => r.syncedMs ?? Number.NaN));
    const cnMs = median(cnRuns.map((r) => r.ms));
    const pages = Math.ceil(OBJECTS / DEFAULT_LIST_PAGE_SIZE);
    const req = rt.requests ?? {};
    const lists = req.list ?? 0;
    const watches = req.watch ?? 0;
    const gets = req.get ?? 0;
    console.log(
      `cold start (median of ${COLDSTART_ROUNDS}): runtime ${runs.map((r) => r.ms.toFixed(0)).join("/")} ms, client-node ${cnRuns.map((r) => r.ms.toFixed(0)).join("/")} ms; requests ${JSON.stringify(req)}`,
    );
    rows.push({
      backend: "runtime",
      metric: "cold start: list and sync the cache",
      value: rtSyncedMs,
      unit: "ms",
      baseline: cnMs,
      baselineLabel: "client-node informer, handler per object",
      better: "lower",
    });
    rows.push({
      backend: "runtime",
      metric: "cold start: list, sync, reconcile all",
      value: rtMs,
      unit: "ms",
      baseline: cnMs,
      baselineLabel: "client-node informer, handler per object",
      better: "lower",
    });
    rows.push({
      backend: "runtime",
      metric: "cold start API requests (list+watch+get)",
      value: lists + watches + gets,
      unit: "req",
      baseline: pages + 1,
      baselineLabel: `one list in pages of ${DEFAULT_LIST_PAGE_SIZE} (${pages}) + 1 watch`,
      better: "lower",
      goal: {
        text: `one list (${lists} request${lists === 1 ? "" : "s"}), one watch (${watches}), no GETs (${gets})`,
        met: lists >= 1 && lists <= pages && watches === 1 && gets === 0,
      },
    });
    if (runs.every((r) => r.throughput)) {
      rows.push({
        backend: "runtime",
        metric: "steady-state reconciles/s (cache read)",
        value: median(runs.map((r) => r.throughput?.runtime ?? 0)),
        unit: "/s",
        baseline: median(runs.map((r) => r.throughput?.bare ?? 0)),
        baselineLabel: "bare loop, same reads, same concurrency",
        better: "higher",
      });
    }

    // Retained heap of an informer, each in its own process.
    const memRuntime = expect(
      await runChild({ kind: "memory", impl: "runtime", ...base }),
      "memory",
    );
    const memKeep = expect(
      await runChild({ kind: "memory", impl: "runtime-keep-managed-fields", ...base }),
      "memory",
    );
    const memCn = expect(
      await runChild({ kind: "memory", impl: "client-node", ...base }),
      "memory",
    );
    for (const [label, m] of [
      ["informer heap (managedFields stripped)", memRuntime],
      ["informer heap (managedFields kept)", memKeep],
    ] as const) {
      if (m.objects !== OBJECTS || memCn.objects !== OBJECTS) {
        throw new Error(`informers held ${m.objects} and ${memCn.objects} objects, not ${OBJECTS}`);
      }
      rows.push({
        backend: "runtime",
        metric: label,
        value: m.heapBytes / KIB,
        unit: "KiB",
        baseline: memCn.heapBytes / KIB,
        baselineLabel: "client-node makeInformer",
        better: "lower",
        goal: { text: "no more than client-node", met: m.heapBytes <= memCn.heapBytes },
      });
    }
    console.log(
      `raw JSON of the objects: ${((OBJECTS * objectBytes) / KIB).toFixed(0)} KiB without managedFields`,
    );

    // Event-to-reconcile latency, alternating rounds.
    const lat = { runtime: [] as number[], "client-node": [] as number[] };
    let writes = 0;
    for (let round = 0; round < LATENCY_ROUNDS; round++) {
      for (const impl of ["runtime", "client-node"] as const) {
        const r = expect(
          await runChild(
            {
              kind: "latency",
              impl,
              url: server.url,
              namespace: LATENCY_NAMESPACE,
              count: LATENCY_OBJECTS,
            },
            async () => {
              writes += await stampedWrites(client, LATENCY_MS);
              await new Promise((r) => setTimeout(r, 200));
            },
          ),
          "latency",
        );
        lat[impl].push(...r.samples);
      }
    }
    console.log(
      `latency: ${writes} stamped writes at ${LATENCY_RATE}/s; samples runtime ${lat.runtime.length}, client-node ${lat["client-node"].length}`,
    );
    for (const p of [50, 99]) {
      rows.push({
        backend: "runtime",
        metric: `write-to-reconcile latency p${p}`,
        value: percentile(lat.runtime, p),
        unit: "ms",
        baseline: percentile(lat["client-node"], p),
        baselineLabel: "write-to-handler, client-node informer",
        better: "lower",
      });
    }
  } finally {
    client.close();
    await server.stop();
  }
  printTable("runtime", rows);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
