/**
 * THE DATA-PLANE OUTAGE TEST (issue 14 §4), with every part a real process: `setpoint
 * up` (apiserver and controllers, scheduler included), `setpoint agent` (its own
 * node, and the service proxy it starts), `setpoint gateway`, and a 3-replica
 * Deployment of the hello image behind a Service and an Ingress. Steady GETs go two
 * ways all along, counted and timed per phase: from the test through the gateway,
 * and from a client Pod through the Service's cluster IP (the HELLO_SERVICE_HOST and
 * _PORT the agent gave it, a new connection per request):
 * - before: everything up;
 * - during: `setpoint up` is SIGKILLed; one backend process is SIGKILLed (the agent
 *   restarts it from its state on disk); the gateway is replaced by a new process
 *   started from its table on disk (traffic moves to it, the old one drains on
 *   SIGTERM: one process cannot rebind a port another still holds); the agent is
 *   restarted (it adopts the running processes, the client Pod's too; the service
 *   proxy, a process of its own, serves on through it); the apiserver stays down for
 *   1 s per step, or 30 s in all with GATEWAY_DEPLOYMENT_OUTAGE_LONG=1;
 * - rollout: `setpoint up` is back on the same address and data; the Deployment's
 *   image goes from hello:1.0 to hello:2.0 under the load, until only 2.0 answers.
 * Every request (all idempotent) must succeed. The gateway replays a request whose
 * backend refused or died; an L4 proxy cannot, so the client Pod, as HTTP clients
 * do with an idempotent GET, sends it again once when its connection was cut or
 * refused, and the retries are counted apart. Prints sent, failed and p99 per phase
 * for both legs.
 */
import type { ChildProcess } from "node:child_process";
import { spawn } from "node:child_process";
import { Agent, request } from "node:http";
import type { Deployment, Ingress, Pod, Service } from "@setpoint/api";
import { Client, loadKubeconfig } from "@setpoint/runtime";
import { afterAll, expect, it } from "vitest";
import {
  type AgentProcess,
  agentPods,
  killPodProcesses,
  startAgentProcess,
  stopChild,
  stopServiceProxies,
} from "../agent/agent-process.ts";
import { eventually, httpText, removeTempDirs, tempDir, testImageStore } from "../agent/helpers.ts";
import { SETPOINT_BIN, type SetpointProcess, startSetpoint } from "../e2e/helpers/setpoint.ts";

const LONG = process.env.GATEWAY_DEPLOYMENT_OUTAGE_LONG === "1";
const STEP_MS = LONG ? 7_500 : 1_000;
const RANGE = 76;
const NODE = "gw-outage-node";
const HOST = "hello.outage.test";
const DEPLOYMENT = { apiVersion: "apps/v1", kind: "Deployment" } as const;
const POD = { apiVersion: "v1", kind: "Pod" } as const;

/**
 * The client Pod: GETs $HELLO_SERVICE_HOST:$HELLO_SERVICE_PORT in a loop, a new
 * connection each, sending a GET again once if the first attempt failed; records
 * [start ms, duration ms, attempts, error] per request; serves them on :8080.
 */
const CLIENT = `
const http = require("node:http");
const host = process.env.HELLO_SERVICE_HOST, port = Number(process.env.HELLO_SERVICE_PORT);
const s = { host, port, records: [], byPod: {} };
function attempt(cb) {
  const req = http.get({ host, port, path: "/", agent: false, timeout: 5000 }, (res) => {
    let body = "";
    res.on("data", (d) => (body += d));
    res.on("end", () => {
      const m = /hello from (\\S+) \\(version/.exec(body);
      if (res.statusCode === 200 && m) { s.byPod[m[1]] = (s.byPod[m[1]] || 0) + 1; cb(); }
      else cb(res.statusCode + " " + body.slice(0, 60));
    });
    res.on("error", (e) => cb(e.code || e.message));
  });
  req.on("timeout", () => req.destroy(new Error("timeout")));
  req.on("error", (e) => cb(e.code || e.message));
}
function once() {
  const t = Date.now(), p = performance.now();
  attempt((err) => {
    if (!err) { s.records.push([t, performance.now() - p, 1]); setTimeout(once, 20); return; }
    attempt((again) => {
      s.records.push(again ? [t, performance.now() - p, 2, err + "; " + again] : [t, performance.now() - p, 2]);
      setTimeout(once, 20);
    });
  });
}
once();
http.createServer((q, r) => r.end(JSON.stringify(s))).listen(8080, process.env.SETPOINT_POD_IP);
`;

