/**
 * `kubectl attach` through the apiserver to the agent, with real processes: a
 * real `setpoint up`, a real `setpoint agent`, Pods running `sh`, and the real
 * kubectl 1.32 (a WebSocket in `v5.channel.k8s.io`, as for exec). Covered: the
 * output a running container writes after attaching (stdout and stderr each on
 * its own), `-i` writing to the stdin
 * of a container with `stdin: true` (which stays open between attaches), an
 * attach ending with kubectl's exit 0 when the container's run ends, and RBAC
 * (create on pods/attach).
 */
import type { Pod } from "@setpoint/api";
import type { Client } from "@setpoint/runtime";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Kubectl, RunningKubectl } from "../e2e/helpers/kubectl.ts";
import type { SetpointProcess } from "../e2e/helpers/setpoint.ts";
import type { AgentProcess } from "./agent-process.ts";
import { eventually } from "./helpers.ts";
import { letReadPods, startKubectl, startUpWithAgent, stopUpWithAgent } from "./up-with-agent.ts";

const RANGE = 93;
const NODE = "attach-node";
const POD = { apiVersion: "v1", kind: "Pod" } as const;

let up: SetpointProcess | undefined;
let agent: AgentProcess | undefined;
let client: Client | undefined;
let kubectl: Kubectl | undefined;

function pod(
  name: string,
  cmd: string,
  io: { stdin?: boolean; tty?: boolean },
  restartPolicy = "Always",
): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default" },
    spec: {
      nodeName: NODE,
      restartPolicy,
      containers: [{ name: "main", image: "shell:1", command: ["sh", "-c", cmd], ...io }],
    },
  } as Pod;
}

function attach(args: string[], tty = false): RunningKubectl {
  return startKubectl(kubectl!, args, { tty });
}

async function phase(name: string): Promise<string | undefined> {
  return (await client!.get<Pod>(POD, name, "default")).status?.phase;
}

beforeAll(async () => {
  ({ up, agent, client, kubectl } = await startUpWithAgent({
    prefix: "setpoint-attach-",
    nodeName: NODE,
    range: RANGE,
    tokens: ["attacher-token,attacher,uid-attacher"],
  }));
  await client!.create<Pod>(
    pod("chat", 'echo started; while read line; do echo "got $line"; echo "err $line" >&2; done', {
      stdin: true,
    }),
  );
  await client!.create<Pod>(
    pod("ticker", "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.2; done", {}),
  );
  await client!.create<Pod>(
    pod("once", 'read line; echo "bye $line"; sleep 0.3', { stdin: true }, "Never"),
  );
  await client!.create<Pod>(
    pod("term", 'while read line; do echo "said $line"; done', { stdin: true, tty: true }),
  );
  await eventually(
    "the Pods running",
    async () =>
      (await phase("chat")) === "Running" &&
      (await phase("ticker")) === "Running" &&
      (await phase("once")) === "Running" &&
      (await phase("term")) === "Running",
    30_000,
  );
}, 90_000);

afterAll(async () => {
  await stopUpWithAgent({ up, agent, client, kubectl }, RANGE);
});

it("streams what a running container writes after attaching", async () => {
  const r = attach(["attach", "ticker"]);
  const [, first] = await r.waitFor(/tick (\d+)\n/);
  const later = await r.waitFor(new RegExp(`tick ${Number(first) + 3}\\n`));
  expect(later).toBeTruthy();
  // Only what was written after attaching: not the container's first line.
  expect(r.stdout).not.toMatch(/^tick 0\n/);
  await r.stop();
});

it("writes to the stdin of a container with stdin: true, which stays open between attaches", async () => {
  const first = attach(["attach", "-i", "chat"]);
  // The attach is open once kubectl's WebSocket is: a line written then is read by the container.
  await eventually("the first line read", async () => {
    first.child.stdin?.write("hello\n");
    await new Promise((r) => setTimeout(r, 200));
    return first.stdout.includes("got hello\n");
  });
  // Each stream on its own: the container's stderr is kubectl's.
  await eventually("the stderr line", () => first.stderr.includes("err hello\n"));
  expect(first.stdout).not.toContain("err hello");
  await first.stop();
  const second = attach(["attach", "-i", "chat"]);
  await eventually("the second line read", async () => {
    second.child.stdin?.write("again\n");
    await new Promise((r) => setTimeout(r, 200));
    return second.stdout.includes("got again\n");
  });
  // kubectl's end of input does not end the container's.
  second.child.stdin?.end();
  await second.stop();
  expect(await phase("chat")).toBe("Running");
});

it("ends when the container's run ends, and kubectl exits 0", async () => {
  const r = attach(["attach", "-i", "once"]);
  await eventually("the container's goodbye", async () => {
    if (!r.stdout.includes("bye")) r.child.stdin?.write("now\n");
    await new Promise((res) => setTimeout(res, 200));
    return r.stdout.includes("bye now\n");
  });
  const done = await r.exited;
  expect(done.code).toBe(0);
});

it("attaches with -it from a terminal to a container with tty: true", async () => {
  const r = attach(["attach", "-it", "term"], true);
  await eventually("a line through the terminal", async () => {
    r.child.stdin?.write("hi\n");
    await new Promise((res) => setTimeout(res, 200));
    return r.stdout.includes("said hi");
  });
  await r.stop();
});

it("authorizes pods/attach with RBAC: create", async () => {
  const k = kubectl!;
  const as = ["--token=attacher-token"];
  await letReadPods(k, "attacher", "attacher-token", "ticker");
  const denied = await k.fails([...as, "attach", "ticker"]);
  expect(denied.stderr).toContain(
    'User "attacher" cannot create resource "pods/attach" in API group "" in the namespace "default"',
  );
  await k.ok(["create", "role", "attach", "--verb=get", "--verb=create", "--resource=pods/attach"]);
  await k.ok(["create", "rolebinding", "attach", "--role=attach", "--user=attacher"]);
  await eventually("create on pods/attach granted", async () => {
    const r = attach([...as, "attach", "ticker"]);
    const ok = await r.waitFor(/tick \d+\n/, 5_000).then(
      () => true,
      () => false,
    );
    await r.stop();
    return ok;
  });
});
