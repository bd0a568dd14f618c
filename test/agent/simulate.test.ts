/**
 * Simulated nodes through a real apiserver, with the scheduler and the
 * workload controllers: Nodes register Ready with kwok-like resources, renew
 * their Leases and post Ready again when their stored status says otherwise; a Deployment's Pods are scheduled onto them and become
 * Running and Ready with the kubelet's status fields (three Pod writes each:
 * create, binding, status); a Pod with a readiness probe is Running before it
 * is Ready; a Job-style Pod (restartPolicy Never) Succeeds after the run time;
 * deleted Pods go. `setpoint agent --simulate N` runs them as a process.
 */
import { spawn } from "node:child_process";
import type { Deployment, KubeObject, Node, Pod } from "@setpoint/api";
import { describe, expect, it } from "vitest";
import { SIMULATED_NODE_LABEL } from "../../src/agent/simulate/index.ts";
import { startTestEnv } from "../../src/testenv/testenv.ts";
import { eventually } from "../controllers/helpers.ts";
import { SETPOINT_BIN } from "../e2e/helpers/setpoint.ts";
import { freshNamespace } from "../helpers/namespace.ts";
import { startSimulatedNodes } from "../helpers/simulated-nodes.ts";
import { startForFile } from "../helpers/test-server.ts";

const env = startForFile(() =>
  startTestEnv({ controllers: ["garbage-collector", "replicaset", "deployment", "scheduler"] }),
);
const sim = startForFile(() =>
  startSimulatedNodes(env.client, 3, {
    prefix: `sim${process.pid}-`,
    heartbeatMs: 500,
    runMs: 300,
  }),
);

const NODE = { apiVersion: "v1", kind: "Node" } as const;
const POD = { apiVersion: "v1", kind: "Pod" } as const;
const LEASE = { apiVersion: "coordination.k8s.io/v1", kind: "Lease" } as const;
const DEPLOY = { apiVersion: "apps/v1", kind: "Deployment" } as const;

function condition(p: Pod, type: string): string | undefined {
  return p.status?.conditions?.find((c) => c.type === type)?.status;
}

