/**
 * `npm run bench:gateway`: the gateway against nginx and against no proxy at all
 * (issue 14 §5), in one run, against the same backends.
 *
 * Backends: BENCH_GATEWAY_BACKENDS (3) processes of the hello demo image's server
 * (images/hello/server.mjs, started directly) on 127.87.0.N:8080. Three targets:
 * - direct: one backend, no proxy (the baseline of latency);
 * - setpoint gateway: `setpoint gateway` as its own process, following an in-process
 *   apiserver that holds an Ingress → Service → EndpointSlice of the backends;
 * - nginx: Debian's nginx as the same reverse proxy (an upstream of the same
 *   backends, round-robin, keep-alive to them, the same X-Forwarded-* headers);
 * - node proxy: the same reverse proxy in a few lines of Node's `http` and nothing
 *   else (bench/lib/node-proxy.mjs): the ceiling any gateway built on Node's HTTP
 *   stack can reach here, measured in the same run.
 * The proxies run one process each (nginx: worker_processes 1) with access logs off,
 * on a 2-core machine shared with the backends and the load generator.
 *
 * Two loads from autocannon, each in a process of its own, 50 connections:
 * - saturation, BENCH_GATEWAY_SECONDS (10) s as fast as each answers: req/s, p50,
 *   p99. Goal: the gateway at least 0.7x nginx's req/s.
 * - a fixed rate, BENCH_GATEWAY_RATE req/s (default: a quarter of the lowest
 *   saturated rate): p50 and p99, which are what a proxy adds when it is not the
 *   bottleneck (at saturation a closed loop's latency is connections / rate).
 *   Goal: the gateway's p99 less than 2 ms over direct.
 * The CPU time the serving process (with its children) used per 1000 answers at
 * saturation is printed too: on a machine shared with other work it says more about a
 * proxy's cost than req/s does. Each target gets a 2 s warm-up first. BENCH_GATEWAY_PROFILE=DIR writes a CPU profile of
 * the gateway process there (node --cpu-prof). Without nginx the nginx rows are skipped
 * (install Debian's `nginx` package).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { EndpointSlice, Ingress, Service } from "@setpoint/api";
import { Client } from "@setpoint/runtime";
import { startTestEnv } from "../src/testenv/testenv.ts";
import { printTable, type Row } from "./lib/table.ts";

const BACKENDS = Number(process.env.BENCH_GATEWAY_BACKENDS ?? 3);
const SECONDS = Number(process.env.BENCH_GATEWAY_SECONDS ?? 10);
const CONNECTIONS = 50;
const BIN = new URL("../bin/setpoint.mjs", import.meta.url).pathname;
const HELLO = new URL("../images/hello/server.mjs", import.meta.url).pathname;
const LOAD = new URL("./lib/autocannon-child.ts", import.meta.url).pathname;
const NODE_PROXY = new URL("./lib/node-proxy.mjs", import.meta.url).pathname;
const HOST = "hello.bench.local";
const NGINX = ["/usr/sbin/nginx", "/usr/bin/nginx"].find((p) => existsSync(p));
const PORT = 8080;
const backendIp = (i: number) => `127.87.0.${i + 1}`;
/** Clock ticks per second of /proc/PID/stat's times (Linux: 100). */
const CLK_TCK = 100;

interface Load {
  ok: number;
  sent: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  rps: number;
  p50: number;
  p99: number;
}

interface Target {
  name: string;
  url: string;
  /** The process that serves it (with its children, e.g. nginx's worker). */
  pid: number;
}

/** CPU time (user + system) of a process and its descendants so far, ms. */
function cpuMs(pid: number): number {
  let ms = 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    ms += ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK;
    const kids = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim();
    for (const k of kids ? kids.split(" ") : []) ms += cpuMs(Number(k));
  } catch {
    // gone, or no /proc: counted as nothing
  }
  return ms;
}

let gatewayLog = () => 0;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const children: ChildProcess[] = [];
const logged = new Map<ChildProcess, { bytes: number }>();