interface ClientStats {
  host: string;
  port: number;
  /** Per request: its start (epoch ms), duration (ms), attempts (1 or 2), and the errors if both failed. */
  records: [number, number, number, string?][];
  byPod: Record<string, number>;
}

const children: ChildProcess[] = [];
let up: SetpointProcess | undefined;

afterAll(async () => {
  for (const c of children) await stopChild(c);
  await up?.stop();
  await stopServiceProxies();
  killPodProcesses(RANGE);
  removeTempDirs();
});

interface GatewayProcess {
  child: ChildProcess;
  address: string;
}

async function startGatewayProcess(kubeconfig: string, dataDir: string): Promise<GatewayProcess> {
  const child = spawn(
    process.execPath,
    [
      SETPOINT_BIN,
      "gateway",
      "--kubeconfig",
      kubeconfig,
      "--listen",
      "127.0.0.1:0",
      "--data-dir",
      dataDir,
      "--no-access-log",
      "--shutdown-grace",
      "5s",
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
  const address = await eventually(
    "the gateway to start",
    () => /http on (\S+?)[,;]/.exec(out)?.[1] ?? (child.exitCode !== null ? "exited" : undefined),
    30_000,
  );
  if (address === "exited") throw new Error(`the gateway exited:\n${out}`);
  return { child, address };
}

const keepAlive = new Agent({ keepAlive: true });

/** One GET through the gateway: the status and body, or status -1 when nothing answered. */
function get(addr: string): Promise<{ status: number; body: string }> {
  const i = addr.lastIndexOf(":");
  return new Promise((resolve) => {
    const req = request(
      {
        host: addr.slice(0, i),
        port: Number(addr.slice(i + 1)),
        path: "/",
        headers: { host: HOST },
        agent: keepAlive,
        timeout: 5_000,
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          body += c;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        res.on("error", () => resolve({ status: -1, body }));
      },
    );
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve({ status: -1, body: "" }));
    req.end();
  });
}

interface Phase {
  started: number;
  sent: number;
  failed: number;
  latencies: number[];
  versions: Map<string, number>;
  errors: string[];
}

const newPhase = (): Phase => ({
  started: Date.now(),
  sent: 0,
  failed: 0,
  latencies: [],
  versions: new Map(),
  errors: [],
});

function p99(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * 0.99))] ?? 0;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

