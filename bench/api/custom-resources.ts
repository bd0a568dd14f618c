/**
 * Custom resources and server-side apply, part of the API benchmark
 * (`npm run bench:api` calls `customResourcesPhase`); also runs on its own:
 *
 *   node --import tsx bench/api/custom-resources.ts
 *
 * Against one API server, in one run, each figure beside a baseline measured in
 * the same run (alternating slices of each, so they share the machine's load):
 *
 * - creates/s of a custom resource with a realistic schema (bounds, patterns,
 *   enums, defaults, a map-type list, int-or-string) and two CEL rules, beside
 *   creates/s of 1 KiB ConfigMaps, with the same number of keep-alive clients;
 *   goal: at least 70% of the ConfigMap rate. Both sides make their bodies from
 *   a template (the name spliced in), and when the server is a child process its
 *   CPU time per create of each is printed too (steadier than the rates when
 *   other work shares the machine);
 * - server-side apply of an unchanged configuration (each client re-applies its
 *   own object), beside a plain client loop doing the same no-op by hand: GET the
 *   object, compare it with the desired one, PUT only if it differs (it never
 *   does); goals: no write at all (the storage revision and every object's
 *   resourceVersion stay as they were, checked and printed) and at least the
 *   rate of the GET-compare-PUT loop. The server answers a repeated no-op apply
 *   from memory (src/apiserver/noopapplies.ts); a third side sends the same
 *   configuration with different trailing blanks each time, so that every apply
 *   runs in full, and is printed for context.
 *
 * Environment (standalone): BENCH_MS (length of each side of each phase, default
 * 4000), BENCH_TLS=1 (https), BENCH_PROFILE_DIR (CPU profile of the server child),
 * BENCH_CR_PHASES (comma list of creates,apply; default both).
 */
import { fileURLToPath } from "node:url";
import { isDeepStrictEqual } from "node:util";
import { ChildServer } from "../lib/child-server.ts";
import { HttpClient } from "../lib/http-load.ts";
import { printTable, type Row } from "../lib/table.ts";
import { callersFor, combine, type Rate } from "../lib/timing.ts";

/** Goals (issue 4 §5). */
export const CUSTOM_RESOURCE_GOALS = { createsRatio: 0.7, noopApplyRatio: 1 };
/** Concurrent keep-alive clients (as in the ConfigMap creates of bench/api.ts). */
export const CUSTOM_RESOURCE_CLIENTS = 50;
/** Alternating slices per phase. */
const ROUNDS = 4;
/** Warm-up of each side before measuring. */
const WARMUP_MS = 500;
/** Size of each ConfigMap request body. */
const CONFIGMAP_BYTES = 1024;

const GROUP = "bench.setpoint.dev";
const NAMESPACE = "bench-cr";
const CRD_NAME = `webapps.${GROUP}`;
const API_VERSION = `${GROUP}/v1`;
const COLLECTION = `/apis/${GROUP}/v1/namespaces/${NAMESPACE}/webapps`;
const CONFIGMAPS = `/api/v1/namespaces/${NAMESPACE}/configmaps`;
const APPLY_CONTENT_TYPE = "application/apply-patch+yaml";
/** Longest wait for the CRD to be served. */
const ESTABLISH_TIMEOUT_MS = 30_000;

export interface CustomResourcesOptions {
  /** Length of each side of each phase, in ms (default 4000). */
  durationMs?: number;
  /** Concurrent clients (default CUSTOM_RESOURCE_CLIENTS). */
  clients?: number;
  /** Progress lines (default: stderr). */
  log?: (message: string) => void;
  /** Which phases run (default both): "creates", "apply". */
  phases?: ReadonlySet<string>;
}

