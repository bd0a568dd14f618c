/**
 * API benchmark: `npm run bench:api`.
 *
 * In one run, each figure beside a baseline measured in the same run, and the ratio:
 *
 * - creates/s over HTTP with 50 concurrent keep-alive clients posting 1 KiB
 *   ConfigMaps, against a bare node:http server answering the same requests with
 *   a canned 201 over the same transport (alternating slices of each);
 * - list of 10,000 ConfigMaps, from the watch cache (resourceVersion=0) and
 *   consistent (from storage), against the bare server returning the same bytes;
 * - watch fan-out: 1,000 watchers of one collection while 1,000 creates/s go in
 *   (from a writer process of its own, bench/lib/fanout-writer.ts): delivery
 *   latency p50/p99, from the create's answer reaching the writer to the event
 *   reaching a watcher (the fan-out's own price), and from sending the create (with
 *   what storing it costs), and events lost, against the bare server relaying each
 *   POSTed body to the same 1,000 watch streams, in alternating slices; then the
 *   same at a tenth of the rate;
 * - server RSS holding 100,000 1 KiB ConfigMaps (with a watch open on them, as a
 *   controller would have) against the total size of their JSON;
 * - custom resource creates and no-op applies (bench/api/custom-resources.ts);
 * - creates by a user RBAC decides for among 1,000 roles and bindings, against the
 *   same creates as the admin (bench/api/authorized.ts).
 *
 * Servers run in child processes (bench/lib/api-child.ts), so the load generated
 * here does not share their event loop; the API server is the one `setpoint up`
 * runs (durable SQLite file, built-in types), without authentication.
 *
 * Environment:
 *   BENCH_MS             length of each side of the creates phase (default 4000)
 *   BENCH_TLS=1          https (both servers, same generated certificate) instead of http
 *   BENCH_PHASES         comma list of creates,list,fanout,rss,custom-resources,authorized
 *                        (default all)
 *   BENCH_RSS_OBJECTS    objects in the RSS phase (default 100000)
 *   BENCH_FANOUT_SECONDS length of each side of the fan-out phase (default 5)
 *   BENCH_FANOUT_ROUNDS  alternating bare/API slices it is split into (default 3)
 *   BENCH_WATCHERS       watchers in the fan-out phase (default 1000)
 *   BENCH_FANOUT_RATE    creates/s in the fan-out phase (default 1000)
 *   BENCH_PROFILE_DIR    write CPU profiles of the API server children there
 *   BENCH_HEAP_SNAPSHOT_DIR  write a heap snapshot of the RSS phase's server there
 *   BENCH_NODE_ARGS      more node/V8 flags for the server children (e.g. --trace-gc)
 */
import { fork } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { authorizedPhase } from "./api/authorized.ts";
import { customResourcesPhase } from "./api/custom-resources.ts";
import { ChildServer } from "./lib/child-server.ts";
import { epochMicros, type WriterReport } from "./lib/fanout-writer.ts";
import { CountingWatch, HttpClient } from "./lib/http-load.ts";
import { printTable, type Row } from "./lib/table.ts";
import { callersFor, combine, now, percentile, type Rate, Samples } from "./lib/timing.ts";

