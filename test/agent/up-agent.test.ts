/**
 * `setpoint up` runs a node agent by default: its Node (named after the host)
 * registers and turns Ready, a Pod bound to it runs the shipped hello image with no
 * build step, and stopping `up` leaves the Pod's process running (the next start
 * adopts it); the test stops it.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Node, Pod } from "@setpoint/api";
import { Client, loadKubeconfig } from "@setpoint/runtime";
import { afterAll, expect, it } from "vitest";
import type { AgentStateData } from "../../src/agent/state/index.ts";
import { defaultNodeName } from "../../src/cli/node-name.ts";
import { type SetpointProcess, startSetpoint } from "../e2e/helpers/setpoint.ts";
import { eventually, httpText, removeTempDirs, tempDir } from "./helpers.ts";

let up: SetpointProcess | undefined;
let dataDir = "";

/** The pids of the Pods in the agent's state file. */
function statePids(): number[] {
  try {
    const state = JSON.parse(
      readFileSync(join(dataDir, "agent", "state.json"), "utf8"),
    ) as AgentStateData;
    return Object.values(state.pods).flatMap((r) =>
      r.containers.flatMap((c) => (c.process ? [c.process.pid] : [])),
    );
  } catch {
    return [];
  }
}

afterAll(async () => {
  await up?.stop();
  for (const pid of statePids()) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {}
  }
  removeTempDirs();
});

it("setpoint up runs an agent whose Node runs the hello image", async () => {
  dataDir = tempDir("setpoint-up-agent-");
  up = await startSetpoint(["--agent", "--data-dir", dataDir]);
  const client = new Client(loadKubeconfig({ path: up.kubeconfig }));
  try {
    const node = defaultNodeName();
    await eventually(
      "the node Ready",
      async () => {
        const n = await client.get<Node>({ apiVersion: "v1", kind: "Node" }, node);
        return n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
      },
      30_000,
    );
    await client.create<Pod>({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "hello", namespace: "default" },
      spec: { nodeName: node, containers: [{ name: "hello", image: "hello" }] },
    });
    const ip = await eventually(
      "the pod running",
      async () => {
        const p = await client.get<Pod>({ apiVersion: "v1", kind: "Pod" }, "hello", "default");
        return p.status?.phase === "Running" ? p.status.podIP : undefined;
      },
      30_000,
    );
    expect(await eventually("an answer", () => httpText(`http://${ip}:8080/`))).toBe(
      "hello from hello (version latest)\n",
    );
    const [pid] = statePids();
    await up.stop();
    up = undefined;
    process.kill(pid, 0);
    expect(await httpText(`http://${ip}:8080/`)).toBe("hello from hello (version latest)\n");
  } finally {
    client.close();
  }
}, 90_000);