/** The CRD: a web app as a platform team would declare it. */
export function benchCrd(): Record<string, unknown> {
  const intOrString = {
    "x-kubernetes-int-or-string": true,
    anyOf: [{ type: "integer" }, { type: "string" }],
  };
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: CRD_NAME },
    spec: {
      group: GROUP,
      scope: "Namespaced",
      names: { plural: "webapps", singular: "webapp", kind: "WebApp", shortNames: ["wa"] },
      versions: [
        {
          name: "v1",
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            { name: "Image", type: "string", jsonPath: ".spec.image" },
            { name: "Replicas", type: "integer", jsonPath: ".spec.replicas" },
          ],
          schema: {
            openAPIV3Schema: {
              type: "object",
              properties: {
                spec: {
                  type: "object",
                  required: ["image"],
                  "x-kubernetes-validations": [
                    {
                      rule: "self.minReplicas <= self.replicas",
                      message: "minReplicas must not exceed replicas",
                    },
                    {
                      rule: "!self.image.endsWith(':latest')",
                      message: "image must be pinned, not :latest",
                    },
                  ],
                  properties: {
                    image: { type: "string", maxLength: 256, pattern: "^[a-z0-9./:@_-]+$" },
                    replicas: { type: "integer", minimum: 0, maximum: 100, default: 1 },
                    minReplicas: { type: "integer", minimum: 0, default: 1 },
                    paused: { type: "boolean", default: false },
                    ports: {
                      type: "array",
                      maxItems: 16,
                      "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["name"],
                      items: {
                        type: "object",
                        required: ["name", "port"],
                        properties: {
                          name: { type: "string", maxLength: 15, pattern: "^[a-z][a-z0-9-]*$" },
                          port: { type: "integer", minimum: 1, maximum: 65535 },
                          protocol: { type: "string", enum: ["TCP", "UDP"], default: "TCP" },
                        },
                      },
                    },
                    env: {
                      type: "array",
                      maxItems: 64,
                      "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["name"],
                      items: {
                        type: "object",
                        required: ["name"],
                        properties: {
                          name: { type: "string", maxLength: 128 },
                          value: { type: "string", maxLength: 4096 },
                        },
                      },
                    },
                    resources: {
                      type: "object",
                      properties: { cpu: intOrString, memory: intOrString },
                    },
                    labels: {
                      type: "object",
                      maxProperties: 32,
                      additionalProperties: { type: "string", maxLength: 63 },
                    },
                  },
                },
                status: {
                  type: "object",
                  properties: {
                    readyReplicas: { type: "integer" },
                    observedGeneration: { type: "integer" },
                  },
                },
              },
            },
          },
        },
      ],
    },
  };
}

/** A WebApp of about 1 KiB. */
export function benchWebApp(name: string): Record<string, unknown> {
  return {
    apiVersion: API_VERSION,
    kind: "WebApp",
    metadata: { name, labels: { app: "shop", tier: "web" } },
    spec: {
      image: "registry.example.com/shop/frontend:1.24.3",
      replicas: 3,
      minReplicas: 2,
      ports: [
        { name: "http", port: 8080 },
        { name: "metrics", port: 9090 },
      ],
      env: [
        { name: "LOG_LEVEL", value: "info" },
        { name: "LISTEN_ADDR", value: ":8080" },
        { name: "UPSTREAM_URL", value: "http://catalog.shop.svc.cluster.local:8080/api" },
        { name: "CACHE_TTL", value: "30s" },
        { name: "FEATURE_FLAGS", value: "checkout-v2,search-suggest,fast-images" },
        { name: "OTEL_EXPORTER_OTLP_ENDPOINT", value: "http://otel-collector.observability:4317" },
        { name: "SESSION_COOKIE", value: "shop_session" },
        { name: "REGION", value: "eu-west-1" },
      ],
      resources: { cpu: "500m", memory: "256Mi" },
      labels: { team: "storefront", "cost-center": "retail-42", env: "production" },
    },
  };
}

function configMapBody(name: string): string {
  const shell = (v: string) =>
    `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"${name}"},"data":{"v":"${v}"}}`;
  return shell("x".repeat(Math.max(0, CONFIGMAP_BYTES - shell("").length)));
}

/** Stands for the name in a body template (a name never holds it). */
const NAME_MARK = "@NAME@";

/**
 * Request bodies made from one template, the name spliced in: the load clients
 * share the machine with the server, so both sides of a comparison prepare their
 * bodies the same (small) way, and the figures measure the server.
 */
export function bodyTemplate(bodyFor: (name: string) => string): (name: string) => string {
  const text = bodyFor(NAME_MARK);
  const at = text.indexOf(NAME_MARK);
  if (at < 0 || text.indexOf(NAME_MARK, at + 1) >= 0) {
    throw new Error("a body template holds its name exactly once");
  }
  const head = text.slice(0, at);
  const tail = text.slice(at + NAME_MARK.length);
  return (name) => head + name + tail;
}