it(
  `serves every request through the gateway to a Deployment while the control plane is gone, a backend dies, the gateway and the agent restart, and a new version rolls out (${LONG ? "long" : "short"})`,
  async () => {
    const upDir = tempDir("setpoint-gw-outage-up-");
    const agentDir = tempDir("setpoint-gw-outage-agent-");
    const gatewayDir = tempDir("setpoint-gw-outage-gateway-");
    const imageDir = testImageStore().root;
    const t0 = Date.now();
    up = await startSetpoint(["--data-dir", upDir]);
    const port = new URL(up.url).port;
    const kubeconfig = up.kubeconfig;
    const agentOpts = { kubeconfig, nodeName: NODE, dataDir: agentDir, imageDir, range: RANGE };
    let agent: AgentProcess = await startAgentProcess(agentOpts);
    children.push(agent.child);
    let gateway = await startGatewayProcess(kubeconfig, gatewayDir);
    const client = new Client(loadKubeconfig({ path: kubeconfig }));
    try {
      await client.create<Deployment>({
        ...DEPLOYMENT,
        metadata: { name: "hello", namespace: "default" },
        spec: {
          replicas: 3,
          selector: { matchLabels: { app: "hello" } },
          template: {
            metadata: { labels: { app: "hello" } },
            spec: {
              containers: [
                {
                  name: "web",
                  image: "hello:1.0",
                  ports: [{ name: "http", containerPort: 8080 }],
                  readinessProbe: { httpGet: { path: "/healthz", port: 8080 }, periodSeconds: 1 },
                },
              ],
            },
          },
        },
      });
      await client.create<Service>({
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "hello", namespace: "default" },
        spec: {
          selector: { app: "hello" },
          ports: [{ name: "http", port: 8080, targetPort: 8080 }],
        },
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
      // Three Pods answer through the gateway.
      const seen = new Set<string>();
      await eventually(
        "three hello 1.0 Pods through the gateway",
        async () => {
          const r = await get(gateway.address);
          const pod = /^hello from (\S+) \(version 1\.0\)/.exec(r.body)?.[1];
          if (r.status === 200 && pod) seen.add(pod);
          if (seen.size === 3) return true;
          // Not yet: what the gateway answered and where the Pods are, should it time out.
          const pods = await client.list<Pod>(POD, { namespace: "default" }).catch(() => undefined);
          const where = (pods?.items ?? []).map(
            (p) =>
              `${p.metadata.name} ${p.status?.phase ?? "-"}${p.spec?.nodeName ? "" : " unscheduled"} ${JSON.stringify(p.status?.containerStatuses?.[0]?.state ?? {})}`,
          );
          throw new Error(
            `${seen.size} seen; the gateway answered ${r.status} ${r.body.slice(0, 80).trim()}; Pods: ${where.join(", ") || "none"}`,
          );
        },
        90_000,
        250,
      );
      // The client Pod, made after the Service: its environment names the cluster IP.
      await client.create<Pod>({
        ...POD,
        metadata: { name: "client", namespace: "default" },
        spec: {
          nodeName: NODE,
          containers: [{ name: "client", image: "shell:1", command: ["node", "-e", CLIENT] }],
        },
      });
      const clientIP = await eventually(
        "the client Pod's address",
        async () => (await client.get<Pod>(POD, "client", "default")).status?.podIP,
        30_000,
      );
      const clientStats = async (): Promise<ClientStats | undefined> => {
        const t = await httpText(`http://${clientIP}:8080/`, 5_000);
        return t ? (JSON.parse(t) as ClientStats) : undefined;
      };
      const first = await eventually(
        "the client Pod reaching the three Pods through the cluster IP",
        async () => {
          const st = await clientStats();
          return st && Object.keys(st.byPod).length === 3 ? st : undefined;
        },
        30_000,
      );
      const svc = await client.get<Service>(
        { apiVersion: "v1", kind: "Service" },
        "hello",
        "default",
      );
      expect(first.host).toBe(svc.spec?.clusterIP);
      expect(first.port).toBe(8080);

      const setupMs = Date.now() - t0;
      const phases: Record<string, Phase> = { before: newPhase() };
      let phase = phases.before;
      let running = true;
      const worker = async () => {
        while (running) {
          const p = phase;
          const t = performance.now();
          const r = await get(gateway.address);
          p.latencies.push(performance.now() - t);
          p.sent++;
          const version = /\(version (\S+)\)/.exec(r.body)?.[1];
          if (r.status !== 200 || !version) {
            p.failed++;
            if (p.errors.length < 5) p.errors.push(`${r.status} ${r.body.slice(0, 80)}`);
          } else p.versions.set(version, (p.versions.get(version) ?? 0) + 1);
          await sleep(5);
        }
      };
      const workers = [worker(), worker(), worker(), worker()];
      try {
        await sleep(STEP_MS);

        // 1. The control plane dies.
        phase = phases.during = newPhase();
        const downAt = Date.now();
        await up.stop("SIGKILL");
        await sleep(STEP_MS);

        // 2. A backend process dies: the agent restarts it; the gateway retries and ejects.
        const victim = (await agentPods(agent.endpoint)).filter((p) => p.name !== "client")[1];
        const victimPid = victim.containers[0].pid ?? 0;
        process.kill(-victimPid, "SIGKILL");
        await eventually("the killed backend restarted", async () => {
          const p = (await agentPods(agent.endpoint)).find((x) => x.name === victim.name);
          const pid = p?.containers[0].pid;
          return pid && pid !== victimPid;
        });
        await sleep(STEP_MS);

        // 3. The gateway is replaced by a process started from its table on disk.
        const old = gateway;
        gateway = await startGatewayProcess(kubeconfig, gatewayDir);
        await stopChild(old.child);
        expect(old.child.exitCode).toBe(0);
        await sleep(STEP_MS);

        // 4. The agent restarts and adopts its Pods' processes.
        await stopChild(agent.child);
        agent = await startAgentProcess(agentOpts);
        children.push(agent.child);
        // Its log is written asynchronously: the line may follow the endpoint's.
        const restarted = agent;
        const account = await eventually(
          "the restarted agent's account of its Pods",
          () => /"adopted":\d+,"restarted":\d+/.exec(restarted.output())?.[0],
        );
        expect(account).toBe('"adopted":4,"restarted":0');
        await sleep(Math.max(STEP_MS, (LONG ? 30_000 : 0) - (Date.now() - downAt)));

        // 5. The control plane returns; a new version rolls out under the load.
        up = await startSetpoint(["--listen", `127.0.0.1:${port}`, "--data-dir", upDir]);
        phase = phases.rollout = newPhase();
        await eventually(
          "the Deployment's image set to hello:2.0",
          async () => {
            const d = await client.get<Deployment>(DEPLOYMENT, "hello", "default");
            const c = d.spec?.template.spec?.containers[0];
            if (!c) return false;
            c.image = "hello:2.0";
            await client.update(d);
            return true;
          },
          30_000,
        );
        await eventually(
          "only hello 2.0 answering",
          async () => {
            const d = await client.get<Deployment>(DEPLOYMENT, "hello", "default");
            const s = d.status;
            if (s?.updatedReplicas !== 3 || s.replicas !== 3 || s.availableReplicas !== 3) {
              return false;
            }
            for (let i = 0; i < 6; i++) {
              if (!(await get(gateway.address)).body.includes("(version 2.0)")) return false;
            }
            return true;
          },
          90_000,
          250,
        );
        await sleep(STEP_MS);
      } finally {
        running = false;
        await Promise.all(workers);
      }
      const finished = Date.now();
      const stats = await clientStats();
      expect(stats).toBeDefined();

      const order = Object.keys(phases);
      const ends: Record<string, number> = {};
      order.forEach((k, i) => {
        ends[k] = phases[order[i + 1]]?.started ?? finished;
      });
      const sent = Object.values(phases).reduce((n, p) => n + p.sent, 0);
      const failed = Object.values(phases).reduce((n, p) => n + p.failed, 0);
      const lines = Object.entries(phases).map(
        ([k, p]) =>
          `${k} (${((ends[k] - p.started) / 1000).toFixed(1)} s): ${p.sent} sent, ${p.failed} failed, p99 ${p99(p.latencies).toFixed(1)} ms, versions ${[...p.versions].map(([v, n]) => `${v}×${n}`).join(" ")}${p.errors.length ? `, e.g. ${p.errors.join(" | ")}` : ""}`,
      );
      // The client Pod's requests, by the phase they started in (one clock: this machine's).
      const podRecords = stats!.records.filter(([t]) => t >= phases.before.started && t < finished);
      const podLines = order.map((k) => {
        const rs = podRecords.filter(([t]) => t >= phases[k].started && t < ends[k]);
        const bad = rs.filter((r) => r[3] !== undefined);
        return `${k}: ${rs.length} sent, ${bad.length} failed, ${rs.filter((r) => r[2] > 1).length} retried, p99 ${p99(rs.map((r) => r[1])).toFixed(1)} ms${
          bad.length
            ? `, e.g. ${bad
                .slice(0, 3)
                .map((r) => r[3])
                .join(" | ")}`
            : ""
        }`;
      });
      const podFailed = podRecords.filter((r) => r[3] !== undefined);
      process.stdout.write(
        `gateway → Deployment outage (${LONG ? "long" : "short"}; set up in ${(setupMs / 1000).toFixed(1)} s): sent ${sent}, failed ${failed}\n  ${lines.join("\n  ")}\n` +
          `client Pod → cluster IP ${stats!.host}:${stats!.port}: sent ${podRecords.length}, failed ${podFailed.length}, retried ${podRecords.filter((r) => r[2] > 1).length}\n  ${podLines.join("\n  ")}\n`,
      );
      expect(phases.during.sent).toBeGreaterThan(0);
      expect(phases.rollout.versions.get("2.0")).toBeGreaterThan(0);
      expect(failed).toBe(0);
      expect(
        podRecords.filter(([t]) => t >= phases.during.started && t < ends.during).length,
      ).toBeGreaterThan(0);
      expect(podFailed.map((r) => `${r[3]} at +${r[0] - phases.before.started} ms`)).toEqual([]);
    } finally {
      client.close();
    }
  },
  LONG ? 330_000 : 240_000,
);
