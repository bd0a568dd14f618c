/**
 * One measurement of the runtime benchmark, in its own process (so heaps and
 * event loops are not shared):
 *
 *   node --import tsx --expose-gc bench/runtime/child.ts '<JSON task>'
 *
 * Tasks (see `Task`): the heap an informer holding a namespace's ConfigMaps
 * retains (the runtime's or @kubernetes/client-node's); cold start and then
 * steady-state reconcile throughput; event-to-reconcile latency. The child
 * reports over IPC (`Report`) and exits. Latency tasks first report "ready",
 * then measure until the parent sends "report".
 */
import { CoreV1Api, KubeConfig, makeInformer, type V1ConfigMap } from "@kubernetes/client-node";
import type { KubeObject } from "@setpoint/api";
import {
  Client,
  Informer,
  type Logger,
  Manager,
  type ReconcileContext,
  type Request,
  silentLogger,
} from "@setpoint/runtime";

/** What the parent asks for. */
export type Task =
  | {
      kind: "memory";
      impl: "runtime" | "runtime-keep-managed-fields" | "client-node";
      url: string;
      namespace: string;
      count: number;
    }
  | {
      kind: "coldstart";
      impl: "runtime";
      url: string;
      namespace: string;
      count: number;
      throughputRounds: number;
    }
  | { kind: "coldstart"; impl: "client-node"; url: string; namespace: string; count: number }
  | {
      kind: "latency";
      impl: "runtime" | "client-node";
      url: string;
      namespace: string;
      count: number;
    };

/** What the child answers. */
export type Report =
  | { type: "ready" }
  | { type: "memory"; heapBytes: number; objects: number }
  | {
      type: "coldstart";
      /** From start to every key reconciled (or handled) once. */
      ms: number;
      /** From start to the cache synced (runtime only). */
      syncedMs?: number;
      requests?: Record<string, number>;
      /** Reconciles per second through the runtime's queue, and through a bare loop. */
      throughput?: { runtime: number; bare: number };
    }
  | { type: "latency"; samples: number[] }
  | { type: "error"; message: string };

/** Name of the annotation carrying the writer's send time (epoch ms, fractional). */
export const SENT_ANNOTATION = "bench.setpoint.dev/sent";
/** Pause after a forced collection before reading the heap. */
const SETTLE_MS = 300;

const CONFIG_MAP = { apiVersion: "v1", kind: "ConfigMap" };
const gc = (globalThis as { gc?: () => void }).gc;

/** Wall-clock ms with sub-ms resolution, comparable across processes on one machine. */
export function epochMs(): number {
  return performance.timeOrigin + performance.now();
}

function send(r: Report): void {
  process.send?.(r);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function retainedHeap(): Promise<number> {
  if (!gc) throw new Error("run with --expose-gc");
  for (let i = 0; i < 3; i++) {
    gc();
    await sleep(SETTLE_MS / 3);
  }
  return process.memoryUsage().heapUsed;
}

function clientNodeConfig(url: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "bench", server: url, skipTLSVerify: true }],
    users: [{ name: "bench" }],
    contexts: [{ name: "bench", cluster: "bench", user: "bench" }],
    currentContext: "bench",
  });
  return kc;
}

function clientNodeInformer(
  url: string,
  namespace: string,
): ReturnType<typeof makeInformer<V1ConfigMap>> {
  const kc = clientNodeConfig(url);
  const api = kc.makeApiClient(CoreV1Api);
  return makeInformer<V1ConfigMap>(kc, `/api/v1/namespaces/${namespace}/configmaps`, () =>
    api.listNamespacedConfigMap({ namespace }),
  );
}

async function memory(task: Extract<Task, { kind: "memory" }>): Promise<Report> {
  const before = await retainedHeap();
  let objects: number;
  let keep: unknown;
  if (task.impl === "client-node") {
    const inf = clientNodeInformer(task.url, task.namespace);
    await inf.start();
    while (inf.list(task.namespace).length < task.count) await sleep(20);
    objects = inf.list(task.namespace).length;
    keep = inf;
  } else {
    const client = new Client({ server: task.url });
    const inf = new Informer<KubeObject>(client, CONFIG_MAP, {
      namespace: task.namespace,
      stripManagedFields: task.impl === "runtime",
    });
    inf.start(new AbortController().signal);
    await inf.waitForSync();
    objects = inf.keys().length;
    keep = inf;
  }
  const after = await retainedHeap();
  void keep;
  return { type: "memory", heapBytes: after - before, objects };
}

/**
 * The work of one reconcile in the benchmark: read the object from the cache (the
 * reader defaults to the informer of the scope the controller watches).
 */
async function readFromCache(req: Request, ctx: Pick<ReconcileContext, "reader">): Promise<void> {
  await ctx.reader.get(CONFIG_MAP, req.name, req.namespace);
}

