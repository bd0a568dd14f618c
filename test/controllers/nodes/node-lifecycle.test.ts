/**
 * Node lifecycle and Pod GC against a real apiserver, read with the real
 * kubectl: a Node whose Lease stops being renewed goes Unknown with
 * Kubernetes' reason and message and gets the unreachable taints; Pods leave
 * it when their tolerationSeconds run out (with a TaintManagerEviction Event)
 * and stay when they tolerate it for good; the taints go when the node is
 * back; a Ready=False node gets not-ready taints; kubectl cordon/uncordon
 * add and remove the unschedulable taint; Pods of a Node that is gone and
 * terminated Pods beyond the threshold are collected. Node and Lease objects
 * are written by the test, as a node agent would.
 */
import type { KubeObject, Node, Pod, Taint, Toleration } from "@setpoint/api";
import type { Client } from "@setpoint/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BUILTIN_CONTROLLER_NAMES,
  NODE_LIFECYCLE_CONTROLLER,
  POD_GC_CONTROLLER,
} from "../../../src/controllers/index.ts";
import {
  evictionTime,
  reconcileTaints,
  tolerates,
} from "../../../src/controllers/nodelifecycle/index.ts";
import { startTestEnv } from "../../../src/testenv/testenv.ts";
import { Kubectl } from "../../e2e/helpers/kubectl.ts";
import { freshNamespace } from "../../helpers/namespace.ts";
import { startForFile } from "../../helpers/test-server.ts";
import { EVENT, eventually, startControllers } from "../helpers.ts";

const env = startForFile(() => startTestEnv({ controllers: false }));
startForFile(() =>
  startControllers({
    restConfig: env.config,
    disabled: BUILTIN_CONTROLLER_NAMES.filter(
      (n) => n !== NODE_LIFECYCLE_CONTROLLER && n !== POD_GC_CONTROLLER,
    ),
    nodeLifecycle: { nodeMonitorGracePeriodMs: 2_000 },
    podGc: { periodMs: 300, quarantineMs: 1_000, terminatedPodGcThreshold: 1 },
  }),
);

const NODE = { apiVersion: "v1", kind: "Node" } as const;
const POD = { apiVersion: "v1", kind: "Pod" } as const;
const LEASE = { apiVersion: "coordination.k8s.io/v1", kind: "Lease" } as const;

function stamp(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, "Z");
}
function microStamp(): string {
  return new Date().toISOString().replace(/Z$/, "000Z");
}

let seq = 0;
/** A Node posting Ready=`ready` and its Lease, as a node agent writes them. */
async function makeNode(client: Client, ready: "True" | "False" = "True"): Promise<string> {
  const name = `node-${process.pid}-${++seq}`;
  const node = await client.create<Node>({ ...NODE, metadata: { name } });
  await postStatus(client, node, ready);
  await client.create<KubeObject>({
    ...LEASE,
    metadata: { name, namespace: "kube-node-lease" },
    spec: { holderIdentity: name, leaseDurationSeconds: 40, renewTime: microStamp() },
  });
  return name;
}

async function postStatus(client: Client, node: Node, ready: "True" | "False"): Promise<void> {
  const t = stamp();
  await client.updateStatus<Node>({
    ...node,
    status: {
      conditions: [
        {
          type: "Ready",
          status: ready,
          reason: ready === "True" ? "KubeletReady" : "KubeletNotReady",
          message: ready === "True" ? "kubelet is posting ready status" : "container runtime down",
          lastHeartbeatTime: t,
          lastTransitionTime: t,
        },
      ],
    },
  });
}

function pod(ns: string, name: string, nodeName: string, tolerationSeconds?: number): Pod {
  return {
    ...POD,
    metadata: { name, namespace: ns },
    spec: {
      nodeName,
      containers: [{ name: "c", image: "busybox" }],
      tolerations: [
        {
          key: "node.kubernetes.io/unreachable",
          operator: "Exists",
          effect: "NoExecute",
          ...(tolerationSeconds === undefined ? {} : { tolerationSeconds }),
        },
      ],
    },
  };
}

