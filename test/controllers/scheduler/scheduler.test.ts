/**
 * The scheduler against a real apiserver over HTTP, with Nodes written by the
 * test as an agent would: a ReplicaSet's Pods spread over the nodes that fit,
 * each bound through the binding subresource with a `Scheduled` Event; a Pod
 * that fits nowhere gets kube-scheduler's FailedScheduling message and
 * PodScheduled=False/Unschedulable, and is placed once a Node makes room; a
 * host port held on the only matching node waits until its holder is deleted;
 * nodes that are not Ready or are cordoned are passed over. Filters, scoring
 * and the message are also checked on their own.
 */
import type { Node, Pod, ReplicaSet } from "@setpoint/api";
import { describe, expect, it } from "vitest";
import { BUILTIN_CONTROLLER_NAMES } from "../../../src/controllers/index.ts";
import { fitErrorMessage, podRequests } from "../../../src/controllers/scheduler/index.ts";
import { startTestEnv } from "../../../src/testenv/testenv.ts";
import { freshNamespace } from "../../helpers/namespace.ts";
import { sleep } from "../../helpers/poll.ts";
import { startForFile } from "../../helpers/test-server.ts";
import { EVENT, eventually, nodeStatus, startControllers } from "../helpers.ts";

const env = startForFile(() => startTestEnv({ controllers: false }));
startForFile(() =>
  startControllers({
    restConfig: env.config,
    disabled: BUILTIN_CONTROLLER_NAMES.filter((n) => n !== "scheduler" && n !== "replicaset"),
  }),
);

const NODE = { apiVersion: "v1", kind: "Node" } as const;
const POD = { apiVersion: "v1", kind: "Pod" } as const;
const RS = { apiVersion: "apps/v1", kind: "ReplicaSet" } as const;
const P = `s${process.pid}`;

/** A Node posting Ready=`ready` with `cpu` cores, as an agent registers it. */
async function makeNode(
  name: string,
  opts: { cpu?: string; ready?: "True" | "False"; taints?: Node["spec"] } = {},
): Promise<Node> {
  const node = await env.client.create<Node>({
    ...NODE,
    metadata: { name, labels: { "kubernetes.io/hostname": name } },
    spec: opts.taints ?? {},
  });
  return setStatus(node, opts.cpu ?? "2", opts.ready ?? "True");
}

async function setStatus(node: Node, cpu: string, ready: "True" | "False"): Promise<Node> {
  return env.client.updateStatus<Node>({ ...node, status: nodeStatus(cpu, ready) });
}

function pod(ns: string, name: string, spec: Partial<NonNullable<Pod["spec"]>> = {}): Pod {
  return {
    ...POD,
    metadata: { name, namespace: ns },
    spec: { containers: [{ name: "c", image: "demo/hello:1" }], ...spec },
  };
}

async function boundTo(ns: string, name: string): Promise<string> {
  return eventually(async () => {
    const p = await env.client.get<Pod>(POD, name, ns);
    return p.spec?.nodeName || undefined;
  });
}

async function events(ns: string, name: string, reason: string) {
  const list = await env.client.list(EVENT, {
    namespace: ns,
    fieldSelector: `involvedObject.name=${name},reason=${reason}`,
  });
  return list.items as unknown as {
    type: string;
    message: string;
    source?: { component?: string };
  }[];
}

// Nodes are cluster-wide: every case below sees all four (a, b, c cordoned later, d tainted).
const A = `${P}-a`;
const B = `${P}-b`;
const C = `${P}-c`;
const D = `${P}-d`;

