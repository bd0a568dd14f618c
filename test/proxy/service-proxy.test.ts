/**
 * The service proxy through an outage, with real processes: `setpoint up` (its
 * endpoint controllers fill the EndpointSlices) and a `setpoint agent` process
 * running two `hello` Pods behind a NodePort Service and a client Pod that
 * reaches the Service through the NAME_SERVICE_HOST/_PORT variables the agent
 * gave it, one new connection per request, counting answers and failures.
 *
 * 1. The client's requests reach both backends through the cluster IP; the
 *    node port answers too; a headless Service gets no listener.
 * 2. The apiserver is killed with SIGKILL; one backend's process is killed
 *    (the proxy ejects it after one refused connect and retries on the other,
 *    the agent restarts it); the agent is restarted, with the apiserver still
 *    gone, and serves the cluster IP again from its table on disk.
 * The client's failures are counted outside the agent's restart (its
 * listeners are closed while no agent runs) and apart from a request that was
 * in flight to the killed backend: the figure must be 0, and is printed with
 * the requests made and the failures inside the restart.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { connect } from "node:net";
import type { EndpointSlice, Pod, Service } from "@setpoint/api";
import { Client, loadKubeconfig } from "@setpoint/runtime";
import { afterAll, describe, expect, it } from "vitest";
import { stopServiceProxies } from "../agent/agent-process.ts";
import {
  eventually,
  removeTempDirs,
  serviceProxyProcesses,
  tempDir,
  testImageStore,
} from "../agent/helpers.ts";
import { SETPOINT_BIN, type SetpointProcess, startSetpoint } from "../e2e/helpers/setpoint.ts";

const RANGE = 83;
const NODE = "svc-proxy-node";
const HOLD_MS = 1_000;
const POD = { apiVersion: "v1", kind: "Pod" } as const;
const SLICE = { apiVersion: "discovery.k8s.io/v1", kind: "EndpointSlice" } as const;

/** The client Pod: GETs $WEB_SERVICE_HOST:$WEB_SERVICE_PORT in a loop, serves counts on :8080/stats. */
const CLIENT = `
const http = require("node:http");
const host = process.env.WEB_SERVICE_HOST, port = Number(process.env.WEB_SERVICE_PORT);
const s = { host, port, requests: 0, failures: [], byPod: {} };
function once() {
  s.requests++;
  const t = Date.now();
  const req = http.get({ host, port, path: "/", agent: false, timeout: 2000 }, (res) => {
    let body = "";
    res.on("data", (d) => (body += d));
    res.on("end", () => {
      const m = /hello from (\\S+)/.exec(body);
      if (m) s.byPod[m[1]] = (s.byPod[m[1]] || 0) + 1; else s.failures.push([t, "body " + body]);
      setTimeout(once, 20);
    });
  });
  req.on("timeout", () => req.destroy(new Error("timeout")));
  req.on("error", (e) => { s.failures.push([t, e.code || e.message]); setTimeout(once, 20); });
}
once();
http.createServer((q, r) => r.end(JSON.stringify(s))).listen(8080, process.env.SETPOINT_POD_IP);
`;

interface ClientStats {
  host: string;
  port: number;
  requests: number;
  failures: [number, string][];
  byPod: Record<string, number>;
}

const children: ChildProcess[] = [];
let up: SetpointProcess | undefined;

/** Pids of the processes whose environment says they are Pods of this test's range. */
function podProcesses(): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const env = readFileSync(`/proc/${name}/environ`, "utf8");
      if (env.split("\0").some((v) => v.startsWith(`SETPOINT_POD_IP=127.${RANGE}.`))) {
        out.push(Number(name));
      }
    } catch {}
  }
  return out;
}

interface AgentProcess {
  child: ChildProcess;
  endpoint: string;
  output: () => string;
}