async function taintsOf(name: string): Promise<Taint[]> {
  return (await env.client.get<Node>(NODE, name)).spec?.taints ?? [];
}

async function gone(ns: string, name: string): Promise<boolean> {
  try {
    await env.client.get(POD, name, ns);
    return false;
  } catch {
    return true;
  }
}

describe("node lifecycle", () => {
  let k: Kubectl;
  beforeAll(() => {
    k = new Kubectl(env.kubeconfigPath);
  });
  afterAll(async () => {
    await k?.close();
  });

  it("marks a node that stopped renewing its Lease Unknown, taints it, evicts Pods by tolerationSeconds, and untaints it when it is back", async () => {
    const ns = await freshNamespace(env.client);
    const name = await makeNode(env.client);
    await env.client.create(pod(ns, "short", name, 1));
    await env.client.create(pod(ns, "forever", name));

    const ready = await eventually(async () => {
      const out = await k.ok([
        "get",
        "node",
        name,
        "-o",
        'jsonpath={range .status.conditions[?(@.type=="Ready")]}{.status}|{.reason}|{.message}{end}',
      ]);
      return out.startsWith("Unknown") ? out : undefined;
    }, "node Ready=Unknown");
    expect(ready).toBe("Unknown|NodeStatusUnknown|Kubelet stopped posting node status.");
    const conds = (await env.client.get<Node>(NODE, name)).status?.conditions ?? [];
    expect(conds.find((c) => c.type === "MemoryPressure")).toMatchObject({
      status: "Unknown",
      reason: "NodeStatusNeverUpdated",
      message: "Kubelet never posted node status.",
    });

    const taints = await eventually(async () => {
      const t = await taintsOf(name);
      return t.length === 2 ? t : undefined;
    }, "unreachable taints");
    expect(taints).toEqual([
      { key: "node.kubernetes.io/unreachable", effect: "NoSchedule" },
      { key: "node.kubernetes.io/unreachable", effect: "NoExecute", timeAdded: expect.any(String) },
    ]);

    await eventually(() => gone(ns, "short"), "Pod with tolerationSeconds 1 evicted");
    const ev = await eventually(async () => {
      const evs = await env.client.list<KubeObject>(EVENT, { namespace: ns });
      return evs.items.find((e) => e.reason === "TaintManagerEviction");
    }, "TaintManagerEviction Event");
    expect(ev).toMatchObject({
      type: "Normal",
      message: `Marking for deletion Pod ${ns}/short`,
      involvedObject: { kind: "Pod", name: "short", namespace: ns },
    });
    // Tolerated for good: still there after the other one went.
    expect(await gone(ns, "forever")).toBe(false);

    // The node is back: its agent posts Ready=True and renews the Lease.
    await postStatus(env.client, await env.client.get<Node>(NODE, name), "True");
    await eventually(
      async () => ((await taintsOf(name)).length === 0 ? true : undefined),
      "taints removed",
    );
  });

  it("taints a node reporting Ready=False not-ready", async () => {
    const name = await makeNode(env.client, "False");
    const taints = await eventually(async () => {
      const t = await taintsOf(name);
      return t.length === 2 ? t : undefined;
    }, "not-ready taints");
    expect(taints.map((t) => `${t.key}:${t.effect}`)).toEqual([
      "node.kubernetes.io/not-ready:NoSchedule",
      "node.kubernetes.io/not-ready:NoExecute",
    ]);
  });

  it("kubectl cordon adds the unschedulable taint and uncordon removes it", async () => {
    const name = await makeNode(env.client);
    expect(await k.ok(["cordon", name])).toBe(`node/${name} cordoned\n`);
    await eventually(async () => {
      const t = await taintsOf(name);
      return t.some((x) => x.key === "node.kubernetes.io/unschedulable") ? true : undefined;
    }, "unschedulable taint");
    // Ready, or Unknown once this test's 2 s grace period ran out under load: cordoned either way.
    expect(await k.ok(["get", "node", name, "--no-headers"])).toMatch(
      new RegExp(`^${name}\\s+(Ready|Unknown),SchedulingDisabled\\s`),
    );
    expect(await k.ok(["uncordon", name])).toBe(`node/${name} uncordoned\n`);
    // Only the unschedulable taint goes (the node may be Unknown, and so unreachable, by now).
    await eventually(async () => {
      const t = await taintsOf(name);
      return t.some((x) => x.key === "node.kubernetes.io/unschedulable") ? undefined : true;
    }, "unschedulable taint removed");
    expect((await env.client.get<Node>(NODE, name)).spec?.unschedulable).toBeUndefined();
  });
});