const TLS = process.env.BENCH_TLS === "1";
const PHASES = new Set(
  (process.env.BENCH_PHASES ?? "creates,list,fanout,rss,custom-resources,authorized")
    .split(",")
    .map((p) => p.trim()),
);
/** Concurrent keep-alive clients in the creates phase. */
const CLIENTS = 50;
/** Size of every ConfigMap request body in the creates, list and RSS phases. */
const OBJECT_BYTES = 1024;
/** Length of each side (API, bare) of the creates phase. */
const CREATE_MS = Number(process.env.BENCH_MS ?? 4000);
/** Alternating API/bare slices in the creates phase. */
const ROUNDS = 4;
/** Warm-up of each server before measuring (JIT, SQLite pages, connections). */
const WARMUP_MS = 500;
/** Objects in the listed collection. */
const LIST_OBJECTS = 10_000;
/** Lists timed per variant (alternating bare, cache, consistent). */
const LIST_REPS = 10;
/** Watchers in the fan-out phase. */
const WATCHERS = Number(process.env.BENCH_WATCHERS ?? 1000);
/** Creates per second while the watchers watch. */
const FANOUT_RATE = Number(process.env.BENCH_FANOUT_RATE ?? 1000);
/** Length of each side of the fan-out phase. */
const FANOUT_MS = Number(process.env.BENCH_FANOUT_SECONDS ?? 5) * 1000;
/** Alternating slices of bare and API that each side's time is split into. */
const FANOUT_ROUNDS = Math.max(1, Number(process.env.BENCH_FANOUT_ROUNDS ?? 3));
/** Size of each ConfigMap request body in the fan-out phase. */
const FANOUT_OBJECT_BYTES = OBJECT_BYTES;
/** Longest wait, after the last write, for every watcher to get every event. */
const FANOUT_DRAIN_MS = 30_000;
/** Watch streams opened at once while connecting the watchers. */
const CONNECT_BATCH = 100;
/** Objects held in the RSS phase. */
const RSS_OBJECTS = Number(process.env.BENCH_RSS_OBJECTS ?? 100_000);
/** Goals (issue: API machinery overhead, fan-out latency, memory). */
const GOALS = { createsRatio: 0.4, fanoutP99Ms: 100, fanoutRelayRatio: 1.5, rssRatio: 3 };

const MIB = 1024 * 1024;
const WRITER = join(dirname(fileURLToPath(import.meta.url)), "lib", "fanout-writer.ts");

function log(message: string): void {
  process.stderr.write(`bench:api: ${message}\n`);
}

function namespaceBody(name: string): string {
  return JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
}

/** A ConfigMap request body of exactly `bytes` bytes (ASCII). */
function configMapBody(name: string, bytes: number): string {
  const shell = (v: string) =>
    `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"${name}"},"data":{"v":"${v}"}}`;
  return shell("x".repeat(Math.max(0, bytes - shell("").length)));
}

function collection(ns: string): string {
  return `/api/v1/namespaces/${ns}/configmaps`;
}

/** CPU time of this process, in microseconds. */
function cpuMicros(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

/** Creates `count` ConfigMaps in `ns` with `CLIENTS` concurrent callers. */
async function fill(client: HttpClient, ns: string, prefix: string, count: number): Promise<void> {
  let next = 0;
  let done = 0;
  const step = Math.max(1, Math.floor(count / 10));
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      for (let i = next++; i < count; i = next++) {
        await client.expect(
          201,
          "POST",
          collection(ns),
          configMapBody(`${prefix}${i}`, OBJECT_BYTES),
        );
        if (++done % step === 0)
          log(`  ${prefix}: ${done.toLocaleString("en-US")} / ${count.toLocaleString("en-US")}`);
      }
    }),
  );
}

// ---------------------------------------------------------------------------------
// creates/s

/** One server measured in the creates phase. */
interface CreateSide {
  name: string;
  child: ChildServer;
  client: HttpClient;
  rates: Rate[];
  /** CPU used during its slices (microseconds): the server child's and this process's. */
  serverCpu: number;
  clientCpu: number;
}

/**
 * Creates/s of the API server (durable, as `setpoint up` runs it), beside the bare
 * server; and, to tell what storage costs from what the API machinery costs, the
 * API server on SQLite that does not wait for the disk. The three are measured in
 * alternating slices, so that they share the same machine load.
 */
