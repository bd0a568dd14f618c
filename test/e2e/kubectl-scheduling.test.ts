/**
 * What kubectl users see of scheduling, with the real kubectl against a real
 * apiserver running the scheduler and simulated nodes: `get pods -o wide`
 * with kubectl's IP, NODE, NOMINATED NODE and READINESS GATES columns;
 * `describe pod` with the Scheduled Event (and FailedScheduling for a Pod
 * that fits nowhere) and `describe node` with its conditions, capacity, the
 * Pods on it and its Events (RegisteredNode from the node lifecycle controller).
 */
import type { Pod } from "@setpoint/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEnv } from "../../src/testenv/testenv.ts";
import { eventually } from "../controllers/helpers.ts";
import { freshNamespace } from "../helpers/namespace.ts";
import { startSimulatedNodes } from "../helpers/simulated-nodes.ts";
import { startForFile } from "../helpers/test-server.ts";
import { Kubectl } from "./helpers/kubectl.ts";

const env = startForFile(() => startTestEnv({ controllers: ["scheduler", "node-lifecycle"] }));
const NODE_NAME = `kd${process.pid}-0`;
startForFile(() => startSimulatedNodes(env.client, 1, { prefix: `kd${process.pid}-` }));
const POD = { apiVersion: "v1", kind: "Pod" } as const;

describe("kubectl and scheduling", () => {
  let k: Kubectl;
  let ns: string;
  beforeAll(async () => {
    k = new Kubectl(env.kubeconfigPath);
    ns = await freshNamespace(env.client);
    await env.client.create<Pod>({
      ...POD,
      metadata: { name: "web", namespace: ns },
      spec: { containers: [{ name: "app", image: "demo/hello:1" }] },
    });
    await env.client.create<Pod>({
      ...POD,
      metadata: { name: "huge", namespace: ns },
      spec: {
        containers: [
          { name: "app", image: "demo/hello:1", resources: { requests: { cpu: "64" } } },
        ],
      },
    });
    await eventually(async () => {
      const p = await env.client.get<Pod>(POD, "web", ns);
      return (
        p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") || undefined
      );
    });
  });
  afterAll(async () => {
    await k?.close();
  });

  it("get pods -o wide shows IP, NODE, NOMINATED NODE and READINESS GATES", async () => {
    const out = await k.ok(["get", "pods", "-n", ns, "-o", "wide"]);
    const [header, ...rows] = out.trim().split("\n");
    expect(header.split(/\s{2,}/)).toEqual([
      "NAME",
      "READY",
      "STATUS",
      "RESTARTS",
      "AGE",
      "IP",
      "NODE",
      "NOMINATED NODE",
      "READINESS GATES",
    ]);
    const byName = new Map(rows.map((r) => [r.split(/\s+/)[0], r.split(/\s{2,}/)]));
    const web = byName.get("web") ?? [];
    const pod = await env.client.get<Pod>(POD, "web", ns);
    expect(web.slice(1, 4)).toEqual(["1/1", "Running", "0"]);
    expect(web.slice(5)).toEqual([pod.status?.podIP, NODE_NAME, "<none>", "<none>"]);
    const huge = byName.get("huge") ?? [];
    expect(huge.slice(1, 3)).toEqual(["0/1", "Pending"]);
    expect(huge.slice(5)).toEqual(["<none>", "<none>", "<none>", "<none>"]);
  });

  it("describe pod shows where it was scheduled, or why not, in its Events", async () => {
    const web = await k.ok(["describe", "pod", "web", "-n", ns]);
    expect(web).toMatch(new RegExp(`^Node:\\s+${NODE_NAME}/10\\.`, "m"));
    expect(web).toMatch(
      new RegExp(
        `Normal\\s+Scheduled\\s+\\S+\\s+default-scheduler\\s+Successfully assigned ${ns}/web to ${NODE_NAME}`,
      ),
    );
    const huge = await eventually(async () => {
      const out = await k.ok(["describe", "pod", "huge", "-n", ns]);
      return out.includes("FailedScheduling") ? out : undefined;
    });
    expect(huge).toMatch(/^Node:\s+<none>$/m);
    expect(huge).toMatch(
      /Warning\s+FailedScheduling\s+\S+\s+default-scheduler\s+0\/1 nodes are available: 1 Insufficient cpu\. preemption: 0\/1 nodes are available: 1 No preemption victims found for incoming pod\./,
    );
    expect(huge).toMatch(/PodScheduled\s+False/);
  });

  it("describe node shows its conditions, capacity, Pods and Events", async () => {
    const out = await eventually(async () => {
      const o = await k.ok(["describe", "node", NODE_NAME]);
      return o.includes("RegisteredNode") ? o : undefined;
    });
    expect(out).toMatch(new RegExp(`^Name:\\s+${NODE_NAME}$`, "m"));
    expect(out).toMatch(/Ready\s+True\s+.*KubeletReady\s+kubelet is posting ready status/);
    expect(out).toMatch(/^Capacity:\n\s+cpu:\s+32\n/m);
    expect(out).toMatch(new RegExp(`${ns}\\s+web\\s+0 \\(0%\\)`));
    expect(out).toMatch(
      new RegExp(
        `Normal\\s+RegisteredNode\\s+\\S+\\s+node-controller\\s+Node ${NODE_NAME} event: Registered Node ${NODE_NAME} in Controller`,
      ),
    );
  });
});
