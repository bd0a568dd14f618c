/**
 * The agent against a real apiserver: it registers its Node and Lease, runs a
 * Pod bound to it (spec.nodeName set at create) as a process, reports it
 * Running and Ready with its address through the status subresource (one write per
 * change), makes its environment from ConfigMaps, reports a missing image as
 * kubectl shows it, and on `kubectl delete` stops the process and removes the
 * object. Stopped without stopping its Pods, a new agent on the same data dir
 * adopts them.
 */
import type { Node, Pod } from "@setpoint/api";
import { Client } from "@setpoint/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Agent } from "../../src/agent/index.ts";
import { isAlive } from "../../src/agent/pods/index.ts";
import { startTestEnv, type TestEnv } from "../../src/testenv/index.ts";
import { Kubectl } from "../e2e/helpers/kubectl.ts";
import { eventually, httpText, removeTempDirs, tempDir, testImageStore } from "./helpers.ts";

const POD = { apiVersion: "v1", kind: "Pod" } as const;
let env: TestEnv;
let client: Client;
let kubectl: Kubectl;
let dataDir: string;
let imageDir: string;
const agents: Agent[] = [];

function newAgent(): Agent {
  const a = new Agent({
    client,
    nodeName: "node-a",
    dataDir,
    imageDir,
    podRange: 78,
    restartBackoff: { initialMs: 200, maxMs: 1_000 },
  });
  agents.push(a);
  return a;
}

beforeAll(async () => {
  env = await startTestEnv({ controllers: false });
  client = new Client(env.config);
  kubectl = new Kubectl(env.kubeconfigPath);
  dataDir = tempDir("setpoint-agent-data-");
  imageDir = testImageStore().root;
});

afterAll(async () => {
  for (const a of agents) await a.stop({ stopPods: true });
  await kubectl?.close();
  client?.close();
  await env?.stop();
  removeTempDirs();
});

function helloPod(name: string, extra: Partial<NonNullable<Pod["spec"]>> = {}): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default" },
    spec: {
      nodeName: "node-a",
      terminationGracePeriodSeconds: 5,
      containers: [
        {
          name: "web",
          image: "hello:1.0",
          ports: [{ containerPort: 8080 }],
          readinessProbe: { httpGet: { path: "/healthz", port: 8080 }, periodSeconds: 1 },
        },
      ],
      ...extra,
    },
  };
}

const readyOf = (p: Pod) => p.status?.conditions?.find((c) => c.type === "Ready")?.status;