async function startAgent(kubeconfig: string, dataDir: string, imageDir: string) {
  const child = spawn(
    process.execPath,
    [
      SETPOINT_BIN,
      "agent",
      "--kubeconfig",
      kubeconfig,
      "--node-name",
      NODE,
      "--data-dir",
      dataDir,
      "--image-dir",
      imageDir,
      "--pod-range",
      String(RANGE),
      "--secure-listen",
      "127.0.0.1:0",
      "--log-format",
      "json",
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  children.push(child);
  let out = "";
  child.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const endpoint = await eventually(
    "the agent to start",
    () =>
      /endpoint (http:\/\/\S+)/.exec(out)?.[1] ?? (child.exitCode !== null ? "exited" : undefined),
    30_000,
  );
  if (endpoint === "exited") throw new Error(`the agent exited:\n${out}`);
  return { child, endpoint, output: () => out } satisfies AgentProcess;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
  await exited;
  clearTimeout(timer);
}

async function text(url: string): Promise<string | undefined> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    return await res.text();
  } catch {
    return undefined;
  }
}

/** Whether something accepts a TCP connection at host:port. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

afterAll(async () => {
  for (const c of children) await stopChild(c);
  // The agents were stopped as an operator would: their proxy (as their Pods) runs on.
  await stopServiceProxies();
  await up?.stop();
  for (const pid of podProcesses()) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {}
  }
  removeTempDirs();
});

function webPod(name: string): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default", labels: { app: "web" } },
    spec: {
      nodeName: NODE,
      containers: [
        {
          name: "web",
          image: "hello:1.0",
          ports: [{ name: "http", containerPort: 8080 }],
          readinessProbe: { httpGet: { path: "/healthz", port: 8080 }, periodSeconds: 1 },
        },
      ],
    },
  } as Pod;
}

describe("the service proxy", () => {
  it("forwards a Pod's connections to a cluster IP through an apiserver outage and an agent restart", async () => {
    expect(podProcesses()).toEqual([]);
    const upDir = tempDir("setpoint-svcproxy-up-");
    const agentDir = tempDir("setpoint-svcproxy-agent-");
    const imageDir = testImageStore().root;
    up = await startSetpoint(["--data-dir", upDir]);
    const kubeconfig = up.kubeconfig;
    let agent = await startAgent(kubeconfig, agentDir, imageDir);
    const client = new Client(loadKubeconfig({ path: kubeconfig }));
    try {
      for (const name of ["web-a", "web-b"]) await client.create(webPod(name));
      const svc = await client.create<Service>({
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "web", namespace: "default" },
        spec: {
          type: "NodePort",
          selector: { app: "web" },
          ports: [{ name: "http", port: 8080, targetPort: "http" }],
        },
      } as Service);
      const headless = await client.create<Service>({
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "web-headless", namespace: "default" },
        spec: { clusterIP: "None", selector: { app: "web" }, ports: [{ port: 8080 }] },
      } as Service);
      expect(headless.spec?.clusterIP).toBe("None");
      const clusterIP = svc.spec?.clusterIP ?? "";
      const nodePort = svc.spec?.ports?.[0]?.nodePort ?? 0;
      expect(clusterIP).toMatch(/^127\.100\./);
      await eventually(
        "two ready endpoints",
        async () => {
          const slices = await client.list<EndpointSlice>(SLICE, {
            namespace: "default",
            labelSelector: "kubernetes.io/service-name=web",
          });
          return (
            slices.items.flatMap((s) => s.endpoints ?? []).filter((e) => e.conditions?.ready)
              .length === 2
          );
        },
        30_000,
      );

      // The proxy process (started by the agent) serves the cluster IP.
      await eventually("the cluster IP served", () => accepts(clusterIP, 8080), 30_000, 50);
      // The client Pod, made after the Service: its environment names it.
      await client.create({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "client", namespace: "default" },
        spec: {
          nodeName: NODE,
          containers: [{ name: "client", image: "shell:1", command: ["node", "-e", CLIENT] }],
        },
      } as Pod);
      const clientIP = await eventually(
        "the client's address",
        async () => (await client.get<Pod>(POD, "client", "default")).status?.podIP,
        30_000,
      );
      const stats = async () => {
        const t = await text(`http://${clientIP}:8080/`);
        return t ? (JSON.parse(t) as ClientStats) : undefined;
      };
      const first = await eventually(
        "the client reaching both backends",
        async () => {
          const s = await stats();
          return s && Object.keys(s.byPod).length === 2 ? s : undefined;
        },
        30_000,
      );
      expect(first.host).toBe(clusterIP);
      expect(first.port).toBe(8080);
      expect(first.failures).toEqual([]);
      expect(await text(`http://127.0.0.1:${nodePort}/`)).toMatch(/^hello from web-[ab] /);
      // Headless: no address to listen on. A cluster IP's other ports: nothing there.
      expect(await accepts(clusterIP, 8081)).toBe(false);

      // 1. The apiserver dies.
      await up.stop("SIGKILL");
      await new Promise((r) => setTimeout(r, HOLD_MS));

      // 2. A backend's process dies: its endpoint refuses until the agent restarts it.
      const pods = (await (await fetch(`${agent.endpoint}/pods`)).json()) as {
        name: string;
        containers: { pid?: number }[];
      }[];
      const victim = pods.find((p) => p.name === "web-b")?.containers[0]?.pid ?? 0;
      expect(victim).toBeGreaterThan(0);
      const killAt = Date.now();
      process.kill(-victim, "SIGKILL");
      await new Promise((r) => setTimeout(r, HOLD_MS));

      // 3. The agent restarts, the apiserver still gone.
      const stopAt = Date.now();
      await stopChild(agent.child);
      agent = await startAgent(kubeconfig, agentDir, imageDir);
      await eventually("the cluster IP served again", () => accepts(clusterIP, 8080), 15_000, 10);
      const backAt = Date.now();
      // Its log is written asynchronously: the line may follow the endpoint's.
      await eventually(
        "the restarted agent adopting the proxy",
        () => /adopted the running service proxy/.test(agent.output()),
        10_000,
      );
      expect(serviceProxyProcesses([agentDir])).toHaveLength(1);
      await new Promise((r) => setTimeout(r, HOLD_MS));
      expect(await text(`http://${clusterIP}:8080/`)).toMatch(/^hello from web-[ab] /);
      expect(await text(`http://127.0.0.1:${nodePort}/`)).toMatch(/^hello from web-[ab] /);

      const last = await stats();
      expect(last).toBeDefined();
      // A request in flight to the killed backend is cut (an L4 proxy cannot
      // replay it); every other connect must find a backend.
      const atKill = last!.failures.filter(([t]) => t >= killAt - 100 && t <= killAt + 100);
      expect(atKill.length).toBeLessThanOrEqual(1);
      // The proxy process outlives the agent: nothing fails during its restart either.
      const outside = last!.failures.filter((f) => f[0] < stopAt || f[0] > backAt);
      const inside = last!.failures.filter((f) => f[0] >= stopAt && f[0] <= backAt);
      const failed = last!.failures.filter((f) => !atKill.includes(f));
      process.stdout.write(
        `service proxy outage: ${last!.requests} requests through ${clusterIP}:8080, ` +
          `${outside.length} failed outside the agent restart, ${inside.length} during its ${backAt - stopAt} ms, ` +
          `${atKill.length} in flight when a backend was killed\n`,
      );
      expect(
        failed.map(
          ([t, e]) =>
            `${e} at kill${t - killAt >= 0 ? "+" : ""}${t - killAt} ms, stop${t - stopAt >= 0 ? "+" : ""}${t - stopAt} ms`,
        ),
      ).toEqual([]);
      expect(last!.requests - first.requests).toBeGreaterThan(20);
    } finally {
      client.close();
    }
  }, 120_000);
});
