/**
 * Hostile-request benchmark: `npm run bench:hostile`.
 *
 * The p99 latency of a plain GET (one object, from a client of its own, one
 * request at a time) while each attack runs against the same server, beside the
 * p99 of the same GET with no attack, measured in the same run; the goal is that
 * no attack raises it above 100 ms, and that none stops the server (failed GETs
 * are counted). The attacks, each sent over and over for the phase:
 *
 * - json-patch: a 1.5 KB JSON patch of 28 `copy` operations of /data into itself,
 *   with dryRun=All (refused at 3 MiB of copies);
 * - regex-pattern / regex-cel: a custom resource whose field, checked by the schema
 *   pattern or a CEL `matches()` of ^(a+)+$, is thirty a's and a !;
 * - yaml: a 1 MB YAML body of 249,000 list items (parsed off the event loop);
 * - enum: a CRD with 100,000 enum values (compiled in linear time);
 * - trickle: 1,000 connections sending a body one byte a second (timed out at 60 s);
 * - idle: 1,000 connections that send nothing (closed at 32 s).
 *
 * Beside each phase's latencies it prints the server's CPU time per attack sent
 * (the server child's, its writer thread and body-parsing threads included), a
 * figure a busy machine disturbs less than latency, and how the attacks were
 * answered (status codes; "cut" for a connection that failed).
 *
 * The server is the one `setpoint up` runs (durable SQLite, built-in types), in a
 * child process (bench/lib/api-child.ts, compiled as the command is).
 *
 * Environment:
 *   BENCH_PHASE_MS   length of each phase (default 5000)
 *   BENCH_ATTACKS    comma list of the attacks above (default all)
 */
import net from "node:net";
import { ChildServer } from "./lib/child-server.ts";
import { HttpClient } from "./lib/http-load.ts";
import { printTable, type Row } from "./lib/table.ts";
import { now, percentile, Samples } from "./lib/timing.ts";

const PHASE_MS = Number(process.env.BENCH_PHASE_MS ?? 5000);
const GOAL_MS = 100;
const ALL = ["json-patch", "regex-pattern", "regex-cel", "yaml", "enum", "trickle", "idle"];
const ATTACKS = (process.env.BENCH_ATTACKS ?? ALL.join(",")).split(",").filter(Boolean);

const EVIL = `${"a".repeat(30)}!`;

interface Probe {
  p50: number;
  p99: number;
  count: number;
  failed: number;
}

/** GETs one object, one at a time, for `ms`: their latencies. */
async function probe(client: HttpClient, ms: number): Promise<Probe> {
  const samples = new Samples();
  let failed = 0;
  const end = now() + ms;
  while (now() < end) {
    const t = now();
    try {
      const r = await client.send("GET", "/api/v1/namespaces/default/configmaps/probe");
      if (r.code !== 200) failed++;
    } catch {
      failed++;
    }
    samples.push(now() - t);
  }
  const values = samples.values();
  return {
    p50: percentile(values, 50),
    p99: percentile(values, 99),
    count: samples.length,
    failed,
  };
}

/**
 * Runs `attack` over and over until `stop` is set; resolves when the last one ends,
 * with how many were sent and how they were answered (status codes, or "cut").
 */
async function repeat(
  attack: () => Promise<unknown>,
  stop: { done: boolean },
): Promise<{ sent: number; answers: Map<string, number> }> {
  let sent = 0;
  const answers = new Map<string, number>();
  while (!stop.done) {
    let answer = "cut";
    try {
      const r = await attack();
      if (typeof r === "object" && r !== null && "code" in r) answer = String(r.code);
    } catch {
      // a refused or cut connection is the attack failing, as it should
    }
    answers.set(answer, (answers.get(answer) ?? 0) + 1);
    sent++;
  }
  return { sent, answers };
}

