/**
 * `kubectl logs` through the apiserver to the agent, with real processes: a real
 * `setpoint up` and a real `setpoint agent`, Pods running `sh`, and the real
 * kubectl. Covered: the only container's log, `-c`, `--tail`, `--limit-bytes`,
 * `--previous` after a restart (and refused before one), `-f` receiving lines as
 * they are written until the test ends it, `--timestamps` (the kubelet's nine
 * fraction digits), `--since` and `--since-time` from the times the log relay
 * records, logging that goes on while the agent restarts (the relay outlives it
 * and is adopted), Kubernetes' refusals (several containers and none named, an
 * unknown container), a Pod on no node (empty, as in Kubernetes), a node whose
 * agent cannot be reached (500), and the agent's endpoint refusing a caller
 * without the apiserver's certificate (401, 403 for another identity), and RBAC
 * on `pods/log`.
 */
import { readdirSync, readFileSync } from "node:fs";
import { request } from "node:https";
import { join } from "node:path";
import type { Node, Pod } from "@setpoint/api";
import { type Client, loadKubeconfig } from "@setpoint/runtime";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Kubectl } from "../e2e/helpers/kubectl.ts";
import type { SetpointProcess } from "../e2e/helpers/setpoint.ts";
import { type AgentProcess, startAgentProcess, stopChild } from "./agent-process.ts";
import { eventually, logRelayProcesses, tempDir } from "./helpers.ts";
import { startUpWithAgent, stopUpWithAgent } from "./up-with-agent.ts";

const RANGE = 87;
const NODE = "logs-node";
const POD = { apiVersion: "v1", kind: "Pod" } as const;
const NODES = { apiVersion: "v1", kind: "Node" } as const;

let up: SetpointProcess | undefined;
let agent: AgentProcess | undefined;
let client: Client | undefined;
let kubectl: Kubectl | undefined;
let markers = "";
let agentOptions: Parameters<typeof startAgentProcess>[0] | undefined;

function pod(name: string, containers: { name: string; cmd: string }[], node = NODE): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default" },
    spec: {
      ...(node ? { nodeName: node } : { schedulerName: "nobody" }),
      containers: containers.map((c) => ({
        name: c.name,
        image: "shell:1",
        command: ["sh", "-c", c.cmd],
      })),
    },
  } as Pod;
}

/** Open TCP connections to 127.0.0.1:`port` (from /proc/net/tcp). */
function connectionsTo(port: number): number {
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  return readFileSync("/proc/net/tcp", "utf8")
    .split("\n")
    .slice(1)
    .filter((line) => {
      const f = line.trim().split(/\s+/);
      return f[1] === local && f[3] === "01";
    }).length;
}

async function agentPort(): Promise<number> {
  const node = await client!.get<Node>(NODES, NODE);
  return node.status?.daemonEndpoints?.kubeletEndpoint?.Port ?? 0;
}

async function podStatus(name: string): Promise<Pod["status"]> {
  return (await client!.get<Pod>(POD, name, "default")).status;
}

/** GET on the agent's endpoint as `as` (no client certificate when undefined). */
function agentGet(
  port: number,
  path: string,
  as?: { cert: string; key: string },
): Promise<{ code: number; body: string }> {
  return new Promise((done, fail) => {
    const req = request(
      { host: "127.0.0.1", port, path, rejectUnauthorized: false, ...(as ?? {}) },
      (res) => {
        let body = "";
        res.on("data", (d: Buffer) => {
          body += d.toString();
        });
        res.on("end", () => done({ code: res.statusCode ?? 0, body }));
      },
    );
    req.on("error", fail);
    req.end();
  });
}

beforeAll(async () => {
  markers = tempDir("setpoint-logs-markers-");
  ({ up, agent, client, kubectl, agentOptions } = await startUpWithAgent({
    prefix: "setpoint-logs-",
    nodeName: NODE,
    range: RANGE,
    tokens: ["reader-token,reader,uid-reader"],
  }));
  // First crashes, then runs: started first, as its restart waits out the back-off (10 s).
  await client!.create<Pod>(
    pod("crash", [
      {
        name: "main",
        cmd: `if [ -f ${markers}/ran ]; then echo second run; exec sleep 3600; else touch ${markers}/ran; echo first run; exit 3; fi`,
      },
    ]),
  );
  await client!.create<Pod>(
    pod("two", [
      { name: "a", cmd: "echo a1; echo a2; echo a3; exec sleep 3600" },
      { name: "b", cmd: "echo b-line; exec sleep 3600" },
    ]),
  );
  await client!.create<Pod>(
    pod("ticker", [
      { name: "tick", cmd: "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.2; done" },
    ]),
  );
  await eventually(
    "the Pods running",
    async () =>
      (await podStatus("two"))?.phase === "Running" &&
      (await podStatus("ticker"))?.phase === "Running",
    30_000,
  );
}, 90_000);