describe("the agent", () => {
  let agent: Agent;

  it("registers its Node with the kubelet's conditions, and its Lease", async () => {
    agent = newAgent();
    await agent.start();
    await agent.waitForSync();
    const node = await eventually("the node", () =>
      client.get<Node>({ apiVersion: "v1", kind: "Node" }, "node-a").catch(() => undefined),
    );
    const ready = await eventually("Ready", async () => {
      const n = await client.get<Node>({ apiVersion: "v1", kind: "Node" }, "node-a");
      return n.status?.conditions?.find((c) => c.type === "Ready");
    });
    expect(ready).toMatchObject({ status: "True", reason: "KubeletReady" });
    const n = await client.get<Node>({ apiVersion: "v1", kind: "Node" }, "node-a");
    expect(n.status?.conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([
      ["MemoryPressure", "False", "KubeletHasSufficientMemory"],
      ["DiskPressure", "False", "KubeletHasNoDiskPressure"],
      ["PIDPressure", "False", "KubeletHasSufficientPID"],
      ["Ready", "True", "KubeletReady"],
    ]);
    expect(n.status?.capacity?.pods).toBe("110");
    expect(Number(n.status?.allocatable?.cpu)).toBeGreaterThan(0);
    expect(n.status?.daemonEndpoints?.kubeletEndpoint?.Port).toBe(agent.securePort);
    expect(n.metadata.labels?.["kubernetes.io/hostname"]).toBe("node-a");
    const lease = await eventually("the lease", () =>
      client
        .get({ apiVersion: "coordination.k8s.io/v1", kind: "Lease" }, "node-a", "kube-node-lease")
        .catch(() => undefined),
    );
    expect((lease as { spec?: { holderIdentity?: string } }).spec?.holderIdentity).toBe("node-a");
    expect(lease.metadata.ownerReferences?.[0]).toMatchObject({
      kind: "Node",
      uid: node.metadata.uid,
    });
  });

  it("runs a Pod bound to it and reports it Running and Ready with its address", async () => {
    await client.create(helloPod("web-1"));
    const pod = await eventually("Ready", async () => {
      const p = await client.get<Pod>(POD, "web-1", "default");
      return readyOf(p) === "True" ? p : undefined;
    });
    expect(pod.status?.phase).toBe("Running");
    expect(pod.status?.podIP).toMatch(/^127\.78\.\d+\.\d+$/);
    expect(pod.status?.hostIP).toBe("127.0.0.1");
    expect(pod.status?.containerStatuses?.[0]).toMatchObject({
      name: "web",
      ready: true,
      started: true,
      restartCount: 0,
      image: "hello:1.0",
      imageID: expect.stringMatching(/^sha256:[a-f0-9]{64}$/),
      state: { running: { startedAt: expect.any(String) } },
    });
    expect(await httpText(`http://${pod.status?.podIP}:8080/`)).toBe(
      "hello from web-1 (version 1.0)\n",
    );
    const out = await kubectl.run(["get", "pod", "web-1", "-o", "wide", "--no-headers"]);
    expect(out.stdout).toMatch(/^web-1\s+1\/1\s+Running\s+0\s+\S+\s+127\.78\.\d+\.\d+\s+node-a/);
    const events = await eventually("a Started event", async () => {
      const r = await kubectl.run([
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=web-1",
      ]);
      return r.stdout.includes("Started") ? r.stdout : undefined;
    });
    expect(events).toMatch(/Normal\s+Started\s+pod\/web-1\s+Started container web/);
    // Nothing changes: nothing is written.
    const writes = agent.statusWrites;
    await new Promise((r) => setTimeout(r, 2_500));
    expect(agent.statusWrites).toBe(writes);
  });

  it("reads a ConfigMap into the environment", async () => {
    await client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "greeting", namespace: "default" },
      data: { VERSION: "from-configmap" },
    } as Pod);
    await client.create(
      helloPod("web-cm", {
        containers: [
          {
            name: "web",
            image: "hello:1.0",
            envFrom: [{ configMapRef: { name: "greeting" } }],
            readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
          },
        ],
      }),
    );
    const pod = await eventually("Ready", async () => {
      const p = await client.get<Pod>(POD, "web-cm", "default");
      return readyOf(p) === "True" ? p : undefined;
    });
    expect(await httpText(`http://${pod.status?.podIP}:8080/`)).toBe(
      "hello from web-cm (version from-configmap)\n",
    );
  });

  it("shows a missing image as kubectl shows ErrImagePull", async () => {
    await client.create(
      helloPod("nope", { containers: [{ name: "c", image: "does-not-exist:1" }] }),
    );
    const out = await eventually("ErrImagePull", async () => {
      const r = await kubectl.run(["get", "pod", "nope", "--no-headers"]);
      return /ErrImagePull|ImagePullBackOff/.test(r.stdout) ? r.stdout : undefined;
    });
    expect(out).toMatch(/^nope\s+0\/1\s+(ErrImagePull|ImagePullBackOff)\s+0/);
    await client.delete(POD, "nope", "default");
  });

  it("stops the process on kubectl delete and removes the object", async () => {
    const worker = [...agent.workers.values()].find((w) => w.record.pod.metadata.name === "web-1");
    const proc = worker?.record.containers[0].process;
    expect(proc && isAlive(proc)).toBe(true);
    const res = await kubectl.run(["delete", "pod", "web-1", "--wait=true"]);
    expect(res.stderr).toBe("");
    expect(res.stdout).toBe('pod "web-1" deleted\n');
    expect(proc && isAlive(proc)).toBe(false);
    await expect(client.get(POD, "web-1", "default")).rejects.toMatchObject({ code: 404 });
  });

  it("leaves its Pods running when it stops; the next agent adopts them", async () => {
    const before = agent.summary().find((p) => p.name === "web-cm");
    const pid = before?.containers[0].pid;
    expect(pid).toBeGreaterThan(0);
    await agent.stop();
    agents.splice(agents.indexOf(agent), 1);
    const next = newAgent();
    await next.start();
    expect(next.summary().find((p) => p.name === "web-cm")?.containers[0].pid).toBe(pid);
    await next.waitForSync();
    const pod = await client.get<Pod>(POD, "web-cm", "default");
    expect(pod.status?.containerStatuses?.[0].restartCount).toBe(0);
    expect(readyOf(pod)).toBe("True");
    agent = next;
  });
});