describe("pod garbage collector", () => {
  it("deletes Pods bound to a Node that does not exist, after the quarantine", async () => {
    const ns = await freshNamespace(env.client);
    await env.client.create(pod(ns, "orphan", `ghost-${process.pid}`));
    await eventually(() => gone(ns, "orphan"), "orphaned Pod deleted");
  });

  it("deletes terminated Pods beyond the threshold, oldest first", async () => {
    const ns = await freshNamespace(env.client);
    const name = await makeNode(env.client);
    for (const p of ["old", "new"]) {
      const created = await env.client.create<Pod>(pod(ns, p, name));
      await env.client.updateStatus<Pod>({ ...created, status: { phase: "Succeeded" } });
      if (p === "old") await new Promise((r) => setTimeout(r, 1_100));
    }
    await eventually(() => gone(ns, "old"), "oldest terminated Pod deleted");
    expect(await gone(ns, "new")).toBe(false);
  });
});

describe("taints and tolerations", () => {
  const unreachable: Taint = {
    key: "node.kubernetes.io/unreachable",
    effect: "NoExecute",
    timeAdded: "2026-01-01T00:00:00Z",
  };
  it("matches tolerations as Kubernetes does", () => {
    expect(tolerates({ operator: "Exists" }, unreachable)).toBe(true);
    expect(
      tolerates({ key: unreachable.key, operator: "Exists", effect: "NoSchedule" }, unreachable),
    ).toBe(false);
    expect(tolerates({ key: "other", operator: "Exists" }, unreachable)).toBe(false);
    expect(tolerates({ key: unreachable.key, value: "" }, unreachable)).toBe(true);
    expect(tolerates({ key: unreachable.key, value: "x" }, unreachable)).toBe(false);
  });
  it("evicts at timeAdded plus the shortest tolerationSeconds, now when not tolerated", () => {
    const base = Date.parse("2026-01-01T00:00:00Z");
    const p = (tolerations: Toleration[]): Pod => ({
      ...POD,
      metadata: { name: "p" },
      spec: { containers: [], tolerations },
    });
    expect(evictionTime(p([]), [unreachable], base + 5)).toBe(base + 5);
    expect(
      evictionTime(
        p([
          { operator: "Exists", tolerationSeconds: 30 },
          { key: unreachable.key, operator: "Exists", tolerationSeconds: 10 },
        ]),
        [unreachable],
        base,
      ),
    ).toBe(base + 10_000);
    expect(evictionTime(p([{ operator: "Exists" }]), [unreachable], base)).toBeUndefined();
    expect(evictionTime(p([]), [{ key: "k", effect: "NoSchedule" }], base)).toBeUndefined();
  });
  it("keeps other taints and their order, and timeAdded of kept ones", () => {
    const node: Node = {
      ...NODE,
      metadata: { name: "n" },
      spec: { taints: [{ key: "mine", effect: "NoSchedule" }, unreachable] },
      status: { conditions: [{ type: "Ready", status: "Unknown" }] },
    };
    expect(reconcileTaints(node, "2026-02-02T00:00:00Z")).toEqual([
      { key: "mine", effect: "NoSchedule" },
      unreachable,
      { key: unreachable.key, effect: "NoSchedule" },
    ]);
    node.status = { conditions: [{ type: "Ready", status: "True" }] };
    expect(reconcileTaints(node, "2026-02-02T00:00:00Z")).toEqual([
      { key: "mine", effect: "NoSchedule" },
    ]);
  });
});
