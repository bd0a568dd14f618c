/**
 * `kubectl port-forward` through the apiserver to the agent, with real processes:
 * a real `setpoint up`, a real `setpoint agent`, a Pod of two `hello` servers
 * (ports 8080 and 8081), and the real kubectl 1.32. kubectl tunnels SPDY/3.1
 * through a WebSocket (`SPDY/3.1+portforward.k8s.io`), which the apiserver
 * carries to the agent as a SPDY upgrade; with KUBECTL_PORT_FORWARD_WEBSOCKETS
 * off kubectl asks for SPDY itself, and the apiserver relays it as it is.
 * Covered: HTTP requests through the forwarded port (several at once), two ports
 * in one kubectl, a local port of 0 (read from kubectl's output), a port nobody
 * listens on (kubectl reports the agent's error and ends), and RBAC (create on
 * pods/portforward).
 */
import type { Pod } from "@setpoint/api";
import type { Client } from "@setpoint/runtime";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Kubectl, RunningKubectl } from "../e2e/helpers/kubectl.ts";
import type { SetpointProcess } from "../e2e/helpers/setpoint.ts";
import type { AgentProcess } from "./agent-process.ts";
import { eventually } from "./helpers.ts";
import { letReadPods, startKubectl, startUpWithAgent, stopUpWithAgent } from "./up-with-agent.ts";

const RANGE = 97;
const NODE = "pf-node";
const POD = { apiVersion: "v1", kind: "Pod" } as const;

let up: SetpointProcess | undefined;
let agent: AgentProcess | undefined;
let client: Client | undefined;
let kubectl: Kubectl | undefined;

/** Starts `kubectl port-forward args...`, with `env` added to its environment. */
function portForward(args: string[], env: NodeJS.ProcessEnv = {}): RunningKubectl {
  return startKubectl(kubectl!, ["port-forward", ...args], { env });
}

/** The local ports kubectl reports, in the order of its `Forwarding from` lines. */
async function localPorts(r: RunningKubectl, count: number): Promise<number[]> {
  const lines = new RegExp(`(?:Forwarding from 127\\.0\\.0\\.1:\\d+ -> \\d+\\n[^]*){${count}}`);
  await r.waitFor(lines);
  return [...r.stdout.matchAll(/Forwarding from 127\.0\.0\.1:(\d+) -> \d+/g)].map((m) =>
    Number(m[1]),
  );
}

async function get(port: number, path = "/"): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    signal: AbortSignal.timeout(10_000),
  });
  return res.text();
}

beforeAll(async () => {
  ({ up, agent, client, kubectl } = await startUpWithAgent({
    prefix: "setpoint-portforward-",
    nodeName: NODE,
    range: RANGE,
    tokens: ["forwarder-token,forwarder,uid-forwarder"],
  }));
  await client.create<Pod>({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "web", namespace: "default" },
    spec: {
      nodeName: NODE,
      containers: [
        { name: "a", image: "hello:1.0", env: [{ name: "PORT", value: "8080" }] },
        { name: "b", image: "hello:2.0", env: [{ name: "PORT", value: "8081" }] },
      ],
    },
  } as Pod);
  await eventually(
    "the Pod running",
    async () => (await client!.get<Pod>(POD, "web", "default")).status?.phase === "Running",
    30_000,
  );
}, 90_000);

afterAll(async () => {
  await stopUpWithAgent({ up, agent, client, kubectl }, RANGE);
});

it("forwards a local port to the Pod over kubectl's WebSocket tunnel, several requests at once", async () => {
  // -v=4: kubectl logs how it dialed.
  const pf = portForward(["-v=4", "pod/web", "0:8080"]);
  const [port] = await localPorts(pf, 1);
  expect(port).toBeGreaterThan(0);
  expect(pf.stderr).toContain("Before WebSocket Upgrade Connection");
  expect(pf.stderr).not.toContain("fallback to secondary dialer");
  expect(await get(port)).toBe("hello from web (version 1.0)\n");
  const answers = await Promise.all(Array.from({ length: 8 }, () => get(port)));
  expect(answers).toEqual(Array(8).fill("hello from web (version 1.0)\n"));
  expect(pf.stdout).toContain("Handling connection for");
  await pf.stop();
});

it("forwards two ports in one kubectl", async () => {
  const pf = portForward(["web", "0:8080", "0:8081"]);
  const [first, second] = await localPorts(pf, 2);
  const [a, b] = await Promise.all([get(first), get(second)]);
  expect(a).toBe("hello from web (version 1.0)\n");
  expect(b).toBe("hello from web (version 2.0)\n");
  await pf.stop();
});

it("forwards over plain SPDY when kubectl's WebSockets are off", async () => {
  const pf = portForward(["-v=4", "pod/web", "0:8081"], {
    KUBECTL_PORT_FORWARD_WEBSOCKETS: "false",
  });
  const [port] = await localPorts(pf, 1);
  expect(pf.stderr).not.toContain("WebSocket");
  const answers = await Promise.all(Array.from({ length: 4 }, () => get(port)));
  expect(answers).toEqual(Array(4).fill("hello from web (version 2.0)\n"));
  await pf.stop();
});

it("reports a port nobody listens on as the kubelet does, and kubectl ends", async () => {
  const pf = portForward(["pod/web", "0:9999"]);
  const [port] = await localPorts(pf, 1);
  await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(10_000) }).catch(
    () => undefined,
  );
  const r = await pf.exited;
  const uid = (await client!.get<Pod>(POD, "web", "default")).metadata.uid;
  expect(r.stderr).toContain(
    `an error occurred forwarding ${port} -> 9999: error forwarding port 9999 to pod web_default, uid ${uid}: dial tcp `,
  );
  expect(r.stderr).toContain(":9999: connect: connection refused");
  expect(r.stderr).toContain("error: lost connection to pod");
  expect(r.code).toBe(1);
});

it("authorizes pods/portforward with RBAC: create", async () => {
  const k = kubectl!;
  await letReadPods(k, "forwarder", "forwarder-token", "web");
  const denied = portForward(["--token=forwarder-token", "pod/web", "0:8080"]);
  const r = await denied.exited;
  expect(r.stderr).toContain(
    'User "forwarder" cannot create resource "pods/portforward" in API group "" in the namespace "default"',
  );
  await k.ok([
    "create",
    "role",
    "forward",
    "--verb=get",
    "--verb=create",
    "--resource=pods/portforward",
  ]);
  await k.ok(["create", "rolebinding", "forward", "--role=forward", "--user=forwarder"]);
  await eventually(
    "create on pods/portforward granted",
    async () =>
      (
        await k.run([
          "--token=forwarder-token",
          "auth",
          "can-i",
          "create",
          "pods",
          "--subresource=portforward",
        ])
      ).stdout === "yes\n",
  );
  const pf = portForward(["--token=forwarder-token", "pod/web", "0:8080"]);
  const [port] = await localPorts(pf, 1);
  expect(await get(port)).toBe("hello from web (version 1.0)\n");
  await pf.stop();
});
