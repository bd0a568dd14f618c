/**
 * Streams benchmark: `npm run bench:streams`.
 *
 * Heavy reads against many objects, and what they do to everyone else: with N
 * 1 KiB ConfigMaps stored (default 100,000), the p99 of a plain GET of one
 * object from another client while each attack runs, beside its p99 with no
 * attack in the same run, and the server's peak RSS during each (the kernel's
 * high-water mark, VmHWM, reset before each phase):
 *
 * - 30 clients that open `watch?resourceVersion=0` and never read;
 * - 10 concurrent full lists (consistent, from storage), each repeated;
 * - 3 concurrent Table lists (what `kubectl get` asks for), each repeated;
 * - 10 concurrent paginated lists whose one page is the whole collection
 *   (`limit=1000000`), each repeated;
 * - 3 concurrent full lists in YAML, each repeated;
 * - 3 concurrent full lists in protobuf (consistent, from storage), each repeated;
 * - 3 concurrent protobuf lists from the watch cache (`resourceVersion=0`), each repeated;
 * - 3 clients each opening a `sendInitialEvents=true` watch from a
 *   resourceVersion the ConfigMaps' watch cache has not seen (a Secret's), whose
 *   initial state is read from storage, reading it to its bookmark, again and again.
 *
 * The server runs in a child process (bench/lib/api-child.ts), the one `setpoint
 * up` runs (durable SQLite, built-in types). Whether the server survived each
 * attack is printed too.
 *
 * Environment:
 *   BENCH_STREAM_OBJECTS   objects stored (default 100000)
 *   BENCH_STREAM_MS        length of each phase (default 8000)
 *   BENCH_STREAM_PHASES    comma list of watchers,lists,tables,pages,yaml,protobuf,protobuf-cache,initial (default all)
 */

import { fork } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import { fileURLToPath } from "node:url";
import { ChildServer } from "./lib/child-server.ts";
import { HttpClient } from "./lib/http-load.ts";
import { printTable, type Row } from "./lib/table.ts";
import { now, percentile, Samples } from "./lib/timing.ts";

const OBJECTS = Number(process.env.BENCH_STREAM_OBJECTS ?? 100_000);
const PHASE_MS = Number(process.env.BENCH_STREAM_MS ?? 8000);
const PHASES = new Set(
  (
    process.env.BENCH_STREAM_PHASES ??
    "watchers,lists,tables,pages,yaml,protobuf,protobuf-cache,initial"
  )
    .split(",")
    .map((p) => p.trim()),
);
const OBJECT_BYTES = 1024;
const FILL_CLIENTS = 50;
const WATCHERS = 30;
const LISTS = 10;
const TABLES = 3;
const PAGES = 10;
const YAMLS = 3;
const PROTOBUFS = 3;
const PROTOBUF = "application/vnd.kubernetes.protobuf";
const INITIALS = 3;
/** Goal (issue 11): no attack raises the plain GET's p99 above this. */
const GOAL_P99_MS = 100;
const NS = "bench-streams";
const PATH = `/api/v1/namespaces/${NS}/configmaps`;
const TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io";
const MIB = 1024 * 1024;

function log(message: string): void {
  process.stderr.write(`bench:streams: ${message}\n`);
}

function configMapBody(name: string): string {
  const shell = (v: string) =>
    `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"${name}"},"data":{"v":"${v}"}}`;
  return shell("x".repeat(Math.max(0, OBJECT_BYTES - shell("").length)));
}

async function fill(client: HttpClient): Promise<void> {
  await client.expect(
    201,
    "POST",
    "/api/v1/namespaces",
    JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name: NS } }),
  );
  let next = 0;
  let done = 0;
  const step = Math.max(1, Math.floor(OBJECTS / 10));
  await Promise.all(
    Array.from({ length: FILL_CLIENTS }, async () => {
      for (let i = next++; i < OBJECTS; i = next++) {
        await client.expect(201, "POST", PATH, configMapBody(`s-${i}`));
        if (++done % step === 0) log(`  filled ${done.toLocaleString("en-US")}`);
      }
    }),
  );
}

/** Resets the kernel's peak RSS of `pid` (Linux: clear_refs 5). */
function resetPeak(pid: number): void {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
  } catch {
    // not Linux, or not allowed: the peak is then the process's lifetime peak
  }
}