describe("simulated nodes", () => {
  it("register Ready Nodes and renew their Leases", async () => {
    const name = `sim${process.pid}-0`;
    const node = await env.client.get<Node>(NODE, name);
    expect(node.metadata.labels).toMatchObject({
      "kubernetes.io/hostname": name,
      [SIMULATED_NODE_LABEL]: "true",
    });
    expect(node.status?.allocatable).toMatchObject({ cpu: "32", memory: "256Gi", pods: "110" });
    expect(node.status?.conditions?.find((c) => c.type === "Ready")).toMatchObject({
      status: "True",
      reason: "KubeletReady",
    });
    const first = await env.client.get<KubeObject>(LEASE, name, "kube-node-lease");
    const renewed = await eventually(async () => {
      const l = await env.client.get<KubeObject>(LEASE, name, "kube-node-lease");
      return l.metadata.resourceVersion !== first.metadata.resourceVersion ? l : undefined;
    });
    expect((renewed.spec as { holderIdentity?: string }).holderIdentity).toBe(name);
  });

  it("post Ready again when their stored status says otherwise, as the kubelet does", async () => {
    const name = `sim${process.pid}-1`;
    const node = await env.client.get<Node>(NODE, name);
    await env.client.updateStatus<Node>({
      ...node,
      status: {
        ...node.status,
        conditions: (node.status?.conditions ?? []).map((c) => ({
          ...c,
          status: "Unknown",
          reason: "NodeStatusUnknown",
          message: "Kubelet stopped posting node status.",
        })),
      },
    });
    await eventually(async () => {
      const n = await env.client.get<Node>(NODE, name);
      const ready = n.status?.conditions?.find((c) => c.type === "Ready");
      return (ready?.status === "True" && ready.reason === "KubeletReady") || undefined;
    });
  });

  it("run a Deployment's Pods Running and Ready, with one status write each, and remove deleted ones", async () => {
    const ns = await freshNamespace(env.client);
    const writes = sim.podWrites;
    await env.client.create<Deployment>({
      ...DEPLOY,
      metadata: { name: "web", namespace: ns },
      spec: {
        replicas: 6,
        selector: { matchLabels: { app: "web" } },
        template: {
          metadata: { labels: { app: "web" } },
          spec: { containers: [{ name: "app", image: "demo/hello:1" }] },
        },
      },
    });
    const pods = await eventually(async () => {
      const list = await env.client.list<Pod>(POD, { namespace: ns });
      return list.items.length === 6 && list.items.every((p) => condition(p, "Ready") === "True")
        ? list.items
        : undefined;
    });
    expect(new Set(pods.map((p) => p.spec?.nodeName)).size).toBe(3);
    const p = pods[0];
    expect(p.status).toMatchObject({
      phase: "Running",
      hostIP: expect.stringMatching(/^10\./),
      podIP: expect.stringMatching(/^10\./),
      startTime: expect.any(String),
    });
    expect(p.status?.containerStatuses?.[0]).toMatchObject({
      name: "app",
      ready: true,
      started: true,
      restartCount: 0,
      image: "demo/hello:1",
      state: { running: { startedAt: expect.any(String) } },
    });
    for (const t of ["PodScheduled", "Initialized", "ContainersReady", "Ready"]) {
      expect(condition(p, t)).toBe("True");
    }
    expect(sim.podWrites - writes).toBe(6);
    await env.client.delete(DEPLOY, "web", ns, { propagationPolicy: "Foreground" });
    await eventually(async () => {
      const list = await env.client.list<Pod>(POD, { namespace: ns });
      return list.items.length === 0 || undefined;
    });
  });

  it("make a Pod with a readiness probe Running before Ready, and a Never Pod Succeeded", async () => {
    const ns = await freshNamespace(env.client);
    await env.client.create<Pod>({
      ...POD,
      metadata: { name: "probed", namespace: ns },
      spec: {
        containers: [
          {
            name: "app",
            image: "demo/hello:1",
            readinessProbe: { httpGet: { path: "/", port: 8080 }, initialDelaySeconds: 2 },
          },
        ],
      },
    });
    await env.client.create<Pod>({
      ...POD,
      metadata: { name: "job", namespace: ns },
      spec: { restartPolicy: "Never", containers: [{ name: "work", image: "demo/hello:1" }] },
    });
    const running = await eventually(async () => {
      const q = await env.client.get<Pod>(POD, "probed", ns);
      return q.status?.phase === "Running" ? q : undefined;
    });
    expect(condition(running, "Ready")).toBe("False");
    expect(condition(running, "ContainersReady")).toBe("False");
    await eventually(async () => {
      const q = await env.client.get<Pod>(POD, "probed", ns);
      return condition(q, "Ready") === "True" || undefined;
    });
    const done = await eventually(async () => {
      const q = await env.client.get<Pod>(POD, "job", ns);
      return q.status?.phase === "Succeeded" ? q : undefined;
    });
    expect(done.status?.containerStatuses?.[0].state?.terminated).toMatchObject({
      exitCode: 0,
      reason: "Completed",
    });
    expect(condition(done, "Ready")).toBe("False");
  });

  it("run as `setpoint agent --simulate N` until SIGTERM", async () => {
    const prefix = `cli${process.pid}-`;
    const child = spawn(
      process.execPath,
      [
        SETPOINT_BIN,
        "agent",
        "--simulate",
        "2",
        "--node-prefix",
        prefix,
        "--kubeconfig",
        env.kubeconfigPath,
        "--log-level",
        "warn",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    child.stdout?.on("data", (d) => {
      out += d;
    });
    const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
    try {
      await eventually(
        async () => {
          const nodes = await env.client.list<Node>(NODE, { labelSelector: SIMULATED_NODE_LABEL });
          const mine = nodes.items.filter((n) => n.metadata.name?.startsWith(prefix));
          return mine.length === 2 || undefined;
        },
        "two simulated nodes",
        30_000,
      );
      await eventually(
        async () => out.includes(`agent simulating 2 nodes ${prefix}0..${prefix}1`) || undefined,
      );
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
  }, 60_000);
});
