/**
 * The WebApp walkthrough (README.md) with real processes, command by command:
 * `setpoint up --no-agent --no-gateway` (apiserver and controllers),
 * `setpoint agent` and `setpoint gateway` as their own processes, the WebApp
 * controller as its own process (main.ts --install-crd), and kubectl and curl:
 * - a WebApp applied, `kubectl wait` on observedGeneration and Ready, the app
 *   fetched through the gateway;
 * - a new image rolled out while a client requests through the gateway all
 *   along;
 * - a hand edit warned about and set back;
 * - the outage chapter: the controller and `setpoint up` stopped (the latter
 *   SIGKILLed), the app still served; a replica's process SIGKILLed and
 *   restarted by the agent; the gateway replaced by a new process serving its
 *   table from disk; the agent restarted, adopting the running replicas; then
 *   the control plane back on the same address and data, `kubectl wait` again,
 *   and the restart the agent made alone recorded in the Pod. Each step lasts
 *   1 s, or 7.5 s (30 s without the control plane) with WEBAPP_OUTAGE_LONG=1;
 * - the WebApp deleted with everything it owned.
 * Every request of the client loops must succeed; the counts are printed per phase.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { Agent as HttpAgent, request } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { webhookCertificate } from "setpoint/testenv";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AgentProcess,
  type AgentProcessOptions,
  killPodProcesses,
  type PodSummary,
  startAgentProcess,
  stopChild,
} from "../../test/agent/agent-process.ts";
import {
  SETPOINT_BIN,
  type SetpointProcess,
  startSetpoint,
} from "../../test/e2e/helpers/setpoint.ts";
import { eventually, sleep } from "../../test/helpers/poll.ts";

const ROOT = resolve(import.meta.dirname, "../..");
/** The second octet of the Pods' addresses (127.91.x.y): this test's own range. */
const RANGE = 91;
const NODE = "webapp-walkthrough";
const HOST = "shop.example";
/** The outage chapter's pause after each step: 1 s, or 7.5 s (30 s down in all) with WEBAPP_OUTAGE_LONG=1. */
const LONG = process.env.WEBAPP_OUTAGE_LONG === "1";
const STEP_MS = LONG ? 7_500 : 1_000;

const dir = mkdtempSync(join(tmpdir(), "setpoint-webapp-walkthrough-"));
const upDir = join(dir, "setpoint");
const agentDir = join(dir, "agent");
const gatewayDir = join(dir, "gateway");
const certDir = join(dir, "webhook-certs");
const children: ChildProcess[] = [];
let up: SetpointProcess | undefined;
let agent: AgentProcess | undefined;
let gateway: GatewayProcess | undefined;
let controller: ControllerProcess | undefined;
let load: Load | undefined;

interface Run {
  code: number;
  out: string;
  err: string;
}

function run(file: string, args: string[], stdin = ""): Promise<Run> {
  return new Promise((done) => {
    const child = execFile(
      file,
      args,
      {
        env: {
          PATH: process.env.PATH ?? "",
          HOME: join(dir, "home"),
          KUBECONFIG: up?.kubeconfig ?? "",
        },
        timeout: 120_000,
      },
      (err, out, errOut) => {
        done({
          code: err ? (typeof err.code === "number" ? err.code : 1) : 0,
          out: String(out),
          err: String(errOut),
        });
      },
    );
    // A command that exits before reading its input (kubectl with no server) closes the pipe.
    child.stdin?.on("error", () => {});
    child.stdin?.end(stdin);
  });
}

const kubectl = (args: string[], stdin = "") => run("/usr/bin/kubectl", args, stdin);
/** `curl -sS -H 'Host: shop.example' http://GATEWAY/` */
const curl = () =>
  run("/usr/bin/curl", ["-sS", "-H", `Host: ${HOST}`, `http://${gateway?.address}/`]);

/** `setpoint agent --node-name webapp-walkthrough --data-dir DIR --pod-range 91` */
function agentOptions(): AgentProcessOptions {
  return {
    kubeconfig: up?.kubeconfig ?? "",
    nodeName: NODE,
    dataDir: agentDir,
    imageDir: join(agentDir, "images"),
    range: RANGE,
  };
}

