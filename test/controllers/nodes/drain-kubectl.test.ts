/**
 * `kubectl drain` with the real kubectl against a real apiserver and the
 * disruption controller: the node is cordoned, its Pods are evicted through
 * `pods/eviction` (an emptyDir Pod too, with --delete-emptydir-data) within
 * a budget made with `kubectl create pdb`, while
 * Pods elsewhere stay, and drain waits for them to be gone; a
 * PodDisruptionBudget that allows no disruption makes drain retry every 5 s
 * and give up at its --timeout, reporting as kubectl does. Nodes and the
 * kubelet's part (Pods Ready, terminating Pods removed) are played by the test;
 * kubectl 1.27 and 1.33 drain the same way.
 */
import type { KubeObject, Node, Pod } from "@setpoint/api";
import { type Client, Informer, isConflict, isNotFound } from "@setpoint/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BUILTIN_CONTROLLER_NAMES, DISRUPTION_CONTROLLER } from "../../../src/controllers/index.ts";
import { startTestEnv } from "../../../src/testenv/testenv.ts";
import { Kubectl } from "../../e2e/helpers/kubectl.ts";
import { freshNamespace } from "../../helpers/namespace.ts";
import { startForFile } from "../../helpers/test-server.ts";
import { eventually, startControllers } from "../helpers.ts";
import { type PodsReady, startPodsReady } from "../workloads/pods-ready.ts";

const env = startForFile(() => startTestEnv({ controllers: false }));
startForFile(() =>
  startControllers({
    restConfig: env.config,
    disabled: BUILTIN_CONTROLLER_NAMES.filter((n) => n !== DISRUPTION_CONTROLLER),
  }),
);

const NODE = { apiVersion: "v1", kind: "Node" } as const;
const POD = { apiVersion: "v1", kind: "Pod" } as const;
const RS = { apiVersion: "apps/v1", kind: "ReplicaSet" } as const;
const PDB = { apiVersion: "policy/v1", kind: "PodDisruptionBudget" } as const;

const stops: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const s of stops) await s();
});

function stamp(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, "Z");
}

let seq = 0;
/** A Ready Node, as its agent registers it. */
async function makeNode(client: Client = env.client): Promise<string> {
  const name = `drain-${process.pid}-${++seq}`;
  const node = await client.create<Node>({ ...NODE, metadata: { name } });
  const t = stamp();
  await client.updateStatus<Node>({
    ...node,
    status: {
      conditions: [
        {
          type: "Ready",
          status: "True",
          reason: "KubeletReady",
          message: "kubelet is posting ready status",
          lastHeartbeatTime: t,
          lastTransitionTime: t,
        },
      ],
    },
  });
  return name;
}

/**
 * The kubelet's part in a namespace: Pods marked Running and Ready, and a Pod
 * being deleted removed (grace 0, uid precondition) once its node has
 * "stopped" it.
 */
function kubelet(client: Client, ns: string): void {
  const ready: PodsReady = startPodsReady(client, ns);
  const stop = new AbortController();
  const informer = new Informer<Pod>(client, POD, { namespace: ns });
  const remove = (p: Pod) => {
    if (!p.metadata.deletionTimestamp || stop.signal.aborted) return;
    void client
      .delete(POD, p.metadata.name ?? "", ns, {
        gracePeriodSeconds: 0,
        preconditions: { uid: p.metadata.uid },
      })
      .catch((e: unknown) => {
        if (!isNotFound(e) && !isConflict(e)) throw e;
      });
  };
  informer.addEventHandler({ onAdd: remove, onUpdate: (_, p) => remove(p) });
  informer.start(stop.signal);
  stops.push(async () => {
    stop.abort();
    await ready.stop();
  });
}