afterAll(async () => {
  await stopUpWithAgent({ up, agent, client, kubectl }, RANGE);
});

it("serves a container's log through the apiserver, with -c, --tail and --limit-bytes", async () => {
  const k = kubectl!;
  await eventually(
    "a's lines",
    async () => (await k.ok(["logs", "two", "-c", "a"])) === "a1\na2\na3\n",
  );
  expect(await k.ok(["logs", "two", "-c", "b"])).toBe("b-line\n");
  expect(await k.ok(["logs", "two", "-c", "a", "--tail=1"])).toBe("a3\n");
  expect(await k.ok(["logs", "two", "-c", "a", "--tail=0"])).toBe("");
  expect(await k.ok(["logs", "two", "-c", "a", "--limit-bytes=4"])).toBe("a1\na");
  expect(await k.ok(["logs", "pod/two", "--container=a", "--tail=2"])).toBe("a2\na3\n");
});

it("refuses as Kubernetes does", async () => {
  const k = kubectl!;
  // kubectl picks the first container itself and says so; the server refuses to guess.
  const none = await k.run(["logs", "two"]);
  expect(none.stdout).toBe("a1\na2\na3\n");
  expect(none.stderr).toContain('Defaulted container "a" out of: a, b');
  const raw = await k.fails(["get", "--raw", "/api/v1/namespaces/default/pods/two/log"]);
  expect(raw.stderr).toContain(
    "a container name must be specified for pod two, choose one of: [a b]",
  );
  expect((await k.fails(["logs", "two", "-c", "nope"])).stderr).toContain(
    "container nope is not valid for pod two",
  );
  expect((await k.fails(["logs", "two", "-c", "a", "--previous"])).stderr).toContain(
    'previous terminated container "a" in pod "two" not found',
  );
  const invalid = await k.fails([
    "get",
    "--raw",
    "/api/v1/namespaces/default/pods/two/log?container=a&tailLines=-2",
  ]);
  expect(invalid.stderr).toContain("must be greater than or equal to 0");
  expect((await k.fails(["logs", "missing"])).stderr).toContain('pods "missing" not found');
});

it("answers an unscheduled Pod with nothing, and a node it cannot reach with a 500", async () => {
  const c = client!;
  await c.create<Pod>(pod("pending", [{ name: "main", cmd: "echo never" }], ""));
  expect(await kubectl!.ok(["get", "--raw", "/api/v1/namespaces/default/pods/pending/log"])).toBe(
    "",
  );
  const ghost = await c.create<Node>({
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: "ghost" },
  } as Node);
  await c.updateStatus<Node>({
    ...ghost,
    status: {
      addresses: [{ type: "InternalIP", address: "127.0.0.1" }],
      daemonEndpoints: { kubeletEndpoint: { Port: 1 } },
    },
  } as Node);
  await c.create<Pod>(pod("stranded", [{ name: "main", cmd: "echo never" }], "ghost"));
  const r = await kubectl!.fails(["logs", "stranded"]);
  expect(r.stderr).toContain(
    'Get "https://127.0.0.1:1/containerLogs/default/stranded/main": dial tcp 127.0.0.1:1: connect: connection refused',
  );
});

it("follows a log as it is written until the client goes", async () => {
  const k = kubectl!;
  const port = await agentPort();
  const follow = k.start(["logs", "-f", "ticker"]);
  const first = Number((await follow.waitFor(/tick (\d+)\n/))[1]);
  // Lines written after the request started arrive on the open stream.
  await follow.waitFor(new RegExp(`tick ${first + 5}\\n`), 15_000);
  expect(connectionsTo(port)).toBeGreaterThan(0);
  await follow.stop();
  expect(follow.stdout.startsWith("tick 0\n")).toBe(true);
  // The apiserver closed its stream from the agent once kubectl went.
  await eventually("the agent's connection closed", () => connectionsTo(port) === 0, 5_000);
});

const STAMPED = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.\d{9}Z (.*)$/;