function start(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): ChildProcess {
  const child = spawn(cmd, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  // Read what it prints, or a full pipe would block it (and the figures with it).
  const log = { bytes: 0 };
  logged.set(child, log);
  for (const s of [child.stdout, child.stderr])
    s?.on("data", (d: Buffer) => (log.bytes += d.length));
  return child;
}

/** GET url with Host, resolving with the status (0 when nothing answered). */
function probe(url: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request(url, { headers: { host: HOST }, agent: false }, (res) => {
      res.resume();
      res.once("end", () => resolve(res.statusCode ?? 0));
    });
    req.once("error", () => resolve(0));
    req.end();
  });
}

async function until200(url: string, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if ((await probe(url)) === 200) return;
    await sleep(50);
  }
  throw new Error(`${what} did not answer 200 at ${url} within ${ms} ms`);
}

function runLoad(target: Target, seconds: number, rate?: number): Promise<Load> {
  const opts = { url: target.url, host: HOST, connections: CONNECTIONS, seconds, rate };
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", LOAD, JSON.stringify(opts)], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.once("error", reject);
    child.once("close", (code) => {
      if (code !== 0) reject(new Error(`autocannon against ${target.name} exited ${code}`));
      else resolve(JSON.parse(out.trim()) as Load);
    });
  });
}

/** Starts the backends; returns the first one's pid. */
async function startBackends(): Promise<number> {
  const pids: number[] = [];
  for (let i = 0; i < BACKENDS; i++) {
    const child = start(process.execPath, [HELLO], {
      ...process.env,
      SETPOINT_POD_IP: backendIp(i),
      PORT: String(PORT),
      HOSTNAME: `hello-${i}`,
      VERSION: "bench",
    });
    pids.push(child.pid as number);
  }
  for (let i = 0; i < BACKENDS; i++) {
    await until200(`http://${backendIp(i)}:${PORT}/`, `backend ${i}`);
  }
  return pids[0];
}

/** Waits (30 s at most) for `child` to print its address, the first group of `pattern`. */
async function printedAddress(
  child: ChildProcess,
  pattern: RegExp,
  what: string,
): Promise<{ addr: string; printed: string }> {
  let out = "";
  child.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const deadline = Date.now() + 30_000;
  for (;;) {
    const addr = pattern.exec(out)?.[1];
    if (addr) return { addr, printed: out };
    if (Date.now() > deadline || child.exitCode !== null) {
      throw new Error(`${what} did not start:\n${out}`);
    }
    await sleep(50);
  }
}

async function startGateway(kubeconfig: string, dataDir: string): Promise<Target> {
  const prof = process.env.BENCH_GATEWAY_PROFILE;
  const child = start(process.execPath, [
    ...(prof ? ["--cpu-prof", "--cpu-prof-dir", prof] : []),
    BIN,
    "gateway",
    "--kubeconfig",
    kubeconfig,
    "--listen",
    "127.0.0.1:0",
    "--data-dir",
    dataDir,
    "--no-access-log",
    "--log-format",
    "json",
  ]);
  const { addr, printed } = await printedAddress(child, /http on (\S+?)[,;]/, "setpoint gateway");
  const url = `http://${addr}/`;
  await until200(url, "the gateway's route");
  gatewayLog = () => (logged.get(child)?.bytes ?? 0) - printed.length;
  return { name: "setpoint gateway", url, pid: child.pid as number };
}

async function startNodeProxy(): Promise<Target> {
  const child = start(process.execPath, [
    NODE_PROXY,
    ...Array.from({ length: BACKENDS }, (_, i) => `${backendIp(i)}:${PORT}`),
  ]);
  const { addr } = await printedAddress(child, /listening on (\S+)/, "the node proxy");
  const url = `http://${addr}/`;
  await until200(url, "the node proxy");
  return { name: "node proxy", url, pid: child.pid as number };
}

function nginxConf(dir: string, port: number): string {
  const servers = Array.from(
    { length: BACKENDS },
    (_, i) => `    server ${backendIp(i)}:${PORT};`,
  ).join("\n");
  return `worker_processes 1;
daemon off;
master_process on;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  keepalive_requests 1000000;
  upstream hello {
${servers}
    keepalive 64;
  }
  server {
    listen 127.0.0.1:${port};
    server_name ${HOST};
    location / {
      proxy_pass http://hello;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-Host $host;
      proxy_set_header X-Forwarded-Port $server_port;
      proxy_next_upstream error timeout;
    }
  }
}
`;
}