/** A server-side apply of `body`, through the client's keep-alive agent. */
async function apply(
  client: HttpClient,
  path: string,
  body: string,
): Promise<{ code: number; body: string }> {
  const r = await client.send("PATCH", path, body, APPLY_CONTENT_TYPE);
  return { code: r.code, body: r.body.toString("utf8") };
}

async function waitServed(client: HttpClient): Promise<void> {
  const end = Date.now() + ESTABLISH_TIMEOUT_MS;
  while (Date.now() < end) {
    if ((await client.send("GET", `${COLLECTION}?limit=1`)).code === 200) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${CRD_NAME} was not served within ${ESTABLISH_TIMEOUT_MS} ms`);
}

/** The storage revision now (a consistent list's resourceVersion). */
async function currentRevision(client: HttpClient): Promise<string> {
  const r = await client.expect(200, "GET", `${COLLECTION}?limit=1`);
  return (JSON.parse(r.body.toString("utf8")) as { metadata: { resourceVersion: string } }).metadata
    .resourceVersion;
}

interface Side {
  name: string;
  rates: Rate[];
  op: (caller: number, i: number) => Promise<unknown>;
  /** Server CPU time used during this side's slices, in microseconds (when measured). */
  cpuMicros?: number;
}

/** The server under load, as the phases see it: its URL, and its CPU time when it is a child. */
export interface BenchApi {
  url: string;
  ca?: string;
  /** CPU time used by the server process so far, all threads (bench/lib/child-server.ts). */
  stats?(): Promise<{ cpuUser: number; cpuSystem: number }>;
}

/** The server's CPU time so far in microseconds, or undefined when it cannot be read. */
async function serverCpu(api: BenchApi): Promise<number | undefined> {
  if (api.stats === undefined) return undefined;
  const s = await api.stats();
  return s.cpuUser + s.cpuSystem;
}

/**
 * Runs the sides in alternating slices (after a warm-up of each); their combined
 * rates. With `api.stats`, each side's server CPU time is added up too.
 */
async function alternate(
  sides: Side[],
  clients: number,
  durationMs: number,
  api?: BenchApi,
): Promise<Rate[]> {
  for (const s of sides) await callersFor(clients, WARMUP_MS, s.op);
  const slice = durationMs / ROUNDS;
  for (let round = 0; round < ROUNDS; round++) {
    for (const s of sides) {
      const before = api && (await serverCpu(api));
      s.rates.push(await callersFor(clients, slice, s.op));
      const after = api && (await serverCpu(api));
      if (before !== undefined && after !== undefined) {
        s.cpuMicros = (s.cpuMicros ?? 0) + (after - before);
      }
    }
  }
  return sides.map((s) => combine(s.rates));
}

/**
 * Creates/s of WebApps beside ConfigMaps (alternating slices), and, when the
 * server's CPU time can be read, its CPU time per create of each: on a shared
 * machine the rates move with other load, the CPU time per create much less.
 */
async function createsPhase(
  api: BenchApi,
  client: HttpClient,
  clients: number,
  durationMs: number,
  log: (m: string) => void,
): Promise<Row[]> {
  const webAppBody = bodyTemplate((name) => JSON.stringify(benchWebApp(name)));
  const cmBody = bodyTemplate(configMapBody);
  const sampleBytes = webAppBody("sample").length;
  // A sample of each, checking that both are accepted as they are.
  await client.expect(201, "POST", COLLECTION, webAppBody("sample"));
  await client.expect(201, "POST", CONFIGMAPS, cmBody("sample"));
  log(
    `creates: ${clients} clients, WebApp (${sampleBytes} B, 2 CEL rules) beside ConfigMap (${CONFIGMAP_BYTES} B), ${durationMs} ms each`,
  );
  let seq = 0;
  const sides: Side[] = [
    {
      name: "webapp",
      rates: [],
      op: () => client.expect(201, "POST", COLLECTION, webAppBody(`c-${seq++}`)),
    },
    {
      name: "configmap",
      rates: [],
      op: () => client.expect(201, "POST", CONFIGMAPS, cmBody(`c-${seq++}`)),
    },
  ];
  const [crCreates, cmCreates] = await alternate(sides, clients, durationMs, api);
  const rows: Row[] = [];
  const [crCpu, cmCpu] = sides.map((s) => s.cpuMicros);
  if (crCpu !== undefined && cmCpu !== undefined) {
    rows.push({
      backend: "api (custom resource)",
      metric: `server CPU per create (all threads), WebApp ${sampleBytes} B`,
      value: crCpu / Math.max(1, crCreates.ops),
      unit: "µs",
      baseline: cmCpu / Math.max(1, cmCreates.ops),
      baselineLabel: `ConfigMap ${CONFIGMAP_BYTES} B creates, same run`,
      better: "lower",
    });
  }
  return [
    {
      backend: "api (custom resource)",
      metric: `creates/s, ${clients} clients, WebApp ${sampleBytes} B, schema + 2 CEL rules`,
      value: crCreates.perSecond,
      unit: "/s",
      baseline: cmCreates.perSecond,
      baselineLabel: `ConfigMap ${CONFIGMAP_BYTES} B creates, same run`,
      better: "higher",
      goal: {
        text: `>= ${CUSTOM_RESOURCE_GOALS.createsRatio}x`,
        met: crCreates.perSecond >= CUSTOM_RESOURCE_GOALS.createsRatio * cmCreates.perSecond,
      },
    },
    ...rows,
  ];
}

/**
 * No-op server-side applies/s beside a GET-compare-PUT loop doing the same no-op
 * (alternating slices); checks that nothing was written.
 */
async function applyPhase(
  client: HttpClient,
  clients: number,
  durationMs: number,
  log: (m: string) => void,
): Promise<Row[]> {
  const names = Array.from({ length: clients }, (_, i) => `apply-${i}`);
  const configs = names.map((n) => JSON.stringify(benchWebApp(n)));
  const rvs: string[] = [];
  for (let i = 0; i < clients; i++) {
    const r = await apply(client, `${COLLECTION}/${names[i]}?fieldManager=bench`, configs[i]);
    if (r.code !== 201)
      throw new Error(`apply ${names[i]}: HTTP ${r.code}: ${r.body.slice(0, 300)}`);
    rvs.push(
      (JSON.parse(r.body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion,
    );
  }
  const desired = names.map((n) => benchWebApp(n));
  const before = await currentRevision(client);
  log(
    `no-op apply: ${clients} clients, each re-applying its own WebApp; storage revision ${before}`,
  );
  let changedRv = 0;
  let puts = 0;
  let fresh = 0;
  const [applies, freshApplies, loops] = await alternate(
    [
      {
        name: "apply",
        rates: [],
        op: async (c) => {
          const r = await apply(client, `${COLLECTION}/${names[c]}?fieldManager=bench`, configs[c]);
          if (r.code !== 200) throw new Error(`apply: HTTP ${r.code}: ${r.body.slice(0, 300)}`);
          if (!r.body.includes(`"resourceVersion":"${rvs[c]}"`)) changedRv++;
        },
      },
      {
        // The same no-op, its configuration text new each time (trailing blanks), so
        // that no remembered answer serves it: the full apply.
        name: "apply-fresh",
        rates: [],
        op: async (c) => {
          const body = `${configs[c]}${" ".repeat(1 + (fresh++ % 4096))}`;
          const r = await apply(client, `${COLLECTION}/${names[c]}?fieldManager=bench`, body);
          if (r.code !== 200) throw new Error(`apply: HTTP ${r.code}: ${r.body.slice(0, 300)}`);
          if (!r.body.includes(`"resourceVersion":"${rvs[c]}"`)) changedRv++;
        },
      },
      {
        name: "get-compare-put",
        rates: [],
        op: async (c) => {
          const got = await client.expect(200, "GET", `${COLLECTION}/${names[c]}`);
          const obj = JSON.parse(got.body.toString("utf8")) as Record<string, unknown>;
          const want = desired[c];
          if (contains(obj.spec, want.spec) && contains(obj.metadata, want.metadata)) return;
          puts++;
          const next = { ...obj, spec: { ...(obj.spec as object), ...(want.spec as object) } };
          await client.expect(200, "PUT", `${COLLECTION}/${names[c]}`, JSON.stringify(next));
        },
      },
    ],
    clients,
    durationMs,
  );
  const after = await currentRevision(client);
  const noWrite = after === before && changedRv === 0 && puts === 0;
  log(
    `no-op apply: storage revision ${before} -> ${after}; responses with a new resourceVersion: ${changedRv}; PUTs the loop needed: ${puts} => ${noWrite ? "no write" : "WROTE"}`,
  );
  return [
    {
      backend: "api (server-side apply)",
      metric: `no-op applies/s, ${clients} clients (revision ${before} -> ${after}, ${noWrite ? "no write" : "WROTE"})`,
      value: applies.perSecond,
      unit: "/s",
      baseline: loops.perSecond,
      baselineLabel: "GET-compare-PUT loop, same no-op",
      better: "higher",
      goal: {
        text: `>= ${CUSTOM_RESOURCE_GOALS.noopApplyRatio}x, no write`,
        met: noWrite && applies.perSecond >= CUSTOM_RESOURCE_GOALS.noopApplyRatio * loops.perSecond,
      },
    },
    {
      backend: "api (server-side apply)",
      metric: `no-op applies/s, ${clients} clients, configuration text new each time (none remembered)`,
      value: freshApplies.perSecond,
      unit: "/s",
      baseline: loops.perSecond,
      baselineLabel: "GET-compare-PUT loop, same no-op",
      better: "higher",
    },
  ];
}

/**
 * Runs the custom resource phases against the API server at `api.url` (it creates
 * the namespace bench-cr and the CRD webapps.bench.setpoint.dev) and returns their
 * rows (see the file comment).
 */
export async function customResourcesPhase(
  api: BenchApi,
  opts: CustomResourcesOptions = {},
): Promise<Row[]> {
  const durationMs = opts.durationMs ?? 4000;
  const clients = opts.clients ?? CUSTOM_RESOURCE_CLIENTS;
  const phases = opts.phases ?? new Set(["creates", "apply"]);
  const log = opts.log ?? ((m: string) => process.stderr.write(`bench:custom-resources: ${m}\n`));
  const client = new HttpClient(api.url, { ca: api.ca, sockets: clients });
  try {
    const ns = await client.send(
      "POST",
      "/api/v1/namespaces",
      JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name: NAMESPACE } }),
    );
    if (ns.code !== 201 && ns.code !== 409) throw new Error(`namespace: HTTP ${ns.code}`);
    await client.expect(
      201,
      "POST",
      "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
      JSON.stringify(benchCrd()),
    );
    await waitServed(client);
    const rows: Row[] = [];
    if (phases.has("creates")) {
      rows.push(...(await createsPhase(api, client, clients, durationMs, log)));
    }
    if (phases.has("apply")) rows.push(...(await applyPhase(client, clients, durationMs, log)));
    return rows;
  } finally {
    client.close();
  }
}

/**
 * Whether `live` holds everything `want` says (objects: every key of `want`,
 * recursively; lists: the same length, item by item; the rest: equal): what a
 * hand-written loop compares, since the server adds defaults and metadata.
 */
function contains(live: unknown, want: unknown): boolean {
  if (Array.isArray(want)) {
    return (
      Array.isArray(live) &&
      live.length === want.length &&
      want.every((w, i) => contains(live[i], w))
    );
  }
  if (typeof want === "object" && want !== null) {
    if (typeof live !== "object" || live === null || Array.isArray(live)) return false;
    const l = live as Record<string, unknown>;
    return Object.entries(want).every(([k, v]) => Object.hasOwn(l, k) && contains(l[k], v));
  }
  return isDeepStrictEqual(live, want);
}

async function main(): Promise<void> {
  const tls = process.env.BENCH_TLS === "1";
  const api = await ChildServer.start("api", { tls });
  try {
    const rows = await customResourcesPhase(api, {
      durationMs: Number(process.env.BENCH_MS ?? 4000),
      phases: new Set(
        (process.env.BENCH_CR_PHASES ?? "creates,apply").split(",").map((p) => p.trim()),
      ),
    });
    printTable(
      `Custom resources and server-side apply (${tls ? "https" : "http"}, server in a child process)`,
      rows,
    );
  } finally {
    await api.stop();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