it("serves --timestamps, --since and --since-time from the times the relay records", async () => {
  const k = kubectl!;
  const stamped = await eventually("a's three lines", async () => {
    const l = (await k.ok(["logs", "two", "-c", "a", "--timestamps"])).split("\n");
    return l.length === 4 ? l : undefined;
  });
  expect(stamped.pop()).toBe("");
  expect(stamped.map((l) => STAMPED.exec(l)?.[2])).toEqual(["a1", "a2", "a3"]);
  expect(await k.ok(["logs", "two", "-c", "a", "--since=1h"])).toBe("a1\na2\na3\n");
  expect(await k.ok(["logs", "two", "-c", "a", "--since-time=2099-01-01T00:00:00Z"])).toBe("");
  // The ticker's lines over more than one second: from a second on, exactly the lines stamped in or after it.
  const lines = await eventually("ticks in two seconds", async () => {
    const all = (await k.ok(["logs", "ticker", "--timestamps"])).trimEnd().split("\n");
    const seconds = new Set(all.map((l) => STAMPED.exec(l)?.[1]));
    return seconds.size >= 3 ? all : undefined;
  });
  const second = STAMPED.exec(lines[lines.length - 1])?.[1] ?? "";
  const since = await k.ok(["logs", "ticker", "--timestamps", `--since-time=${second}Z`]);
  const expected = lines.filter((l) => (STAMPED.exec(l)?.[1] ?? "") >= second);
  expect(since.trimEnd().split("\n").slice(0, expected.length)).toEqual(expected);
  expect(lines.length).toBeGreaterThan(expected.length);
  // --tail with --timestamps: the last lines, each stamped.
  const last = (await k.ok(["logs", "ticker", "--timestamps", "--tail=2"])).trimEnd().split("\n");
  expect(last).toHaveLength(2);
  for (const l of last) expect(l).toMatch(STAMPED);
}, 30_000);

it("keeps logging while the agent restarts: the log relay outlives it and is adopted", async () => {
  const k = kubectl!;
  const agentDir = agentOptions!.dataDir;
  const relays = logRelayProcesses([agentDir]);
  expect(relays).toHaveLength(1);
  const count = async () => (await k.ok(["logs", "ticker"])).trimEnd().split("\n").length;
  const before = await count();
  await stopChild(agent!.child);
  // The ticker goes on writing through the relay while no agent runs.
  const file = join(agentDir, "pods");
  const ticks = () => {
    const pod = readdirSync(file).find((n) => n.startsWith("default_ticker_"));
    return pod ? readFileSync(join(file, pod, "tick", "0.log"), "utf8").split("\n").length - 1 : 0;
  };
  const offline = ticks();
  await eventually("lines written while no agent runs", () => ticks() >= offline + 5);
  agent = await startAgentProcess(agentOptions!);
  expect(logRelayProcesses([agentDir])).toEqual(relays);
  const after = await eventually("the log served again", async () => {
    const text = await k.ok(["logs", "ticker"]).catch(() => "");
    return text.split("\n").length > before + 5 ? text : undefined;
  });
  // Every tick, in order, none missing.
  const numbers = after
    .trimEnd()
    .split("\n")
    .map((l) => Number(/^tick (\d+)$/.exec(l)?.[1]));
  expect(numbers).toEqual(numbers.map((_, i) => i));
}, 60_000);

it("serves --previous after a restart", async () => {
  const k = kubectl!;
  await eventually(
    "the crashed container restarted",
    async () => {
      const s = await podStatus("crash");
      const c = s?.containerStatuses?.[0];
      return c?.restartCount === 1 && c.state?.running ? c : undefined;
    },
    40_000,
    250,
  );
  await eventually(
    "the second run's line",
    async () => (await k.ok(["logs", "crash"])) === "second run\n",
  );
  expect(await k.ok(["logs", "crash", "--previous"])).toBe("first run\n");
}, 60_000);

it("authorizes pods/log with RBAC", async () => {
  const k = kubectl!;
  const raw = ["--token=reader-token", "get", "--raw"];
  const path = "/api/v1/namespaces/default/pods/two/log?container=b";
  expect((await k.fails([...raw, path])).stderr).toContain(
    'User "reader" cannot get resource "pods/log" in API group "" in the namespace "default"',
  );
  await k.ok(["create", "role", "log-reader", "--verb=get", "--resource=pods/log"]);
  await k.ok(["create", "rolebinding", "log-reader", "--role=log-reader", "--user=reader"]);
  await eventually("the reader allowed", async () => (await k.ok([...raw, path])) === "b-line\n");
});

it("lets only the apiserver read logs straight from the agent", async () => {
  const node = await client!.get<Node>(NODES, NODE);
  const port = node.status?.daemonEndpoints?.kubeletEndpoint?.Port ?? 0;
  expect(port).toBeGreaterThan(0);
  expect(node.status?.addresses).toEqual(
    expect.arrayContaining([{ type: "InternalIP", address: "127.0.0.1" }]),
  );
  const path = "/containerLogs/default/two/a";
  const anonymous = await agentGet(port, path);
  expect(anonymous.code).toBe(401);
  expect(anonymous.body).not.toContain("a1");
  // A certificate the cluster CA signed, but not the apiserver's: forbidden.
  const admin = loadKubeconfig({ path: up!.kubeconfig, context: "setpoint-cert" });
  const asAdmin = await agentGet(port, path, {
    cert: String(admin.cert),
    key: String(admin.key),
  });
  expect(asAdmin.code).toBe(403);
  expect(asAdmin.body).toContain("Forbidden (user=admin");
});