/** A ReplicaSet object and `n` of its Pods bound to `node` (no ReplicaSet controller runs). */
async function replicaSetPods(
  ns: string,
  name: string,
  nodes: string[],
  opts: { emptyDir?: boolean; client?: Client } = {},
): Promise<string[]> {
  const client = opts.client ?? env.client;
  const rs = await client.create<KubeObject>({
    ...RS,
    metadata: { name, namespace: ns },
    spec: {
      replicas: nodes.length,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: "c", image: "nginx:1.27" }] },
      },
    },
  });
  const names: string[] = [];
  for (const [i, nodeName] of nodes.entries()) {
    const pod = `${name}-${i}`;
    await client.create<Pod>({
      ...POD,
      metadata: {
        name: pod,
        namespace: ns,
        labels: { app: name },
        ownerReferences: [
          {
            apiVersion: "apps/v1",
            kind: "ReplicaSet",
            name,
            uid: rs.metadata.uid ?? "",
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec: {
        nodeName,
        containers: [{ name: "c", image: "nginx:1.27" }],
        ...(opts.emptyDir ? { volumes: [{ name: "scratch", emptyDir: {} }] } : {}),
      },
    });
    names.push(pod);
  }
  return names;
}

async function allowed(ns: string, name: string, n: number): Promise<void> {
  await eventually(async () => {
    const b = await env.client.get<KubeObject>(PDB, name, ns);
    const s = b.status as { disruptionsAllowed?: number; currentHealthy?: number } | undefined;
    return s?.disruptionsAllowed === n && (s.currentHealthy ?? 0) > 0 ? true : undefined;
  }, `budget ${name} allowing ${n}`);
}

async function exists(ns: string, name: string): Promise<boolean> {
  try {
    await env.client.get(POD, name, ns);
    return true;
  } catch (e) {
    if (isNotFound(e)) return false;
    throw e;
  }
}

describe("kubectl drain", () => {
  let k: Kubectl;
  beforeAll(() => {
    k = new Kubectl(env.kubeconfigPath);
  });
  afterAll(async () => {
    await k?.close();
  });

  it("cordons the node, evicts its Pods within their budget and waits until they are gone", async () => {
    const ns = await freshNamespace(env.client);
    const [node, other] = [await makeNode(), await makeNode()];
    kubelet(env.client, ns);
    const web = await replicaSetPods(ns, "web", [node, node, other], { emptyDir: true });
    expect(
      await k.ok(["create", "pdb", "web", "-n", ns, "--selector=app=web", "--min-available=1"]),
    ).toBe("poddisruptionbudget.policy/web created\n");
    await allowed(ns, "web", 2);
    expect(await k.ok(["get", "pdb", "web", "-n", ns])).toMatch(
      /^NAME\s+MIN AVAILABLE\s+MAX UNAVAILABLE\s+ALLOWED DISRUPTIONS\s+AGE\nweb\s+1\s+N\/A\s+2\s+\d+s\n$/,
    );

    const r = await k.run(
      ["drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=60s"],
      { timeoutMs: 90_000 },
    );
    expect(r.code, `${r.stderr}${r.stdout}`).toBe(0);
    const lines = r.stdout.split("\n").filter(Boolean);
    expect(lines[0]).toBe(`node/${node} cordoned`);
    for (const p of [web[0], web[1]]) {
      expect(lines).toContain(`evicting pod ${ns}/${p}`);
      expect(lines).toContain(`pod/${p} evicted`);
    }
    expect(lines.at(-1)).toBe(`node/${node} drained`);
    expect(r.stdout).not.toContain(web[2]);

    expect(await exists(ns, web[0])).toBe(false);
    expect(await exists(ns, web[1])).toBe(false);
    expect(await exists(ns, web[2])).toBe(true);
    const n = await env.client.get<Node>(NODE, node);
    expect(n.spec?.unschedulable).toBe(true);
    expect(await k.ok(["get", "node", node, "--no-headers"])).toMatch(
      new RegExp(`^${node}\\s+Ready,SchedulingDisabled\\s`),
    );
    expect(await k.ok(["uncordon", node])).toBe(`node/${node} uncordoned\n`);
  });

  it("retries an eviction a budget refuses and gives up at --timeout, as kubectl reports it", async () => {
    const ns = await freshNamespace(env.client);
    const node = await makeNode();
    kubelet(env.client, ns);
    const [held] = await replicaSetPods(ns, "db", [node]);
    await env.client.create<KubeObject>({
      ...PDB,
      metadata: { name: "db", namespace: ns },
      spec: { minAvailable: 1, selector: { matchLabels: { app: "db" } } },
    });
    await eventually(async () => {
      const b = await env.client.get<KubeObject>(PDB, "db", ns);
      return (b.status as { currentHealthy?: number } | undefined)?.currentHealthy === 1
        ? true
        : undefined;
    }, "budget db with its Pod healthy");

    const started = Date.now();
    const r = await k.run(
      ["drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=7s"],
      { timeoutMs: 60_000 },
    );
    const took = Date.now() - started;
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`node/${node} cordoned\nevicting pod ${ns}/${held}\n`);
    const retry = `error when evicting pods/"${held}" -n "${ns}" (will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget.`;
    expect(r.stderr.split("\n").filter((l) => l === retry).length).toBeGreaterThanOrEqual(1);
    expect(r.stderr).toContain(
      `There are pending pods in node "${node}" when an error occurred: error when evicting pods/"${held}" -n "${ns}": global timeout reached: 7s\npod/${held}\n`,
    );
    expect(r.stderr).toContain(
      `error: unable to drain node "${node}" due to error: error when evicting pods/"${held}" -n "${ns}": global timeout reached: 7s, continuing command...`,
    );
    expect(took).toBeGreaterThanOrEqual(7_000);
    // The Pod stays, untouched; the node stays cordoned.
    const p = await env.client.get<Pod>(POD, held, ns);
    expect(p.metadata.deletionTimestamp).toBeUndefined();
    expect(p.status?.conditions?.some((c) => c.type === "DisruptionTarget")).toBe(false);
    expect((await env.client.get<Node>(NODE, node)).spec?.unschedulable).toBe(true);
  });

  it("is what kubectl 1.27 and 1.33 do too", async () => {
    for (const minor of [27, 33]) {
      const other = await startTestEnv({ controllers: false, kubernetesMinor: minor });
      const kk = new Kubectl(other.kubeconfigPath);
      try {
        const ns = await freshNamespace(other.client);
        const node = await makeNode(other.client);
        kubelet(other.client, ns);
        const [pod] = await replicaSetPods(ns, "app", [node], { client: other.client });
        const r = await kk.run(["drain", node, "--ignore-daemonsets", "--timeout=60s"], {
          timeoutMs: 90_000,
        });
        expect(r.code, `kubectl 1.${minor}: ${r.stderr}${r.stdout}`).toBe(0);
        expect(r.stdout).toBe(
          `node/${node} cordoned\nevicting pod ${ns}/${pod}\npod/${pod} evicted\nnode/${node} drained\n`,
        );
        expect((await kk.ok(["version", "-o", "json"])).includes(`"minor": "${minor}"`)).toBe(true);
      } finally {
        await kk.close();
        await other.stop();
      }
    }
  });
});