async function freePort(): Promise<number> {
  const { createServer } = await import("node:net");
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

async function startNginx(dir: string): Promise<Target> {
  // nginx's worker runs as nobody when started by root: it must reach its temp dirs.
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  chmodSync(join(dir, ".."), 0o755);
  const port = await freePort();
  const conf = join(dir, "nginx.conf");
  writeFileSync(conf, nginxConf(dir, port));
  execFileSync(NGINX as string, ["-t", "-q", "-p", dir, "-c", conf], { stdio: "inherit" });
  const child = start(NGINX as string, ["-p", dir, "-c", conf]);
  const url = `http://127.0.0.1:${port}/`;
  await until200(url, "nginx");
  return { name: "nginx", url, pid: child.pid as number };
}

async function createObjects(client: Client): Promise<void> {
  await client.create<Service>({
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "hello", namespace: "default" },
    spec: { selector: { app: "hello" }, ports: [{ name: "http", port: 80, targetPort: PORT }] },
  });
  await client.create<EndpointSlice>({
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name: "hello-1",
      namespace: "default",
      labels: { "kubernetes.io/service-name": "hello" },
    },
    addressType: "IPv4",
    ports: [{ name: "http", port: PORT, protocol: "TCP" }],
    endpoints: Array.from({ length: BACKENDS }, (_, i) => ({
      addresses: [backendIp(i)],
      conditions: { ready: true },
    })),
  });
  await client.create<Ingress>({
    apiVersion: "networking.k8s.io/v1",
    kind: "Ingress",
    metadata: { name: "hello", namespace: "default" },
    spec: {
      ingressClassName: "setpoint",
      rules: [
        {
          host: HOST,
          http: {
            paths: [
              {
                path: "/",
                pathType: "Prefix",
                backend: { service: { name: "hello", port: { name: "http" } } },
              },
            ],
          },
        },
      ],
    },
  });
}

function describe(l: Load): string {
  const bad = l.errors + l.timeouts + l.non2xx;
  return `${Math.round(l.rps).toLocaleString("en-US").padStart(8)} req/s  p50 ${l.p50.toFixed(2).padStart(6)} ms  p99 ${l.p99.toFixed(2).padStart(6)} ms  (${l.ok} ok${bad ? `, ${l.errors} errors, ${l.timeouts} timeouts, ${l.non2xx} non-2xx` : ""})`;
}