async function createsPhase(
  api: ChildServer,
  volatile: ChildServer,
  bare: ChildServer,
): Promise<Row[]> {
  log(
    `creates: ${CLIENTS} keep-alive clients, ${OBJECT_BYTES} B ConfigMaps, ${CREATE_MS} ms per server`,
  );
  const side = (name: string, child: ChildServer): CreateSide => ({
    name,
    child,
    client: new HttpClient(child.url, { ca: child.ca, sockets: CLIENTS }),
    rates: [],
    serverCpu: 0,
    clientCpu: 0,
  });
  const sides = [side("bare", bare), side("api", api), side("api, volatile", volatile)];
  try {
    const ns = "bench-creates";
    let sample: Buffer | undefined;
    for (const s of sides.slice(1)) {
      await s.client.expect(201, "POST", "/api/v1/namespaces", namespaceBody(ns));
      sample = (
        await s.client.expect(201, "POST", collection(ns), configMapBody("sample", OBJECT_BYTES))
      ).body;
    }
    // The bare server answers with the very bytes the API answered a create with.
    await bare.canned({ created: sample?.toString("utf8") ?? "{}" });

    let seq = 0;
    const post = (client: HttpClient) => () =>
      client.expect(201, "POST", collection(ns), configMapBody(`c-${seq++}`, OBJECT_BYTES));
    for (const s of sides) await callersFor(CLIENTS, WARMUP_MS, post(s.client));

    const slice = CREATE_MS / ROUNDS;
    for (let round = 0; round < ROUNDS; round++) {
      for (const s of sides) {
        const s0 = await s.child.stats();
        const c0 = cpuMicros();
        s.rates.push(await callersFor(CLIENTS, slice, post(s.client)));
        s.clientCpu += cpuMicros() - c0;
        const s1 = await s.child.stats();
        s.serverCpu += s1.cpuUser + s1.cpuSystem - s0.cpuUser - s0.cpuSystem;
      }
    }
    const [bareRate, apiRate, volatileRate] = sides.map((s) => combine(s.rates));
    const share = (micros: number, rate: Rate) =>
      `${Math.round((micros / 1e6 / rate.seconds) * 100)}%`;
    log(
      `creates: CPU used, as a share of one core: ${sides
        .map((s) => {
          const r = combine(s.rates);
          return `${s.name} server ${share(s.serverCpu, r)} (client ${share(s.clientCpu, r)})`;
        })
        .join("; ")}`,
    );
    const baselineLabel = `bare node:${TLS ? "https" : "http"}, canned 201`;
    const metric = `creates/s, ${CLIENTS} keep-alive clients, 1 KiB`;
    return [
      {
        backend: "api (sqlite, durable)",
        metric,
        value: apiRate.perSecond,
        unit: "/s",
        baseline: bareRate.perSecond,
        baselineLabel,
        better: "higher",
        goal: {
          text: `>= ${GOALS.createsRatio}x`,
          met: apiRate.perSecond >= GOALS.createsRatio * bareRate.perSecond,
        },
      },
      {
        backend: "api (sqlite, no fsync)",
        metric,
        value: volatileRate.perSecond,
        unit: "/s",
        baseline: bareRate.perSecond,
        baselineLabel,
        better: "higher",
      },
    ];
  } finally {
    for (const s of sides) s.client.close();
  }
}

// ---------------------------------------------------------------------------------
// list of 10,000

async function timedGet(client: HttpClient, path: string): Promise<{ ms: number; bytes: number }> {
  const t = now();
  const r = await client.expect(200, "GET", path);
  return { ms: now() - t, bytes: r.body.length };
}

