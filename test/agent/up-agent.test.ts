/**
 * `setpoint up` runs a node agent by default: its Node (named after the host)
 * registers and turns Ready, a Deployment's Pods are scheduled to it (the
 * built-in scheduler) and run the shipped hello image with no build step, and
 * stopping `up` leaves the Pods' processes running (the next start adopts
 * them); the test stops them. The agent is its node, not the admin: it presents
 * the certificate of `system:node:NAME` (group `system:nodes`) from the data dir's
 * node.kubeconfig, and reads the Secret its Pods use through Node authorization.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Deployment, KubeObject, Node, Pod } from "@setpoint/api";
import { Client, loadKubeconfig } from "@setpoint/runtime";
import { afterAll, expect, it } from "vitest";
import type { AgentStateData } from "../../src/agent/state/index.ts";
import { defaultNodeName } from "../../src/cli/node-name.ts";
import { Kubectl } from "../e2e/helpers/kubectl.ts";
import { runSetpoint, type SetpointProcess, startSetpoint } from "../e2e/helpers/setpoint.ts";
import { stopServiceProxies } from "./agent-process.ts";
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
  // up's agent leaves its service proxy running, as its Pods.
  await stopServiceProxies();
  for (const pid of statePids()) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {}
  }
  removeTempDirs();
});

it("setpoint up runs an agent whose Node runs a Deployment of the hello image", async () => {
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
    const whoami = new Kubectl(join(dataDir, "node.kubeconfig"));
    try {
      const info = JSON.parse(await whoami.ok(["auth", "whoami", "-o", "json"])).status.userInfo;
      expect(info).toEqual({
        username: `system:node:${node}`,
        groups: ["system:nodes", "system:authenticated"],
      });
    } finally {
      await whoami.close();
    }
    // A standalone agent's credentials, minted from the data dir's CA.
    const minted = join(dataDir, "other-node.kubeconfig");
    const made = await runSetpoint([
      "credentials",
      "--data-dir",
      dataDir,
      "--node",
      "other",
      "-o",
      minted,
    ]);
    expect(made.code).toBe(0);
    const other = new Kubectl(minted);
    try {
      expect((await other.fails(["get", "node", node])).stderr).toContain(
        `User "system:node:other" cannot get resource "nodes" in API group "" at the cluster scope: node 'other' cannot read '${node}', only its own Node object`,
      );
    } finally {
      await other.close();
    }
    await client.create<KubeObject>({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "hello-secret", namespace: "default" },
      stringData: { greeting: "hi" },
    } as KubeObject);
    await client.create<Deployment>({
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "hello", namespace: "default" },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: "hello" } },
        template: {
          metadata: { labels: { app: "hello" } },
          spec: {
            containers: [
              {
                name: "hello",
                image: "hello",
                env: [
                  {
                    name: "GREETING",
                    valueFrom: { secretKeyRef: { name: "hello-secret", key: "greeting" } },
                  },
                ],
              },
            ],
          },
        },
      },
    });
    const pods = await eventually(
      "the Deployment's Pods running on the node",
      async () => {
        const list = await client.list<Pod>(
          { apiVersion: "v1", kind: "Pod" },
          { namespace: "default", labelSelector: "app=hello" },
        );
        return list.items.length === 2 &&
          list.items.every((p) => p.spec?.nodeName === node && p.status?.phase === "Running")
          ? list.items
          : undefined;
      },
      30_000,
    );
    for (const p of pods) {
      expect(await eventually("an answer", () => httpText(`http://${p.status?.podIP}:8080/`))).toBe(
        `hello from ${p.metadata.name} (version latest)\n`,
      );
    }
    const ip = pods[0].status?.podIP;
    const [pid] = statePids();
    await up.stop();
    up = undefined;
    process.kill(pid, 0);
    expect(await httpText(`http://${ip}:8080/`)).toBe(
      `hello from ${pods[0].metadata.name} (version latest)\n`,
    );
  } finally {
    client.close();
  }
}, 90_000);