const dir = mkdtempSync(join(tmpdir(), "setpoint-bench-gateway-"));
const env = await startTestEnv({ controllers: false });
const client = new Client(env.config);
try {
  const first = await startBackends();
  await createObjects(client);
  const targets: Target[] = [
    { name: "direct", url: `http://${backendIp(0)}:${PORT}/`, pid: first },
    await startGateway(env.kubeconfigPath, join(dir, "gateway")),
  ];
  targets.push(await startNodeProxy());
  if (NGINX) targets.push(await startNginx(join(dir, "nginx")));
  else {
    console.log(
      "nginx not found (/usr/sbin/nginx): the nginx rows are skipped; install Debian's `nginx` package (apt-get install nginx) to compare",
    );
  }

  console.log(
    `\nbench:gateway: ${BACKENDS} hello backends, autocannon ${CONNECTIONS} connections, ${SECONDS} s per run, Host ${HOST}`,
  );
  const saturated = new Map<string, Load>();
  const cpuPerK = new Map<string, number>();
  console.log(
    "\nsaturation (as fast as each answers; CPU: of the process serving, per 1000 answers):",
  );
  for (const t of targets) {
    await runLoad(t, 2);
    const before = cpuMs(t.pid);
    const l = await runLoad(t, SECONDS);
    const cpu = ((cpuMs(t.pid) - before) / l.ok) * 1000;
    saturated.set(t.name, l);
    cpuPerK.set(t.name, cpu);
    console.log(`  ${t.name.padEnd(17)} ${describe(l)}  CPU ${Math.round(cpu)} ms`);
  }
  const lowest = Math.min(...[...saturated.values()].map((l) => l.rps));
  const rate = Number(
    process.env.BENCH_GATEWAY_RATE ?? Math.max(100, Math.round(lowest / 4 / 100) * 100),
  );
  const fixed = new Map<string, Load>();
  console.log(`\nfixed rate (${rate} req/s):`);
  for (const t of targets) {
    const l = await runLoad(t, SECONDS, rate);
    fixed.set(t.name, l);
    console.log(`  ${t.name.padEnd(17)} ${describe(l)}`);
  }

  const gw = saturated.get("setpoint gateway") as Load;
  const direct = saturated.get("direct") as Load;
  const ngx = saturated.get("nginx");
  const nodeProxy = saturated.get("node proxy") as Load;
  const gwFixed = fixed.get("setpoint gateway") as Load;
  const directFixed = fixed.get("direct") as Load;
  const ngxFixed = fixed.get("nginx");
  const rows: Row[] = [];
  if (ngx && ngxFixed) {
    rows.push({
      backend: "setpoint gateway",
      metric: `req/s, ${CONNECTIONS} connections`,
      value: gw.rps,
      unit: "req/s",
      baseline: ngx.rps,
      baselineLabel: "nginx",
      better: "higher",
      goal: { text: "≥ 0.7x nginx", met: gw.rps >= 0.7 * ngx.rps },
    });
  }
  rows.push({
    backend: "setpoint gateway",
    metric: `req/s, ${CONNECTIONS} connections`,
    value: gw.rps,
    unit: "req/s",
    baseline: nodeProxy.rps,
    baselineLabel: "node proxy",
    better: "higher",
  });
  if (ngx) {
    rows.push({
      backend: "node proxy (the ceiling)",
      metric: `req/s, ${CONNECTIONS} connections`,
      value: nodeProxy.rps,
      unit: "req/s",
      baseline: ngx.rps,
      baselineLabel: "nginx",
      better: "higher",
    });
  }
  rows.push({
    backend: "setpoint gateway",
    metric: `req/s, ${CONNECTIONS} connections`,
    value: gw.rps,
    unit: "req/s",
    baseline: direct.rps,
    baselineLabel: "direct",
    better: "higher",
  });
  rows.push({
    backend: "setpoint gateway",
    metric: "CPU per 1000 answers",
    value: cpuPerK.get("setpoint gateway") as number,
    unit: "ms",
    baseline: cpuPerK.get("node proxy") as number,
    baselineLabel: "node proxy",
    better: "lower",
  });
  if (ngx) {
    rows.push({
      backend: "setpoint gateway",
      metric: "CPU per 1000 answers",
      value: cpuPerK.get("setpoint gateway") as number,
      unit: "ms",
      baseline: cpuPerK.get("nginx") as number,
      baselineLabel: "nginx",
      better: "lower",
    });
  }
  if (ngx && ngxFixed) {
    rows.push({
      backend: "nginx",
      metric: `req/s, ${CONNECTIONS} connections`,
      value: ngx.rps,
      unit: "req/s",
      baseline: direct.rps,
      baselineLabel: "direct",
      better: "higher",
    });
  }
  rows.push({
    backend: "setpoint gateway",
    metric: `p99 at ${rate} req/s`,
    value: gwFixed.p99,
    unit: "ms",
    baseline: directFixed.p99,
    baselineLabel: "direct",
    better: "lower",
    goal: {
      text: `added < 2 ms (added ${(gwFixed.p99 - directFixed.p99).toFixed(2)} ms)`,
      met: gwFixed.p99 - directFixed.p99 < 2,
    },
  });
  if (ngxFixed) {
    rows.push({
      backend: "nginx",
      metric: `p99 at ${rate} req/s`,
      value: ngxFixed.p99,
      unit: "ms",
      baseline: directFixed.p99,
      baselineLabel: "direct",
      better: "lower",
    });
    rows.push({
      backend: "setpoint gateway",
      metric: `p99 at ${rate} req/s`,
      value: gwFixed.p99,
      unit: "ms",
      baseline: ngxFixed.p99,
      baselineLabel: "nginx",
      better: "lower",
    });
  }
  console.log(`\n(the gateway printed ${gatewayLog()} bytes after it started)`);
  printTable("bench:gateway", rows);
} finally {
  for (const c of children) if (c.exitCode === null) c.kill("SIGTERM");
  await sleep(process.env.BENCH_GATEWAY_PROFILE ? 3000 : 300);
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  client.close();
  await env.stop();
  rmSync(dir, { recursive: true, force: true });
}