/** The kernel's peak RSS of `pid` since the last reset, in bytes (NaN when unknown). */
function peakRss(pid: number): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Plain GETs of one object, one at a time, for `ms`, from a process of their own
 * (so that reading the attacks' responses here does not delay them): their
 * latencies.
 */
function probe(url: string, ms: number): Promise<Samples> {
  const child = fork(fileURLToPath(import.meta.url), ["probe", url, String(ms)], {
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  return new Promise((resolve, reject) => {
    child.once("message", (m: number[]) => {
      const samples = new Samples();
      for (const v of m) samples.push(v);
      resolve(samples);
    });
    child.once("exit", (code) => reject(new Error(`probe exited with ${code}`)));
  });
}

/** The probe child's loop. */
async function probeHere(client: HttpClient, ms: number): Promise<Samples> {
  const samples = new Samples();
  const until = now() + ms;
  let failures = 0;
  while (now() < until) {
    const t = now();
    const r = await client.send("GET", `${PATH}/s-7`);
    if (r.code === 200) samples.push(now() - t);
    else failures++;
  }
  if (failures > 0) log(`  ${failures} probe GETs failed`);
  return samples;
}

/** An attack: started, then stopped once the probe is done. */
interface Attack {
  name: string;
  metric: string;
  start(server: ChildServer): () => Promise<string>;
}

/** Clients that open a watch from resourceVersion=0 and never read. */
const watchers: Attack = {
  name: "watchers",
  metric: `${WATCHERS} watchers of rv=0 that never read`,
  start(server) {
    const url = new URL(server.url);
    const sockets: net.Socket[] = [];
    for (let i = 0; i < WATCHERS; i++) {
      const s = net.connect(Number(url.port), url.hostname);
      s.on("error", () => {});
      s.pause();
      s.write(`GET ${PATH}?watch=1&resourceVersion=0 HTTP/1.1\r\nHost: bench\r\n\r\n`);
      sockets.push(s);
    }
    return async () => {
      const closed = sockets.filter((s) => s.destroyed || s.readableEnded).length;
      for (const s of sockets) s.destroy();
      return `${closed} of ${WATCHERS} watch connections seen closed by the server`;
    };
  },
};

/**
 * Runs `once` in `count` loops until the returned function is called, counting the
 * runs that succeeded and those that failed (false or thrown); that function waits
 * for the loops to end and gives the counts.
 */
function repeat(
  count: number,
  once: () => Promise<boolean>,
): () => Promise<{ done: number; failed: number }> {
  let stop = false;
  let done = 0;
  let failed = 0;
  const loops = Array.from({ length: count }, async () => {
    while (!stop) {
      try {
        if (await once()) done++;
        else failed++;
      } catch {
        failed++;
      }
    }
  });
  return async () => {
    stop = true;
    await Promise.all(loops);
    return { done, failed };
  };
}

/** `count` clients each listing the whole collection again and again (reading it all). */
function listers(name: string, count: number, accept: string, metric: string, path = PATH): Attack {
  return {
    name,
    metric,
    start(server) {
      const client = new HttpClient(server.url, { ca: server.ca, sockets: count });
      let bytes = 0;
      const stop = repeat(count, async () => {
        const r = await sendAccept(client, accept, path);
        if (r.code === 200) bytes += r.bytes;
        return r.code === 200;
      });
      return async () => {
        const { done, failed } = await stop();
        client.close();
        return `${done} lists completed (${(bytes / MIB).toFixed(0)} MiB read), ${failed} failed`;
      };
    },
  };
}

/** A GET of the collection with an Accept header; only the size of the body is kept. */
function sendAccept(
  client: HttpClient,
  accept: string,
  path = PATH,
): Promise<{ code: number; bytes: number }> {
  const base = new URL(client.url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: base.hostname,
        port: base.port,
        path,
        headers: { Accept: accept },
        agent: client.agent,
      },
      (res) => {
        let bytes = 0;
        res.on("data", (c: Buffer) => {
          bytes += c.length;
        });
        res.on("end", () => resolve({ code: res.statusCode ?? 0, bytes }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end();
  });
}

/**
 * `count` clients each writing a Secret (a revision the ConfigMaps' watch cache
 * has not applied), then watching ConfigMaps with sendInitialEvents from it, so
 * the initial state is read from storage, reading up to the bookmark ending it.
 */
const initials: Attack = {
  name: "initial",
  metric: `${INITIALS} sendInitialEvents watches read from storage`,
  start(server) {
    const client = new HttpClient(server.url, { ca: server.ca, sockets: INITIALS * 2 });
    let n = 0;
    const stop = repeat(INITIALS, async () => {
      const s = await client.send(
        "POST",
        `/api/v1/namespaces/${NS}/secrets`,
        JSON.stringify({ apiVersion: "v1", kind: "Secret", metadata: { name: `i-${n++}` } }),
      );
      const rv = JSON.parse(s.body.toString()).metadata.resourceVersion;
      return initialEvents(
        client,
        `${PATH}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=${rv}`,
      );
    });
    return async () => {
      const { done: watches, failed } = await stop();
      client.close();
      return `${watches} initial states read to their bookmark, ${failed} failed`;
    };
  },
};

/** Opens a watch and reads it until the bookmark ending its initial events; whether it came. */
function initialEvents(client: HttpClient, path: string): Promise<boolean> {
  const base = new URL(client.url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: base.hostname, port: base.port, path, agent: client.agent },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          resolve(false);
          return;
        }
        let tail = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          tail = (tail + c).slice(-4096);
          if (tail.includes("k8s.io/initial-events-end")) {
            req.destroy();
            resolve(true);
          }
        });
        res.on("error", () => resolve(false));
        res.on("end", () => resolve(false));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

async function probeChild(url: string, ms: number): Promise<void> {
  const client = new HttpClient(url, { sockets: 1 });
  await probeHere(client, 300); // warm-up
  const samples = await probeHere(client, ms);
  client.close();
  process.send?.(Array.from(samples.values()), () => process.disconnect());
}

async function main(): Promise<void> {
  const server = await ChildServer.start("api", { tls: false });
  const filler = new HttpClient(server.url, { sockets: FILL_CLIENTS });
  const rows: Row[] = [];
  try {
    log(
      `server ${server.url} (pid ${server.pid}); filling ${OBJECTS.toLocaleString("en-US")} ConfigMaps of ${OBJECT_BYTES} B`,
    );
    const t0 = now();
    await fill(filler);
    log(`filled in ${((now() - t0) / 1000).toFixed(1)} s`);
    filler.close();
    const attacks = [
      watchers,
      listers("lists", LISTS, "application/json", `${LISTS} concurrent full lists`),
      listers("tables", TABLES, TABLE_ACCEPT, `${TABLES} concurrent Table lists`),
      listers(
        "pages",
        PAGES,
        "application/json",
        `${PAGES} concurrent paginated lists of one whole page`,
        `${PATH}?limit=1000000`,
      ),
      listers("yaml", YAMLS, "application/yaml", `${YAMLS} concurrent YAML lists`),
      listers("protobuf", PROTOBUFS, PROTOBUF, `${PROTOBUFS} concurrent protobuf lists`),
      listers(
        "protobuf-cache",
        PROTOBUFS,
        PROTOBUF,
        `${PROTOBUFS} concurrent protobuf lists from the watch cache`,
        `${PATH}?resourceVersion=0`,
      ),
      initials,
    ].filter((a) => PHASES.has(a.name));
    for (const attack of attacks) {
      // The baseline right before each attack, in the same run.
      resetPeak(server.pid);
      const quiet = await probe(server.url, PHASE_MS / 2);
      const quietPeak = peakRss(server.pid);
      resetPeak(server.pid);
      const stop = attack.start(server);
      const loaded = await probe(server.url, PHASE_MS);
      const peak = peakRss(server.pid);
      const summary = await stop();
      const up = alive(server.pid);
      const p99 = percentile(loaded.values(), 99);
      const base = percentile(quiet.values(), 99);
      log(
        `${attack.metric}: GET p99 ${p99.toFixed(1)} ms (p50 ${percentile(loaded.values(), 50).toFixed(1)} ms, ` +
          `max ${percentile(loaded.values(), 100).toFixed(1)} ms, ${loaded.values().length} GETs) against ${base.toFixed(1)} ms with no attack; server peak RSS ` +
          `${(peak / MIB).toFixed(0)} MiB (${(quietPeak / MIB).toFixed(0)} MiB with no attack); ${summary}; ` +
          `server ${up ? "up" : "GONE"}`,
      );
      if (!up) throw new Error(`the server died during ${attack.metric}`);
      rows.push(
        {
          backend: "api",
          metric: `GET p99 during ${attack.metric}`,
          value: p99,
          unit: "ms",
          baseline: base,
          baselineLabel: "GET p99, no attack",
          better: "lower",
          goal: { text: `< ${GOAL_P99_MS} ms`, met: p99 < GOAL_P99_MS },
        },
        {
          backend: "api",
          metric: `server peak RSS during ${attack.metric}`,
          value: peak / MIB,
          unit: "MiB",
          baseline: quietPeak / MIB,
          baselineLabel: "peak RSS, no attack",
          better: "lower",
        },
      );
      // Let the server settle (cut-off watchers, finished lists) before the next baseline.
      await new Promise((r) => setTimeout(r, 1000));
    }
  } finally {
    filler.close();
    await server.stop();
  }
  printTable(
    `Streams benchmark (${OBJECTS.toLocaleString("en-US")} ConfigMaps of 1 KiB, http, server in a child process)`,
    rows,
  );
}

if (process.argv[2] === "probe") await probeChild(process.argv[3], Number(process.argv[4]));
else await main();