async function coldStartRuntime(
  task: Extract<Task, { kind: "coldstart"; impl: "runtime" }>,
): Promise<Report> {
  const client = new Client({ server: task.url });
  const mgr = new Manager({ client, logger: silentLogger() as Logger });
  let reconciled = 0;
  let target = task.count;
  let reached: (() => void) | undefined;
  const all = new Promise<void>((r) => (reached = r));
  const controller = mgr
    .controller("bench")
    .for(CONFIG_MAP, { scope: { namespace: task.namespace } })
    .complete(async (req, ctx) => {
      await readFromCache(req, ctx);
      if (++reconciled === target) reached?.();
    });
  const t0 = performance.now();
  const stop = new AbortController();
  await mgr.start(stop.signal);
  const syncedMs = performance.now() - t0;
  await all;
  const ms = performance.now() - t0;
  const requests = { ...client.stats.byVerb };

  // Steady state: every key again, through the queue and workers, against a bare
  // loop doing the same read with the same concurrency, in alternating rounds.
  const keys = mgr.cache
    .informerFor(CONFIG_MAP, { namespace: task.namespace })
    .keys()
    .map((k) => {
      const [namespace, name] = k.split("/");
      return { namespace, name };
    });
  const ctx = { reader: mgr.cache };
  let runtimeMs = 0;
  let bareMs = 0;
  for (let round = 0; round < task.throughputRounds; round++) {
    reconciled = 0;
    target = keys.length;
    const done = new Promise<void>((r) => (reached = r));
    let t = performance.now();
    controller.enqueueAll();
    await done;
    runtimeMs += performance.now() - t;

    t = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: controller.maxConcurrentReconciles }, async () => {
        while (next < keys.length) await readFromCache(keys[next++], ctx);
      }),
    );
    bareMs += performance.now() - t;
  }
  stop.abort();
  await mgr.done;
  client.close();
  const n = keys.length * task.throughputRounds;
  return {
    type: "coldstart",
    ms,
    syncedMs,
    requests,
    throughput: { runtime: (n / runtimeMs) * 1000, bare: (n / bareMs) * 1000 },
  };
}

async function coldStartClientNode(
  task: Extract<Task, { kind: "coldstart"; impl: "client-node" }>,
): Promise<Report> {
  const inf = clientNodeInformer(task.url, task.namespace);
  let handled = 0;
  let reached: (() => void) | undefined;
  const all = new Promise<void>((r) => (reached = r));
  inf.on("add", (obj) => {
    // The same work per key: read it from the informer's cache.
    inf.get(obj.metadata?.name ?? "", obj.metadata?.namespace);
    if (++handled === task.count) reached?.();
  });
  const t0 = performance.now();
  await inf.start();
  await all;
  const ms = performance.now() - t0;
  await inf.stop();
  return { type: "coldstart", ms };
}

/** Measures write-to-reconcile (or write-to-handler) latency until the parent asks for the report. */
async function latency(task: Extract<Task, { kind: "latency" }>): Promise<Report> {
  const samples: number[] = [];
  let measuring = false;
  let calls = 0;
  const sample = (obj: KubeObject | V1ConfigMap | undefined) => {
    calls++;
    const sent = obj?.metadata?.annotations?.[SENT_ANNOTATION];
    if (measuring && sent) samples.push(epochMs() - Number(sent));
  };
  let stop: () => Promise<void>;
  if (task.impl === "runtime") {
    const client = new Client({ server: task.url });
    const mgr = new Manager({ client, logger: silentLogger() as Logger });
    mgr
      .controller("latency")
      .for(CONFIG_MAP, { scope: { namespace: task.namespace } })
      .complete(async (req, ctx) => {
        sample(await ctx.reader.get<KubeObject>(CONFIG_MAP, req.name, req.namespace));
      });
    const ac = new AbortController();
    await mgr.start(ac.signal);
    // The initial list's reconciles are not samples.
    while (calls < task.count) await sleep(10);
    stop = async () => {
      ac.abort();
      await mgr.done;
      client.close();
    };
  } else {
    const inf = clientNodeInformer(task.url, task.namespace);
    inf.on("update", (obj) => sample(obj));
    await inf.start();
    while (inf.list(task.namespace).length < task.count) await sleep(20);
    stop = () => inf.stop();
  }
  measuring = true;
  send({ type: "ready" });
  await new Promise<void>((r) => process.once("message", () => r()));
  measuring = false;
  await stop();
  return { type: "latency", samples };
}

async function run(task: Task): Promise<Report> {
  switch (task.kind) {
    case "memory":
      return memory(task);
    case "coldstart":
      return task.impl === "runtime" ? coldStartRuntime(task) : coldStartClientNode(task);
    case "latency":
      return latency(task);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const task = JSON.parse(process.argv[2] ?? "{}") as Task;
  run(task)
    .then((r) => send(r))
    .catch((e: unknown) =>
      send({ type: "error", message: e instanceof Error ? (e.stack ?? e.message) : String(e) }),
    )
    .finally(() => setTimeout(() => process.exit(0), 50));
}
