/**
 * `kubectl exec` through the apiserver to the agent, with real processes: a real
 * `setpoint up`, a real `setpoint agent`, Pods running `sh`, and the real kubectl
 * 1.32 (which speaks WebSockets, `v5.channel.k8s.io`). Covered: output and the
 * exit code (`command terminated with exit code 3`), the container's environment
 * and working directory, stdin piped with `-i` (closed at its end), a terminal
 * with `-it` (kubectl itself run in a pseudo-terminal made with `script`), `-c`
 * for a Pod of two containers, a command that cannot be found, RBAC (`get` and
 * `create` on `pods/exec` for a WebSocket, 403 before), and the agent's
 * endpoint refusing a caller without the apiserver's certificate.
 */
import { spawn } from "node:child_process";
import { request } from "node:https";
import type { Node, Pod } from "@setpoint/api";
import { type Client, loadKubeconfig } from "@setpoint/runtime";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Kubectl } from "../e2e/helpers/kubectl.ts";
import type { SetpointProcess } from "../e2e/helpers/setpoint.ts";
import type { AgentProcess } from "./agent-process.ts";
import { eventually } from "./helpers.ts";
import { letReadPods, startUpWithAgent, stopUpWithAgent } from "./up-with-agent.ts";

const RANGE = 89;
const NODE = "exec-node";
const POD = { apiVersion: "v1", kind: "Pod" } as const;
const NODES = { apiVersion: "v1", kind: "Node" } as const;

let up: SetpointProcess | undefined;
let agent: AgentProcess | undefined;
let client: Client | undefined;
let kubectl: Kubectl | undefined;

function pod(name: string, containers: { name: string; cmd: string }[]): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default" },
    spec: {
      nodeName: NODE,
      containers: containers.map((c) => ({
        name: c.name,
        image: "shell:1",
        command: ["sh", "-c", c.cmd],
        env: [{ name: "GREETING", value: `hello from ${c.name}` }],
      })),
    },
  } as Pod;
}

async function podStatus(name: string): Promise<Pod["status"]> {
  return (await client!.get<Pod>(POD, name, "default")).status;
}

/** Runs `command` (a shell line) in a pseudo-terminal of its own, as a user at a terminal. */
function inTerminal(
  command: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; out: string }> {
  return new Promise((done) => {
    const child = spawn("script", ["-q", "-e", "-c", command, "/dev/null"], {
      env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      out += d.toString();
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      done({ code, out });
    });
  });
}

beforeAll(async () => {
  ({ up, agent, client, kubectl } = await startUpWithAgent({
    prefix: "setpoint-exec-",
    nodeName: NODE,
    range: RANGE,
    tokens: ["runner-token,runner,uid-runner"],
  }));
  await client!.create<Pod>(pod("one", [{ name: "main", cmd: "exec sleep 3600" }]));
  await client!.create<Pod>(
    pod("two", [
      { name: "a", cmd: "exec sleep 3600" },
      { name: "b", cmd: "exec sleep 3600" },
    ]),
  );
  await eventually(
    "the Pods running",
    async () =>
      (await podStatus("one"))?.phase === "Running" &&
      (await podStatus("two"))?.phase === "Running",
    30_000,
  );
}, 90_000);

afterAll(async () => {
  await stopUpWithAgent({ up, agent, client, kubectl }, RANGE);
});

it("runs a command in the container and reports its exit code", async () => {
  const r = await kubectl!.run(["exec", "one", "--", "sh", "-c", "echo $HOSTNAME; exit 3"]);
  expect(r.stdout).toBe("one\n");
  expect(r.stderr).toContain("command terminated with exit code 3");
  expect(r.code).toBe(3);
  const ok = await kubectl!.run([
    "exec",
    "one",
    "--",
    "sh",
    "-c",
    'echo "$GREETING"; echo err >&2',
  ]);
  expect(ok).toMatchObject({ code: 0, stdout: "hello from main\n", stderr: "err\n" });
  // The working directory is the container's (the image's directory here).
  const pwd = await kubectl!.ok(["exec", "one", "--", "sh", "-c", "pwd; ls"]);
  expect(pwd).toContain("setpoint-image.json");
});