function crd(name: string, kind: string, openAPIV3Schema: unknown): string {
  const plural = `${kind.toLowerCase()}s`;
  return JSON.stringify({
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${plural}.${name}` },
    spec: {
      group: name,
      scope: "Namespaced",
      names: { plural, singular: kind.toLowerCase(), kind },
      versions: [{ name: "v1", served: true, storage: true, schema: { openAPIV3Schema } }],
    },
  });
}

async function waitServed(client: HttpClient, path: string): Promise<void> {
  const deadline = now() + 30_000;
  while (now() < deadline) {
    if ((await client.send("GET", path)).code === 200) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${path} not served`);
}

/** Opens `n` raw connections; each then runs `onOpen`. */
async function connections(
  url: string,
  n: number,
  onOpen: (s: net.Socket) => void,
): Promise<net.Socket[]> {
  const { hostname, port } = new URL(url);
  const out: net.Socket[] = [];
  for (let i = 0; i < n; i++) {
    const s = net.connect(Number(port), hostname);
    s.on("error", () => {});
    s.once("connect", () => onOpen(s));
    out.push(s);
  }
  return out;
}

async function main(): Promise<void> {
  const server = await ChildServer.start("api", { tls: false });
  const prober = new HttpClient(server.url, { sockets: 1 });
  const attacker = new HttpClient(server.url, { sockets: 4 });
  const rows: Row[] = [];
  try {
    await attacker.expect(
      201,
      "POST",
      "/api/v1/namespaces/default/configmaps",
      JSON.stringify({ metadata: { name: "probe" }, data: { a: "x".repeat(100) } }),
    );
    await probe(prober, 500); // warm up
    const baseline = await probe(prober, PHASE_MS);
    console.log(
      `no attack: GET p50 ${baseline.p50.toFixed(2)} ms, p99 ${baseline.p99.toFixed(2)} ms (${baseline.count} GETs)`,
    );

    for (const name of ATTACKS) {
      const setup = await prepare(name, server.url, attacker);
      const cpu0 = await server.stats();
      const stop = { done: false };
      const running = setup.run
        ? repeat(setup.run, stop)
        : Promise.resolve({ sent: 0, answers: new Map<string, number>() });
      const during = await probe(prober, PHASE_MS);
      stop.done = true;
      const { sent, answers } = await running;
      const cpu1 = await server.stats();
      setup.cleanup?.();
      const p99 = during.p99;
      // The server's CPU time per attack (steadier than latency on a busy machine).
      const cpuMs = (cpu1.cpuUser + cpu1.cpuSystem - cpu0.cpuUser - cpu0.cpuSystem) / 1000;
      const answered = [...answers].map(([code, n]) => `${n} × ${code}`).join(", ");
      const perAttack =
        setup.run && sent > 0
          ? `, server CPU ${(cpuMs / sent).toFixed(0)} ms each; answered ${answered}`
          : "";
      console.log(
        `${name}: GET p50 ${during.p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms (${during.count} GETs, ${during.failed} failed; ${setup.run ? `${sent} attacks sent${perAttack}` : setup.note})`,
      );
      rows.push({
        backend: "api",
        metric: `GET p99 during ${name}`,
        value: p99,
        unit: "ms",
        baseline: baseline.p99,
        baselineLabel: "no attack",
        better: "lower",
        goal: {
          text: `under ${GOAL_MS} ms, no failed GET`,
          met: p99 < GOAL_MS && during.failed === 0,
        },
      });
    }
  } finally {
    prober.close();
    attacker.close();
    await server.stop();
  }
  printTable(`GET latency under attack, ${PHASE_MS} ms per phase`, rows);
}

interface Attack {
  run?: () => Promise<unknown>;
  cleanup?: () => void;
  note?: string;
}

async function prepare(name: string, url: string, client: HttpClient): Promise<Attack> {
  switch (name) {
    case "json-patch": {
      await client.expect(
        201,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        JSON.stringify({ metadata: { name: "target" }, data: { a: "x".repeat(20) } }),
      );
      const body = JSON.stringify(
        Array.from({ length: 28 }, (_, i) => ({ op: "copy", from: "/data", path: `/data/c${i}` })),
      );
      return {
        run: () =>
          client.send(
            "PATCH",
            "/api/v1/namespaces/default/configmaps/target?dryRun=All",
            body,
            "application/json-patch+json",
          ),
      };
    }
    case "regex-pattern":
    case "regex-cel": {
      const cel = name === "regex-cel";
      const kind = cel ? "Celregex" : "Patternregex";
      const field: Record<string, unknown> = cel
        ? {
            type: "string",
            maxLength: 64,
            "x-kubernetes-validations": [{ rule: "self.matches('^(a+)+$')" }],
          }
        : { type: "string", pattern: "^(a+)+$" };
      await client.expect(
        201,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        crd("bench.example.com", kind, {
          type: "object",
          properties: { spec: { type: "object", properties: { v: field } } },
        }),
      );
      const path = `/apis/bench.example.com/v1/namespaces/default/${kind.toLowerCase()}s`;
      await waitServed(client, path);
      const body = JSON.stringify({
        apiVersion: "bench.example.com/v1",
        kind,
        metadata: { name: "evil" },
        spec: { v: EVIL },
      });
      return { run: () => client.send("POST", path, body) };
    }
    case "yaml": {
      const body = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yaml\nitems:\n${"- a\n".repeat(249_000)}`;
      return {
        run: () =>
          client.send("POST", "/api/v1/namespaces/default/configmaps", body, "application/yaml"),
      };
    }
    case "enum": {
      const values = Array.from({ length: 100_000 }, (_, i) => `v${i}`);
      let n = 0;
      return {
        run: () =>
          client.send(
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            crd(`enum${n++}.example.com`, "Manyvalues", {
              type: "object",
              properties: {
                spec: { type: "object", properties: { v: { type: "string", enum: values } } },
              },
            }),
          ),
      };
    }
    case "trickle": {
      const timers: NodeJS.Timeout[] = [];
      const sockets = await connections(url, 1000, (s) => {
        s.write(
          "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{",
        );
        timers.push(setInterval(() => s.write(" "), 1000));
      });
      return {
        note: "1,000 trickling connections",
        cleanup: () => {
          for (const t of timers) clearInterval(t);
          for (const s of sockets) s.destroy();
        },
      };
    }
    case "idle": {
      const sockets = await connections(url, 1000, () => {});
      return {
        note: "1,000 idle connections",
        cleanup: () => {
          for (const s of sockets) s.destroy();
        },
      };
    }
    default:
      throw new Error(`unknown attack ${name}; known: ${ALL.join(", ")}`);
  }
}

await main();