describe("scheduler", () => {
  it("spreads a ReplicaSet's Pods over the nodes that fit and records Scheduled", async () => {
    await makeNode(A);
    await makeNode(B);
    await makeNode(C, { ready: "False" });
    await makeNode(D, {
      taints: { taints: [{ key: "example.com/dedicated", value: "db", effect: "NoSchedule" }] },
    });
    const ns = await freshNamespace(env.client);
    await env.client.create<ReplicaSet>({
      ...RS,
      metadata: { name: "web", namespace: ns },
      spec: {
        replicas: 4,
        selector: { matchLabels: { app: "web" } },
        template: {
          metadata: { labels: { app: "web" } },
          spec: { containers: [{ name: "c", image: "demo/hello:1" }] },
        },
      },
    });
    const pods = await eventually(async () => {
      const list = await env.client.list<Pod>(POD, { namespace: ns });
      return list.items.length === 4 && list.items.every((p) => p.spec?.nodeName)
        ? list.items
        : undefined;
    });
    const perNode = new Map<string, number>();
    for (const p of pods)
      perNode.set(p.spec?.nodeName ?? "", (perNode.get(p.spec?.nodeName ?? "") ?? 0) + 1);
    expect(Object.fromEntries(perNode)).toEqual({ [A]: 2, [B]: 2 });
    for (const p of pods) {
      expect(p.status?.conditions?.find((c) => c.type === "PodScheduled")?.status).toBe("True");
    }
    const name = pods[0].metadata.name ?? "";
    const [ev] = await eventually(async () => {
      const e = await events(ns, name, "Scheduled");
      return e.length > 0 ? e : undefined;
    });
    expect(ev).toMatchObject({
      type: "Normal",
      message: `Successfully assigned ${ns}/${name} to ${pods[0].spec?.nodeName}`,
      source: { component: "default-scheduler" },
    });
  });

  it("reports a Pod that fits nowhere as kube-scheduler words it, and places it once a Node makes room", async () => {
    const ns = await freshNamespace(env.client);
    await env.client.create(
      pod(ns, "big", {
        containers: [{ name: "c", image: "demo/hello:1", resources: { requests: { cpu: "3" } } }],
      }),
    );
    const text =
      "0/4 nodes are available: 1 node(s) had untolerated taint {example.com/dedicated: db}, " +
      "1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, 2 Insufficient cpu. " +
      "preemption: 0/4 nodes are available: 2 No preemption victims found for incoming pod, " +
      "2 Preemption is not helpful for scheduling.";
    const [ev] = await eventually(async () => {
      const e = await events(ns, "big", "FailedScheduling");
      return e.length > 0 ? e : undefined;
    });
    expect(ev).toMatchObject({
      type: "Warning",
      message: text,
      source: { component: "default-scheduler" },
    });
    const cond = await eventually(async () => {
      const p = await env.client.get<Pod>(POD, "big", ns);
      return p.status?.conditions?.find((c) => c.type === "PodScheduled");
    });
    expect(cond).toMatchObject({ status: "False", reason: "Unschedulable", message: text });
    expect(cond?.lastTransitionTime).toBeTruthy();
    // More room on A: the scheduler looks again after its backoff.
    await setStatus(await env.client.get<Node>(NODE, A), "8", "True");
    expect(await boundTo(ns, "big")).toBe(A);
  });

  it("waits for a host port until the Pod holding it is deleted, and passes cordoned nodes over", async () => {
    const ns = await freshNamespace(env.client);
    const onA = (name: string) =>
      pod(ns, name, {
        nodeSelector: { "kubernetes.io/hostname": A },
        containers: [
          { name: "c", image: "demo/hello:1", ports: [{ containerPort: 80, hostPort: 8080 }] },
        ],
      });
    await env.client.create(onA("first"));
    expect(await boundTo(ns, "first")).toBe(A);
    await env.client.create(onA("second"));
    const [ev] = await eventually(async () => {
      const e = await events(ns, "second", "FailedScheduling");
      return e.length > 0 ? e : undefined;
    });
    expect(ev.message).toBe(
      "0/4 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, " +
        "1 node(s) didn't match Pod's node affinity/selector, " +
        "1 node(s) had untolerated taint {example.com/dedicated: db}, " +
        "1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }. preemption: 0/4 nodes " +
        "are available: 1 No preemption victims found for incoming pod, 3 Preemption is not helpful for scheduling.",
    );
    await env.client.delete(POD, "first", ns, { gracePeriodSeconds: 0 });
    expect(await boundTo(ns, "second")).toBe(A);

    // Cordon B: a free Pod goes to A only.
    await env.client.patch(
      NODE,
      B,
      undefined,
      { spec: { unschedulable: true } },
      { type: "merge" },
    );
    await sleep(500); // the scheduler's Node informer sees the cordon first
    for (let i = 0; i < 3; i++) await env.client.create(pod(ns, `probe-${i}`));
    const probes = await eventually(async () => {
      const list = await env.client.list<Pod>(POD, { namespace: ns });
      const p = list.items.filter((x) => x.metadata.name?.startsWith("probe-"));
      return p.length === 3 && p.every((x) => x.spec?.nodeName) ? p : undefined;
    });
    for (const p of probes) expect(p.spec?.nodeName).toBe(A);
  });

  it("counts a Pod's effective requests and words the message for preemptionPolicy Never", () => {
    const p: Pod = pod("x", "y", {
      containers: [
        { name: "a", image: "i", resources: { requests: { cpu: "500m", memory: "1Gi" } } },
        { name: "b", image: "i", resources: { limits: { cpu: "250m" } } },
      ],
      initContainers: [
        { name: "init", image: "i", resources: { requests: { cpu: "2" } } },
        {
          name: "sidecar",
          image: "i",
          restartPolicy: "Always",
          resources: { requests: { memory: "100Mi" } },
        },
      ],
      overhead: { cpu: "10m" },
    });
    expect(podRequests(p)).toEqual({ cpu: 2010, memory: 2 ** 30 + 100 * 2 ** 20 });
    const never = { ...p, spec: { ...p.spec, containers: [], preemptionPolicy: "Never" } } as Pod;
    expect(
      fitErrorMessage(never, 2, [
        { reasons: ["Insufficient cpu"], resolvable: true },
        { reasons: ["Insufficient cpu"], resolvable: true },
      ]),
    ).toBe(
      "0/2 nodes are available: 2 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never.",
    );
  });
});