async function listPhase(api: ChildServer, bare: ChildServer): Promise<Row[]> {
  const ns = "bench-list";
  log(`list: filling ${ns} with ${LIST_OBJECTS.toLocaleString("en-US")} ConfigMaps`);
  const apiClient = new HttpClient(api.url, { ca: api.ca, sockets: CLIENTS });
  const bareClient = new HttpClient(bare.url, { ca: bare.ca, sockets: 1 });
  const dir = mkdtempSync(join(tmpdir(), "setpoint-bench-list-"));
  try {
    await apiClient.expect(201, "POST", "/api/v1/namespaces", namespaceBody(ns));
    await fill(apiClient, ns, "l-", LIST_OBJECTS);
    const consistentPath = collection(ns);
    const cachedPath = `${collection(ns)}?resourceVersion=0`;
    const full = await apiClient.expect(200, "GET", consistentPath);
    const items = (JSON.parse(full.body.toString("utf8")) as { items: unknown[] }).items.length;
    const cachedItems = (
      JSON.parse((await apiClient.expect(200, "GET", cachedPath)).body.toString("utf8")) as {
        items: unknown[];
      }
    ).items.length;
    if (items !== LIST_OBJECTS || cachedItems !== LIST_OBJECTS) {
      throw new Error(
        `list returned ${items} (consistent) and ${cachedItems} (cache) items, wanted ${LIST_OBJECTS}`,
      );
    }
    const file = join(dir, "list.json");
    writeFileSync(file, full.body);
    await bare.canned({ listFile: file });
    log(`list: ${(full.body.length / MIB).toFixed(1)} MiB per list, ${LIST_REPS} timed lists each`);

    const times = { bare: new Samples(), cached: new Samples(), consistent: new Samples() };
    // One untimed round to warm up.
    await timedGet(bareClient, consistentPath);
    await timedGet(apiClient, cachedPath);
    await timedGet(apiClient, consistentPath);
    for (let i = 0; i < LIST_REPS; i++) {
      times.bare.push((await timedGet(bareClient, consistentPath)).ms);
      times.cached.push((await timedGet(apiClient, cachedPath)).ms);
      times.consistent.push((await timedGet(apiClient, consistentPath)).ms);
    }
    const p50 = (s: Samples) => percentile(s.values(), 50);
    const label = `bare node:${TLS ? "https" : "http"}, same bytes`;
    return [
      {
        backend: "api",
        metric: `list ${LIST_OBJECTS.toLocaleString("en-US")}, resourceVersion=0 (cache), p50`,
        value: p50(times.cached),
        unit: "ms",
        baseline: p50(times.bare),
        baselineLabel: label,
        better: "lower",
      },
      {
        backend: "api",
        metric: `list ${LIST_OBJECTS.toLocaleString("en-US")}, consistent (storage), p50`,
        value: p50(times.consistent),
        unit: "ms",
        baseline: p50(times.bare),
        baselineLabel: label,
        better: "lower",
      },
    ];
  } finally {
    apiClient.close();
    bareClient.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------
// watch fan-out

/** One fan-out load: watchers of one collection, creates per second into it. */
interface FanoutLoad {
  watchers: number;
  rate: number;
  /** Whether the issue's goals apply to this load. */
  goals: boolean;
}

/** p50, p99 and max of some latencies (ms), and how many there were. */
interface Spread {
  p50: number;
  p99: number;
  max: number;
  samples: number;
}

function spreadOf(values: Float64Array): Spread {
  return {
    p50: percentile(values, 50),
    p99: percentile(values, 99),
    max: values.length > 0 ? values[values.length - 1] : Number.NaN,
    samples: values.length,
  };
}

interface FanoutFigures {
  writesPerSecond: number;
  failedWrites: number;
  /** How long the writer's creates took to be answered (ms). */
  createMs: Spread;
  /** From the writer sending a create to a watcher reading its event. */
  fromSend: Spread;
  /** From the writer reading the create's answer to a watcher reading its event. */
  fromAck: Spread;
  lost: number;
  endedWatchers: number;
  /** CPU used while writing and draining, as a share of one core: server and this process. */
  serverCpu: number;
  clientCpu: number;
  /** The server's CPU time per 1,000 events delivered, in ms (steadier than latency on a busy machine). */
  serverCpuPerThousand: number;
  /** This process's event loop delay while writing and draining, p99 (ms): the harness's health. */
  clientLoopDelayP99: number;
  /** Data chunks the watchers received, over all of them. */
  chunks: number;
}

/** Runs the writer child (bench/lib/fanout-writer.ts) to completion. */
function runWriter(
  server: ChildServer,
  path: string,
  load: FanoutLoad,
  ms: number,
  first: number,
  caFile?: string,
) {
  const child = fork(
    WRITER,
    [
      server.url,
      path,
      String(load.rate),
      String(ms),
      String(FANOUT_OBJECT_BYTES),
      String(first),
      ...(caFile ? [caFile] : []),
    ],
    { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] },
  );
  return new Promise<WriterReport>((resolve, reject) => {
    child.once("message", (m: WriterReport) => resolve(m));
    child.once("exit", (code) => reject(new Error(`fan-out writer exited with ${code}`)));
  });
}

/**
 * One server's side of a fan-out load: its watchers stay open over the rounds, and
 * what they read is added up.
 */
class FanoutSide {
  readonly #admin: HttpClient;
  readonly #watchClient: HttpClient;
  readonly #watchers: CountingWatch[] = [];
  readonly #dir = mkdtempSync(join(tmpdir(), "setpoint-bench-fanout-"));
  readonly #fromSend = new Samples();
  /** Each delivery: the create's seq, and when its event was read (ms since the epoch). */
  readonly #seqs = new Samples();
  readonly #readAt = new Samples();
  /** When each create was answered (µs since the epoch, 0 when it failed), by seq. */
  readonly #acked: number[] = [];
  readonly #answered = new Samples();
  readonly #loop = monitorEventLoopDelay({ resolution: 5 });
  #caFile: string | undefined;
  #written = 0;
  #failed = 0;
  #seconds = 0;
  #serverCpu = 0;
  #clientCpu = 0;
  #elapsedMicros = 0;

  constructor(
    readonly server: ChildServer,
    readonly ns: string,
    readonly load: FanoutLoad,
  ) {
    this.#admin = new HttpClient(server.url, { ca: server.ca, sockets: 1 });
    this.#watchClient = new HttpClient(server.url, { ca: server.ca, sockets: load.watchers + 1 });
  }

  /** Opens the watchers (from the collection's current revision on the API server). */
  async open(): Promise<void> {
    const { server, ns, load } = this;
    let from = "";
    if (server.mode === "api") {
      await this.#admin.expect(201, "POST", "/api/v1/namespaces", namespaceBody(ns));
      const list = await this.#admin.expect(200, "GET", collection(ns));
      from = (JSON.parse(list.body.toString("utf8")) as { metadata: { resourceVersion: string } })
        .metadata.resourceVersion;
    }
    if (server.ca) {
      this.#caFile = join(this.#dir, "ca.pem");
      writeFileSync(this.#caFile, server.ca);
    }
    const onEvent = (sentMicros: number, seq: number) => {
      const at = epochMicros() / 1000;
      this.#fromSend.push(at - sentMicros / 1000);
      this.#seqs.push(seq);
      this.#readAt.push(at);
    };
    const path = `${collection(ns)}?watch=true${from ? `&resourceVersion=${from}` : ""}`;
    for (let i = 0; i < load.watchers; i += CONNECT_BATCH) {
      const batch = Array.from(
        { length: Math.min(CONNECT_BATCH, load.watchers - i) },
        () => new CountingWatch("f-", onEvent),
      );
      await Promise.all(batch.map((w) => w.open(this.#watchClient, path)));
      this.#watchers.push(...batch);
    }
  }

  /** Writes at the load's rate for `ms`, then waits until every watcher read every event. */
  async round(ms: number): Promise<void> {
    const server0 = await this.server.stats();
    const client0 = cpuMicros();
    this.#loop.enable();
    const start = now();
    const first = this.#acked.length;
    const report = await runWriter(
      this.server,
      collection(this.ns),
      this.load,
      ms,
      first,
      this.#caFile,
    );
    report.ackedMicros.forEach((micros, i) => {
      this.#acked[first + i] = micros;
    });
    for (const t of report.answeredMs) this.#answered.push(t);
    this.#written += report.sent - report.failed;
    this.#failed += report.failed;
    this.#seconds += report.seconds;
    const deadline = now() + FANOUT_DRAIN_MS;
    while (
      now() < deadline &&
      this.#watchers.some((w) => w.events < this.#written && w.ended === "no")
    ) {
      await new Promise((r) => setTimeout(r, 20));
    }
    this.#loop.disable();
    this.#elapsedMicros += (now() - start) * 1000;
    this.#clientCpu += cpuMicros() - client0;
    const server1 = await this.server.stats();
    this.#serverCpu += server1.cpuUser + server1.cpuSystem - server0.cpuUser - server0.cpuSystem;
  }

  figures(): FanoutFigures {
    const fromAck = new Samples();
    const seqs = this.#seqs.values();
    const readAt = this.#readAt.values();
    for (let i = 0; i < seqs.length; i++) {
      const acked = this.#acked[seqs[i]];
      if (acked > 0) fromAck.push(readAt[i] - acked / 1000);
    }
    const w = this.#watchers;
    return {
      writesPerSecond: this.#written / this.#seconds,
      failedWrites: this.#failed,
      createMs: spreadOf(this.#answered.values()),
      fromSend: spreadOf(this.#fromSend.values()),
      fromAck: spreadOf(fromAck.values()),
      lost: w.reduce((sum, x) => sum + Math.max(0, this.#written - x.events), 0),
      endedWatchers: w.filter((x) => x.ended !== "no").length,
      serverCpu: this.#serverCpu / this.#elapsedMicros,
      serverCpuPerThousand: this.#serverCpu / this.#fromSend.length,
      clientCpu: this.#clientCpu / this.#elapsedMicros,
      clientLoopDelayP99: this.#loop.percentile(99) / 1e6,
      chunks: w.reduce((sum, x) => sum + x.chunks, 0),
    };
  }

  close(): void {
    for (const w of this.#watchers) w.close();
    this.#admin.close();
    this.#watchClient.close();
    rmSync(this.#dir, { recursive: true, force: true });
  }
}

function describeFanout(who: string, load: FanoutLoad, f: FanoutFigures): string {
  const pct = (x: number) => `${Math.round(x * 100)}%`;
  const ms = (s: Spread) =>
    `p50 ${s.p50.toFixed(1)} ms, p99 ${s.p99.toFixed(1)} ms, max ${s.max.toFixed(1)} ms`;
  return (
    `fan-out ${who}, ${load.watchers} watchers x ${load.rate} writes/s: ` +
    `${Math.round(f.writesPerSecond)} writes/s achieved (${f.failedWrites} failed; ` +
    `answered in ${ms(f.createMs)}), ${f.fromAck.samples} deliveries, ` +
    `from the answer ${ms(f.fromAck)}, from sending ${ms(f.fromSend)}; ` +
    `${f.lost} lost, ${f.endedWatchers} watches ended; ` +
    `CPU: server ${pct(f.serverCpu)} (${f.serverCpuPerThousand.toFixed(1)} ms per 1,000 deliveries), ` +
    `watchers' process ${pct(f.clientCpu)} ` +
    `(event loop delay p99 ${f.clientLoopDelayP99.toFixed(0)} ms), ${f.chunks} chunks read`
  );
}

/**
 * The issue's load (1,000 watchers, 1,000 writes/s), with its goals; then the same
 * watchers at a tenth of the rate, for a comparison with the bare relay where the
 * watchers' own process is not the limit on a small machine. Each load runs in
 * FANOUT_ROUNDS alternating slices of bare and API (watchers kept open on both),
 * so that both meet the same machine load.
 */
async function fanoutPhase(api: ChildServer, bare: ChildServer): Promise<Row[]> {
  const loads: FanoutLoad[] = [
    { watchers: WATCHERS, rate: FANOUT_RATE, goals: true },
    { watchers: WATCHERS, rate: Math.max(1, Math.round(FANOUT_RATE / 10)), goals: false },
  ];
  const rows: Row[] = [];
  const label = `bare node:${TLS ? "https" : "http"} relay`;
  for (const [i, load] of loads.entries()) {
    const slice = FANOUT_MS / FANOUT_ROUNDS;
    log(
      `fan-out: ${load.watchers} watchers, ${load.rate} creates/s of ${FANOUT_OBJECT_BYTES} B, ` +
        `${FANOUT_ROUNDS} rounds of ${slice} ms on each server (bare, then api)`,
    );
    const sides = [
      new FanoutSide(bare, `bench-fanout-${i}`, load),
      new FanoutSide(api, `bench-fanout-${i}`, load),
    ];
    let b: FanoutFigures;
    let a: FanoutFigures;
    try {
      for (const s of sides) await s.open();
      for (let round = 0; round < FANOUT_ROUNDS; round++) {
        for (const s of sides) await s.round(slice);
      }
      [b, a] = sides.map((s) => s.figures());
    } finally {
      for (const s of sides) s.close();
    }
    log(describeFanout("bare", load, b));
    log(describeFanout("api", load, a));
    const metric = (m: string) => `fan-out ${load.watchers} watchers x ${load.rate} writes/s, ${m}`;
    const row = (m: string, value: number, baseline: number, unit: string): Row => ({
      backend: "api",
      metric: metric(m),
      value,
      unit,
      baseline,
      baselineLabel: label,
      better: unit === "/s" ? "higher" : "lower",
    });
    const ratioGoal = (value: number, baseline: number) =>
      load.goals
        ? {
            goal: {
              text: `<= ${GOALS.fanoutRelayRatio}x relay`,
              met: value <= GOALS.fanoutRelayRatio * baseline,
            },
          }
        : {};
    rows.push(
      row("writes/s achieved", a.writesPerSecond, b.writesPerSecond, "/s"),
      row("server CPU per 1,000 deliveries", a.serverCpuPerThousand, b.serverCpuPerThousand, "ms"),
      row("delivery from answer p50", a.fromAck.p50, b.fromAck.p50, "ms"),
      {
        ...row("delivery from answer p99", a.fromAck.p99, b.fromAck.p99, "ms"),
        ...ratioGoal(a.fromAck.p99, b.fromAck.p99),
      },
      row("delivery from send p50", a.fromSend.p50, b.fromSend.p50, "ms"),
      {
        ...row("delivery from send p99", a.fromSend.p99, b.fromSend.p99, "ms"),
        ...(load.goals
          ? {
              goal: {
                text: `< ${GOALS.fanoutP99Ms} ms`,
                met: a.fromSend.p99 < GOALS.fanoutP99Ms,
              },
            }
          : {}),
      },
      {
        ...row("events lost", a.lost, b.lost, "events"),
        ...(load.goals
          ? {
              goal: { text: "0 (and no failed writes)", met: a.lost === 0 && a.failedWrites === 0 },
            }
          : {}),
      },
    );
  }
  return rows;
}

// ---------------------------------------------------------------------------------
// RSS with 100,000 ConfigMaps

async function rssPhase(): Promise<Row[]> {
  log(
    `rss: a fresh API server, ${RSS_OBJECTS.toLocaleString("en-US")} ConfigMaps of ${OBJECT_BYTES} B`,
  );
  const api = await ChildServer.start("api", { tls: TLS });
  const client = new HttpClient(api.url, { ca: api.ca, sockets: CLIENTS });
  const watchClient = new HttpClient(api.url, { ca: api.ca, sockets: 1 });
  const watch = new CountingWatch("r-", () => {});
  try {
    const empty = await api.stats(true);
    const ns = "bench-rss";
    await client.expect(201, "POST", "/api/v1/namespaces", namespaceBody(ns));
    // A controller's informer: a watch of every ConfigMap keeps the cache in use.
    await watch.open(watchClient, "/api/v1/configmaps?watch=true");
    await fill(client, ns, "r-", RSS_OBJECTS);
    const deadline = now() + FANOUT_DRAIN_MS;
    while (watch.events < RSS_OBJECTS && now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    // What a client reads back: every object's JSON.
    const list = await client.expect(200, "GET", collection(ns));
    const items = (JSON.parse(list.body.toString("utf8")) as { items: unknown[] }).items;
    if (items.length !== RSS_OBJECTS)
      throw new Error(`listed ${items.length} objects, wanted ${RSS_OBJECTS}`);
    const jsonBytes = items.reduce<number>(
      (sum, item) => sum + Buffer.byteLength(JSON.stringify(item)),
      0,
    );
    const held = await api.stats(true);
    if (process.env.BENCH_HEAP_SNAPSHOT_DIR) {
      log(`rss: heap snapshot ${await api.heapSnapshot(process.env.BENCH_HEAP_SNAPSHOT_DIR)}`);
    }
    const mib = (n: number) => `${(n / MIB).toFixed(0)} MiB`;
    log(
      `rss: empty server ${mib(empty.rss)} (heap used ${mib(empty.heapUsed)}); with the objects ${mib(held.rss)} ` +
        `(heap used ${mib(held.heapUsed)} of ${mib(held.heapTotal)}, external ${mib(held.external)}; ` +
        `old space ${mib(held.spaces.old_space?.used ?? 0)} used of ${mib(held.spaces.old_space?.size ?? 0)}, ` +
        `new space ${mib(held.spaces.new_space?.size ?? 0)}); ` +
        `objects' JSON ${mib(jsonBytes)}, ${Math.round(jsonBytes / RSS_OBJECTS)} B each; ` +
        `the watch saw ${watch.events} events`,
    );
    const label = `their JSON (${RSS_OBJECTS.toLocaleString("en-US")} objects)`;
    return [
      {
        backend: "api",
        metric: `server RSS, ${RSS_OBJECTS.toLocaleString("en-US")} ConfigMaps of 1 KiB`,
        value: held.rss / MIB,
        unit: "MiB",
        baseline: jsonBytes / MIB,
        baselineLabel: label,
        better: "lower",
        goal: { text: `< ${GOALS.rssRatio}x`, met: held.rss < GOALS.rssRatio * jsonBytes },
      },
      {
        backend: "api",
        metric: "server RSS growth over the empty server",
        value: (held.rss - empty.rss) / MIB,
        unit: "MiB",
        baseline: jsonBytes / MIB,
        baselineLabel: label,
        better: "lower",
      },
      {
        backend: "api",
        metric: "server heap used",
        value: held.heapUsed / MIB,
        unit: "MiB",
        baseline: jsonBytes / MIB,
        baselineLabel: label,
        better: "lower",
      },
    ];
  } finally {
    watch.close();
    client.close();
    watchClient.close();
    await api.stop();
  }
}

// ---------------------------------------------------------------------------------

async function main(): Promise<void> {
  const rows: Row[] = [];
  if (PHASES.has("creates") || PHASES.has("list") || PHASES.has("fanout")) {
    const [api, volatile, bare] = await Promise.all([
      ChildServer.start("api", { tls: TLS }),
      PHASES.has("creates") ? ChildServer.start("api", { tls: TLS, volatile: true }) : undefined,
      ChildServer.start("bare", { tls: TLS }),
    ]);
    log(`servers: api ${api.url} (pid ${api.pid}), bare ${bare.url} (pid ${bare.pid})`);
    try {
      if (volatile) {
        rows.push(...(await createsPhase(api, volatile, bare)));
        await volatile.stop();
      }
      if (PHASES.has("list")) rows.push(...(await listPhase(api, bare)));
      if (PHASES.has("fanout")) rows.push(...(await fanoutPhase(api, bare)));
    } finally {
      await Promise.all([api.stop(), bare.stop(), volatile?.stop()]);
    }
  }
  if (PHASES.has("rss")) rows.push(...(await rssPhase()));
  if (PHASES.has("custom-resources")) {
    // Custom resource creates and no-op applies (bench/api/custom-resources.ts), on a server of their own.
    const api = await ChildServer.start("api", { tls: TLS });
    try {
      rows.push(
        ...(await customResourcesPhase(api, {
          durationMs: CREATE_MS,
          log: (m) => log(`custom resources: ${m}`),
        })),
      );
    } finally {
      await api.stop();
    }
  }
  if (PHASES.has("authorized")) {
    // Creates authorized by RBAC (bench/api/authorized.ts), on a server with authentication.
    const api = await ChildServer.start("api", { tls: TLS, auth: true });
    try {
      rows.push(
        ...(await authorizedPhase(api, {
          durationMs: CREATE_MS,
          log: (m) => log(`authorized: ${m}`),
        })),
      );
    } finally {
      await api.stop();
    }
  }
  printTable(`API benchmark (${TLS ? "https" : "http"}, servers in child processes)`, rows);
}

await main();