it("pipes stdin with -i and ends it when kubectl's input ends", async () => {
  const r = await kubectl!.run(["exec", "-i", "one", "--", "sh", "-c", "tr a-z A-Z; echo done"], {
    input: "line one\nline two\n",
  });
  expect(r).toMatchObject({ code: 0, stdout: "LINE ONE\nLINE TWO\ndone\n" });
});

it("gives the command a terminal with -it", async () => {
  const env = { ...process.env, HOME: kubectl!.home, KUBECONFIG: up!.kubeconfig };
  const r = await inTerminal(
    "kubectl exec -it one -- sh -c 'tty; test -t 0 && echo interactive; exit 4'",
    env,
  );
  expect(r.out).toMatch(/\/dev\/pts\/\d+/);
  expect(r.out).toContain("interactive");
  expect(r.code).toBe(4);
});

it("picks the container named with -c, and refuses as Kubernetes does", async () => {
  expect(await kubectl!.ok(["exec", "two", "-c", "b", "--", "sh", "-c", 'echo "$GREETING"'])).toBe(
    "hello from b\n",
  );
  const missing = await kubectl!.fails(["exec", "one", "--", "no-such-command"]);
  expect(missing.stderr).toContain('exec: "no-such-command": executable file not found in $PATH');
  const unknownPod = await kubectl!.fails(["exec", "nope", "--", "true"]);
  expect(unknownPod.stderr).toContain('pods "nope" not found');
});

it("authorizes pods/exec with RBAC: get and create for a WebSocket", async () => {
  const k = kubectl!;
  const as = ["--token=runner-token"];
  await letReadPods(k, "runner", "runner-token", "one");
  const denied = await k.fails([...as, "exec", "one", "--", "echo", "hi"]);
  expect(denied.stderr).toContain(
    'User "runner" cannot create resource "pods/exec" in API group "" in the namespace "default"',
  );
  // get alone lets the WebSocket's GET through, but running a command needs create too.
  await k.ok(["create", "role", "exec-get", "--verb=get", "--resource=pods/exec"]);
  await k.ok(["create", "rolebinding", "exec-get", "--role=exec-get", "--user=runner"]);
  await eventually(
    "get on pods/exec granted",
    async () =>
      (await k.run([...as, "auth", "can-i", "get", "pods", "--subresource=exec"])).stdout ===
      "yes\n",
  );
  const getOnly = await k.fails([...as, "exec", "one", "--", "echo", "hi"]);
  expect(getOnly.stderr).toContain('cannot create resource "pods/exec"');
  await k.ok(["create", "role", "execer", "--verb=get", "--verb=create", "--resource=pods/exec"]);
  await k.ok(["create", "rolebinding", "execer", "--role=execer", "--user=runner"]);
  await eventually(
    "the runner allowed",
    async () => (await k.run([...as, "exec", "one", "--", "echo", "hi"])).stdout === "hi\n",
  );
});

it("lets only the apiserver open an exec on the agent", async () => {
  const node = await client!.get<Node>(NODES, NODE);
  const port = node.status?.daemonEndpoints?.kubeletEndpoint?.Port ?? 0;
  const upgrade = (as?: { cert: string; key: string }) =>
    new Promise<number>((done, fail) => {
      const req = request({
        host: "127.0.0.1",
        port,
        path: "/exec/default/one/main?command=id&output=1",
        rejectUnauthorized: false,
        headers: {
          connection: "Upgrade",
          upgrade: "websocket",
          "sec-websocket-version": "13",
          "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
          "sec-websocket-protocol": "v5.channel.k8s.io",
        },
        ...(as ?? {}),
      });
      req.on("upgrade", (_res, socket) => {
        socket.destroy();
        done(101);
      });
      req.on("response", (res) => {
        res.resume();
        done(res.statusCode ?? 0);
      });
      req.on("error", fail);
      req.end();
    });
  expect(await upgrade()).toBe(401);
  const admin = loadKubeconfig({ path: up!.kubeconfig, context: "setpoint-cert" });
  expect(await upgrade({ cert: String(admin.cert), key: String(admin.key) })).toBe(403);
});