interface GatewayProcess {
  child: ChildProcess;
  address: string;
}

/** `setpoint gateway --listen 127.0.0.1:0 --data-dir DIR`, once it prints where it serves. */
async function startGateway(): Promise<GatewayProcess> {
  const child = spawn(
    process.execPath,
    [
      SETPOINT_BIN,
      "gateway",
      "--kubeconfig",
      up?.kubeconfig ?? "",
      "--listen",
      "127.0.0.1:0",
      "--data-dir",
      gatewayDir,
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
  const collect = (d: Buffer) => {
    out += d.toString();
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  const address = await eventually(
    () => /http on (\S+?)[,;]/.exec(out)?.[1] ?? (child.exitCode !== null ? "exited" : undefined),
    "the gateway to start",
    30_000,
  );
  if (address === "exited") throw new Error(`the gateway exited:\n${out}`);
  return { child, address };
}

interface ControllerProcess {
  child: ChildProcess;
  output: () => string;
}

/**
 * `node --import tsx examples/webapp/main.ts --install-crd --webhook-listen
 * 127.0.0.1:0 --webhook-cert-dir DIR` (it registers its webhook at the port it got).
 */
function startController(): ControllerProcess {
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      join(ROOT, "examples/webapp/main.ts"),
      "--kubeconfig",
      up?.kubeconfig ?? "",
      "--install-crd",
      "--webhook-listen",
      "127.0.0.1:0",
      "--webhook-cert-dir",
      certDir,
    ],
    { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] },
  );
  children.push(child);
  let out = "";
  const collect = (d: Buffer) => {
    out += d.toString();
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  return { child, output: () => out };
}

interface Phase {
  name: string;
  started: number;
  ended?: number;
  sent: number;
  failed: number;
  versions: Map<string, number>;
  errors: string[];
}

/**
 * A client requesting the app through the gateway all along (a few concurrent
 * loops, keep-alive connections), counting requests, failures and the versions
 * that answered, per phase. `target` is the gateway's address; it may be moved.
 */
class Load {
  readonly phases: Phase[] = [];
  private running = true;
  private readonly workers: Promise<void>[];
  private readonly agent = new HttpAgent({ keepAlive: true });

  constructor(
    public target: string,
    phase: string,
    concurrency = 3,
  ) {
    this.phase(phase);
    this.workers = Array.from({ length: concurrency }, () => this.work());
  }

  /** Starts counting into a new phase. */
  phase(name: string): void {
    const now = Date.now();
    const last = this.phases.at(-1);
    if (last) last.ended = now;
    this.phases.push({
      name,
      started: now,
      sent: 0,
      failed: 0,
      versions: new Map(),
      errors: [],
    });
  }

  /** Stops the loops and returns the report. */
  async stop(): Promise<string> {
    if (this.running) {
      this.running = false;
      await Promise.all(this.workers);
      const last = this.phases.at(-1);
      if (last) last.ended = Date.now();
      this.agent.destroy();
    }
    return this.report();
  }

  get sent(): number {
    return this.phases.reduce((n, p) => n + p.sent, 0);
  }

  get failed(): number {
    return this.phases.reduce((n, p) => n + p.failed, 0);
  }

  report(): string {
    const lines = this.phases.map(
      (p) =>
        `${p.name} (${(((p.ended ?? Date.now()) - p.started) / 1000).toFixed(1)} s): ${p.sent} requests, ${p.failed} failed, versions ${[...p.versions].map(([v, n]) => `${v}×${n}`).join(" ")}${p.errors.length ? `; e.g. ${p.errors.join(" | ")}` : ""}`,
    );
    return `requests through the gateway: ${this.sent}, failed: ${this.failed}\n  ${lines.join("\n  ")}`;
  }

  private async work(): Promise<void> {
    while (this.running) {
      const p = this.phases.at(-1) as Phase;
      const r = await this.get();
      p.sent++;
      const version = /^hello from \S+ \(version (\S+)\)/.exec(r.body)?.[1];
      if (r.status !== 200 || !version) {
        p.failed++;
        if (p.errors.length < 5) p.errors.push(`${r.status} ${r.body.slice(0, 80)}`);
      } else p.versions.set(version, (p.versions.get(version) ?? 0) + 1);
      await sleep(20);
    }
  }

  /** One GET: the status and body, or status -1 and the error when nothing answered. */
  private get(): Promise<{ status: number; body: string }> {
    const i = this.target.lastIndexOf(":");
    return new Promise((done) => {
      const req = request(
        {
          host: this.target.slice(0, i),
          port: Number(this.target.slice(i + 1)),
          path: "/",
          headers: { host: HOST },
          agent: this.agent,
          timeout: 5_000,
        },
        (res) => {
          let body = "";
          res.setEncoding("utf8");
          res.on("data", (c: string) => {
            body += c;
          });
          res.on("end", () => done({ status: res.statusCode ?? 0, body }));
          res.on("error", (e) => done({ status: -1, body: String(e) }));
        },
      );
      req.on("timeout", () => req.destroy(new Error("timed out")));
      req.on("error", (e) => done({ status: -1, body: String(e) }));
      req.end();
    });
  }
}

/** `kubectl get webapp shop -o jsonpath=...` */
async function webapp(jsonpath: string): Promise<string> {
  return (await kubectl(["get", "webapp", "shop", "-o", `jsonpath=${jsonpath}`])).out;
}

/**
 * Rolled out: `kubectl wait` until the status is about the current generation,
 * then until Ready is True.
 */
async function waitRolledOut(): Promise<void> {
  const generation = await webapp("{.metadata.generation}");
  expect(generation).toMatch(/^\d+$/);
  const observed = await kubectl([
    "wait",
    "webapp/shop",
    `--for=jsonpath={.status.observedGeneration}=${generation}`,
    "--timeout=90s",
  ]);
  expect(observed.code, observed.err + controller?.output()).toBe(0);
  const ready = await kubectl(["wait", "webapp/shop", "--for=condition=Ready", "--timeout=90s"]);
  expect(ready.code, ready.err + controller?.output()).toBe(0);
}

const WEBAPP = `apiVersion: examples.setpoint.dev/v1alpha1
kind: WebApp
metadata:
  name: shop
  namespace: default
spec:
  image: hello:1.0
  replicas: 2
  host: shop.example
`;

beforeAll(async () => {
  mkdirSync(join(dir, "home"));
  // The webhook's serving certificate (tls.crt, tls.key) and the CA that signed it (ca.crt).
  const tls = await webhookCertificate();
  mkdirSync(certDir);
  writeFileSync(join(certDir, "tls.crt"), tls.cert);
  writeFileSync(join(certDir, "tls.key"), tls.key);
  writeFileSync(join(certDir, "ca.crt"), Buffer.from(tls.caBundle, "base64"));
  up = await startSetpoint(["--data-dir", upDir]);
  agent = await startAgentProcess(agentOptions());
  children.push(agent.child);
  gateway = await startGateway();
  controller = startController();
}, 90_000);

afterAll(async () => {
  await load?.stop();
  for (const c of children) await stopChild(c);
  await up?.stop();
  killPodProcesses(RANGE);
  rmSync(dir, { recursive: true, force: true });
});

describe("the WebApp walkthrough", () => {
  it("installs the CRD, applies a WebApp, waits until it is rolled out, serves it through the gateway", async () => {
    await eventually(
      async () =>
        (await kubectl(["get", "crd", "webapps.examples.setpoint.dev"])).code === 0 || undefined,
      `the CRD (controller: ${controller?.output()})`,
      30_000,
    );
    const applied = await kubectl(["apply", "-f", "-"], WEBAPP);
    expect(applied.code, applied.err).toBe(0);
    expect(applied.out).toContain("webapp.examples.setpoint.dev/shop created");
    await waitRolledOut();
    const row = await kubectl(["get", "webapp", "shop"]);
    expect(row.out).toMatch(
      /^NAME\s+IMAGE\s+READY\s+URL\s+STATUS\s+AGE\nshop\s+hello:1\.0\s+2\s+http:\/\/shop\.example\/\s+True\s+/,
    );
    // Ready means served: the gateway has the route and a replica answers.
    const reply = await eventually(
      async () => {
        const r = await curl();
        return r.code === 0 && r.out.startsWith("hello from") ? r : undefined;
      },
      "the app through the gateway",
      30_000,
    );
    expect(reply.out).toMatch(/^hello from shop-\S+ \(version 1\.0\)\n$/);
  }, 150_000);

  it("refuses, at admission, a second WebApp with the same host and path (the controller's webhook)", async () => {
    const second = (path: string) => `apiVersion: examples.setpoint.dev/v1alpha1
kind: WebApp
metadata:
  name: shop-copy
  namespace: default
spec:
  image: hello:1.0
  host: shop.example
  path: ${path}
`;
    const refused = await kubectl(["apply", "-f", "-"], second("/"));
    expect(refused.code).not.toBe(0);
    expect(refused.err.trim()).toBe(
      'Error from server (Forbidden): error when creating "STDIN": admission webhook "routes.webapps.examples.setpoint.dev" denied the request: host shop.example and path / are already served by WebApp default/shop; a WebApp\'s host and path must be unique: choose another host or path',
    );
    expect((await kubectl(["get", "webapp", "shop-copy"])).code).not.toBe(0);
    // Another path on the same host is admitted (checked with a server-side dry run).
    const admitted = await kubectl(["apply", "--dry-run=server", "-f", "-"], second("/admin"));
    expect(admitted.code, admitted.err).toBe(0);
    expect(admitted.out).toContain(
      "webapp.examples.setpoint.dev/shop-copy created (server dry run)",
    );
  }, 60_000);

  it("rolls out a new image with no failed request through the gateway", async () => {
    load = new Load(gateway?.address ?? "", "before the change");
    await sleep(1_000);
    load.phase("rolling update");
    const patched = await kubectl([
      "patch",
      "webapp",
      "shop",
      "--type=merge",
      "-p",
      '{"spec":{"image":"hello:2.0"}}',
    ]);
    expect(patched.code, patched.err).toBe(0);
    await waitRolledOut();
    expect(await webapp("{.status.readyReplicas}")).toBe("2");
    // Rolled out: the new version answers, and only it.
    load.phase("rolled out");
    await eventually(
      async () => {
        for (let i = 0; i < 6; i++) {
          if (!/^hello from shop-\S+ \(version 2\.0\)\n$/.test((await curl()).out)) return false;
        }
        return true;
      },
      "only version 2.0 through the gateway",
      10_000,
    );
    await sleep(1_000);
    const report = await load.stop();
    process.stdout.write(`rolling update hello:1.0 → hello:2.0: ${report}\n`);
    const [before, rolling, after] = load.phases;
    expect(before.versions.get("1.0")).toBeGreaterThan(0);
    expect(rolling.sent).toBeGreaterThan(0);
    expect(after.versions.get("2.0")).toBeGreaterThan(0);
    expect(after.versions.get("1.0") ?? 0).toBe(0);
    expect(load.failed, report).toBe(0);
  }, 150_000);

  it("warns about a hand edit of a field the controller manages, and sets it back", async () => {
    const scaled = await kubectl(["scale", "deployment", "shop", "--replicas=5"]);
    expect(scaled.err).toContain(
      'Warning: Deployment default/shop is managed by its controller WebApp/shop (field manager "webapp-controller")',
    );
    await eventually(
      async () =>
        (await kubectl(["get", "deployment", "shop", "-o", "jsonpath={.spec.replicas}"])).out ===
          "2" || undefined,
      "replicas set back to 2",
      30_000,
    );
  }, 60_000);

  it(
    `keeps serving while the control plane is stopped: a replica killed and restarted, the agent and the gateway restarted; back, the status converges (${LONG ? "long" : "short"})`,
    async () => {
      const current = {
        up: up as SetpointProcess,
        agent: agent as AgentProcess,
        gateway: gateway as GatewayProcess,
      };
      load = new Load(current.gateway.address, "control plane up");
      await sleep(STEP_MS);

      // Stop the control plane: the WebApp controller, then setpoint up (killed, as in a crash).
      load.phase("control plane stopped");
      const downAt = Date.now();
      await stopChild(controller?.child as ChildProcess);
      const port = new URL(current.up.url).port;
      await current.up.stop("SIGKILL");
      const refused = await kubectl(["get", "webapp", "shop", "--request-timeout=2s"]);
      expect(refused.code).not.toBe(0);
      expect(await curl()).toMatchObject({
        code: 0,
        out: expect.stringMatching(/\(version 2\.0\)/),
      });
      await sleep(STEP_MS);

      // kill -9 one replica's process: the agent restarts it, alone.
      load.phase("a replica killed");
      const pods = async (): Promise<PodSummary[]> =>
        JSON.parse((await run("/usr/bin/curl", ["-sS", `${current.agent.endpoint}/pods`])).out);
      const [victim] = (await pods()).sort((a, b) => a.name.localeCompare(b.name));
      const victimPid = victim?.containers[0]?.pid ?? 0;
      expect(victimPid).toBeGreaterThan(0);
      process.kill(victimPid, "SIGKILL");
      await eventually(
        async () => {
          const c = (await pods()).find((p) => p.name === victim.name)?.containers[0];
          return c?.pid !== undefined && c.pid !== victimPid && c.restartCount === 1;
        },
        "the killed replica restarted by the agent",
        30_000,
      );
      await sleep(STEP_MS);

      // The gateway restarted: a new process serving its table from disk (the
      // client moves to it), the old one drains and exits.
      load.phase("gateway restarted");
      const oldGateway = current.gateway;
      current.gateway = await startGateway();
      gateway = current.gateway;
      load.target = current.gateway.address;
      await stopChild(oldGateway.child);
      expect(oldGateway.child.exitCode).toBe(0);
      expect(await curl()).toMatchObject({
        code: 0,
        out: expect.stringMatching(/\(version 2\.0\)/),
      });
      await sleep(STEP_MS);

      // The agent restarted: it adopts the running replicas.
      load.phase("agent restarted");
      await stopChild(current.agent.child);
      current.agent = await startAgentProcess(agentOptions());
      agent = current.agent;
      children.push(current.agent.child);
      // (Its log is written asynchronously: the line may follow the endpoint's.)
      const started = await eventually(
        () => /"adopted":\d+,"restarted":\d+/.exec(current.agent.output())?.[0],
        "the restarted agent's account of its Pods",
        10_000,
      );
      expect(started).toBe('"adopted":2,"restarted":0');
      await sleep(Math.max(STEP_MS, (LONG ? 30_000 : 0) - (Date.now() - downAt)));

      // The control plane back (same address and data), the controller with it:
      // the WebApp's status converges, and the restart the agent made alone is recorded.
      load.phase("control plane back");
      current.up = await startSetpoint(["--listen", `127.0.0.1:${port}`, "--data-dir", upDir]);
      up = current.up;
      controller = startController();
      await waitRolledOut();
      expect(await webapp("{.status.readyReplicas}")).toBe("2");
      await eventually(
        async () =>
          (
            await kubectl([
              "get",
              "pod",
              victim.name,
              "-o",
              "jsonpath={.status.containerStatuses[0].restartCount}",
            ])
          ).out === "1",
        "the replica's restart recorded in its Pod",
        30_000,
      );
      await sleep(STEP_MS);

      const finished = load;
      load = undefined;
      const report = await finished.stop();
      process.stdout.write(`outage (${LONG ? "long" : "short"}): ${report}\n`);
      for (const p of finished.phases) expect(p.sent, p.name).toBeGreaterThan(0);
      expect(finished.failed, report).toBe(0);
    },
    LONG ? 240_000 : 150_000,
  );

  it("deletes the WebApp, and everything it owned goes with it", async () => {
    const deleted = await kubectl(["delete", "webapp", "shop"]);
    expect(deleted.code, deleted.err).toBe(0);
    const gone = await kubectl([
      "wait",
      "deployment/shop",
      "service/shop",
      "ingress/shop",
      "--for=delete",
      "--timeout=60s",
    ]);
    expect(gone.code, gone.err).toBe(0);
  }, 90_000);
});
