/**
 * Containers' memory and CPU limits through cgroups, with a real apiserver and
 * real processes: a container with a 50Mi memory limit that allocates 200Mi is
 * killed by the kernel's OOM killer and reported OOMKilled (exit code 137) with
 * restartCount and lastState as Kubernetes shows them; a 100m CPU limit and a
 * 50m request are the quota and shares read back from the cgroup files; the
 * cgroup outlives an agent restart (the adopted process keeps it) and is removed
 * when the container ends. An agent given a cgroup root it cannot use (as on a
 * machine without writable cgroups) reports limits as not enforced (its start
 * log and a Node Event) and runs the same Pods without them.
 *
 * The enforcing half needs root and a writable cgroup v1 or v2 hierarchy (CI has
 * both); elsewhere it is skipped, and the not-enforced half still runs.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { KubeObject, Pod } from "@setpoint/api";
import { Client, type RuntimeLogger } from "@setpoint/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Agent } from "../../src/agent/index.ts";
import { Cgroups } from "../../src/agent/pods/index.ts";
import { startTestEnv, type TestEnv } from "../../src/testenv/index.ts";
import { Kubectl } from "../e2e/helpers/kubectl.ts";
import { eventually, removeTempDirs, tempDir, testImageStore } from "./helpers.ts";

const POD = { apiVersion: "v1", kind: "Pod" } as const;
const EVENT = { apiVersion: "v1", kind: "Event" } as const;
const NODE = "limits-node";
const BARE_NODE = "limits-bare-node";

let env: TestEnv;
let client: Client;
let kubectl: Kubectl;
let imageDir: string;
const agents: Agent[] = [];
const enforcedHere = new Cgroups({ nodeName: NODE }).enforced;

function logger(lines: string[]): RuntimeLogger {
  const put = (_fields: unknown, msg?: string) => {
    if (msg) lines.push(msg);
  };
  return { debug() {}, info: put, warn: put, error: put };
}

const dataDirs = new Map<Agent, string>();

function newAgent(
  nodeName: string,
  podRange: number,
  extra: { cgroupRoot?: string; dataDir?: string } = {},
) {
  const lines: string[] = [];
  const dataDir = extra.dataDir ?? join(tempDir("setpoint-limits-"), nodeName);
  const agent = new Agent({
    client,
    nodeName,
    dataDir,
    imageDir,
    podRange,
    restartBackoff: { initialMs: 200, maxMs: 1_000 },
    serviceProxy: false,
    logger: logger(lines),
    ...(extra.cgroupRoot ? { cgroupRoot: extra.cgroupRoot } : {}),
  });
  agents.push(agent);
  dataDirs.set(agent, dataDir);
  return { agent, lines };
}

beforeAll(async () => {
  env = await startTestEnv({ controllers: false });
  client = new Client(env.config);
  kubectl = new Kubectl(env.kubeconfigPath);
  imageDir = testImageStore().root;
});

afterAll(async () => {
  for (const a of agents) await a.stop({ stopPods: true });
  await kubectl?.close();
  client?.close();
  await env?.stop();
  removeTempDirs();
});

/** A node program that allocates (and touches) 10 MiB every 10 ms up to 200 MiB, then idles. */
const HOG =
  "const a=[];const t=setInterval(()=>{a.push(Buffer.alloc(10<<20,1));if(a.length>=20){clearInterval(t);console.log('allocated 200Mi');setInterval(()=>{},1e6)}},10)";

function pod(
  name: string,
  nodeName: string,
  command: string[],
  resources: NonNullable<NonNullable<Pod["spec"]>["containers"]>[number]["resources"],
  restartPolicy: "Always" | "Never" = "Always",
): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default" },
    spec: {
      nodeName,
      restartPolicy,
      terminationGracePeriodSeconds: 2,
      containers: [{ name: "main", image: "shell:1", command, resources }],
    },
  };
}

type NodeEvent = KubeObject & {
  reason?: string;
  type?: string;
  message?: string;
  involvedObject?: { kind?: string; name?: string };
};

const status = (p: Pod) => p.status?.containerStatuses?.[0];
const read = (dir: string, file: string) => readFileSync(join(dir, file), "utf8").trim();

describe.skipIf(!enforcedHere)("limits enforced with cgroups", () => {
  let agent: Agent;
  let lines: string[];

  beforeAll(async () => {
    ({ agent, lines } = newAgent(NODE, 91));
    await agent.start();
    await agent.waitForSync();
  });

  it("says so at start and in a Node Event", async () => {
    expect(agent.cgroups.support.enforced).toBe(true);
    expect(lines.some((l) => l.startsWith("resource limits are enforced: cgroup v"))).toBe(true);
    const event = await eventually("the Node's ResourceLimitsEnforced event", async () => {
      const list = await client.list<NodeEvent>(EVENT, { namespace: "default" });
      return list.items.find(
        (e) => e.reason === "ResourceLimitsEnforced" && e.involvedObject?.name === NODE,
      );
    });
    expect(event).toMatchObject({ type: "Normal", involvedObject: { kind: "Node" } });
    expect(event.message).toMatch(/^Containers' memory and CPU limits are enforced with cgroup v/);
  });

  it("OOM-kills a container that allocates past its memory limit, as Kubernetes reports it", async () => {
    await client.create(
      pod("hog", NODE, ["node", "-e", HOG], { limits: { memory: "50Mi" } }, "Always"),
    );
    const p = await eventually(
      "an OOMKilled restart",
      async () => {
        const got = await client.get<Pod>(POD, "hog", "default");
        const s = status(got);
        return s && s.restartCount >= 1 && s.lastState?.terminated ? got : undefined;
      },
      60_000,
    );
    const s = status(p);
    expect(s?.lastState?.terminated).toEqual({
      exitCode: 137,
      reason: "OOMKilled",
      startedAt: expect.any(String),
      finishedAt: expect.any(String),
      containerID: expect.stringMatching(/^setpoint:\/\//),
    });
    // kubectl reads it as it reads a kubelet's.
    const out = await kubectl.run([
      "get",
      "pod",
      "hog",
      "-o",
      "jsonpath={.status.containerStatuses[0].lastState.terminated.reason} {.status.containerStatuses[0].lastState.terminated.exitCode}",
    ]);
    expect(out.stdout).toBe("OOMKilled 137");
    await client.delete(POD, "hog", "default", { gracePeriodSeconds: 0 });
  });

  it("with restartPolicy Never the Pod fails with the container terminated as OOMKilled", async () => {
    await client.create(
      pod("hog-once", NODE, ["node", "-e", HOG], { limits: { memory: "50Mi" } }, "Never"),
    );
    const p = await eventually(
      "Failed",
      async () => {
        const got = await client.get<Pod>(POD, "hog-once", "default");
        return got.status?.phase === "Failed" ? got : undefined;
      },
      60_000,
    );
    expect(status(p)).toMatchObject({
      restartCount: 0,
      state: { terminated: { exitCode: 137, reason: "OOMKilled" } },
      lastState: {},
    });
    const out = await kubectl.run(["get", "pod", "hog-once", "--no-headers"]);
    expect(out.stdout).toMatch(/^hog-once\s+0\/1\s+OOMKilled\s+0\s/);
  });

  it("sets the CPU quota and shares and the memory limit, keeps the cgroup across an agent restart, removes it at the end", async () => {
    const created = await client.create<Pod>(
      pod("capped", NODE, ["sleep", "600"], {
        limits: { cpu: "100m", memory: "64Mi" },
        requests: { cpu: "50m", memory: "32Mi" },
      }),
    );
    await eventually("Running", async () => {
      const got = await client.get<Pod>(POD, "capped", "default");
      return status(got)?.state?.running ? got : undefined;
    });
    const id = `${created.metadata.uid}_main_0`;
    const cpu = agent.cgroups.path(id, "cpu") as string;
    const memory = agent.cgroups.path(id, "memory") as string;
    const pid = agent.workers.get(created.metadata.uid ?? "")?.record.containers[0].process
      ?.pid as number;
    expect(pid).toBeGreaterThan(0);
    if (agent.cgroups.support.version === "v2") {
      expect(read(cpu, "cpu.max")).toBe("10000 100000");
      expect(read(cpu, "cpu.weight")).toBe("2"); // shares 51
      expect(read(memory, "memory.max")).toBe(String(64 * 1024 * 1024));
    } else {
      expect(read(cpu, "cpu.cfs_quota_us")).toBe("10000");
      expect(read(cpu, "cpu.cfs_period_us")).toBe("100000");
      expect(read(cpu, "cpu.shares")).toBe("51");
      expect(read(memory, "memory.limit_in_bytes")).toBe(String(64 * 1024 * 1024));
    }
    // The process itself (sleep, exec'd by the wrapper: same pid) is in both.
    expect(read(cpu, "cgroup.procs").split("\n")).toContain(String(pid));
    expect(read(memory, "cgroup.procs").split("\n")).toContain(String(pid));
    expect(readFileSync(`/proc/${pid}/comm`, "utf8").trim()).toBe("sleep");

    // An agent restart: the process is adopted and keeps its cgroup.
    await agent.stop();
    ({ agent, lines } = newAgent(NODE, 91, { dataDir: dataDirs.get(agent) }));
    await agent.start();
    expect(agent.workers.get(created.metadata.uid ?? "")?.record.containers[0].process?.pid).toBe(
      pid,
    );
    expect(read(cpu, "cgroup.procs").split("\n")).toContain(String(pid));
    expect(lines).toContain(`resource limits are enforced: ${agent.cgroups.support.detail}`);

    await client.delete(POD, "capped", "default", { gracePeriodSeconds: 1 });
    await eventually("the cgroup removed", () => !existsSync(cpu) && !existsSync(memory), 30_000);
  });
});

describe("limits not enforced where cgroups cannot be written", () => {
  it("reports it at start and in a Node Event, and runs Pods without them", async () => {
    const root = tempDir("setpoint-no-cgroups-");
    const { agent, lines } = newAgent(BARE_NODE, 92, { cgroupRoot: root });
    await agent.start();
    await agent.waitForSync();
    expect(agent.cgroups.support).toEqual({
      enforced: false,
      detail: `no cgroup v1 or v2 memory controller at ${root}`,
    });
    expect(lines).toContain(
      `resource limits are not enforced: no cgroup v1 or v2 memory controller at ${root}`,
    );
    const event = await eventually("the Node's ResourceLimitsNotEnforced event", async () => {
      const list = await client.list<NodeEvent>(EVENT, { namespace: "default" });
      return list.items.find(
        (e) => e.reason === "ResourceLimitsNotEnforced" && e.involvedObject?.name === BARE_NODE,
      );
    });
    expect(event).toMatchObject({
      type: "Warning",
      involvedObject: { kind: "Node" },
      message: `Containers' memory and CPU limits are not enforced: no cgroup v1 or v2 memory controller at ${root}`,
    });
    const created = await client.create<Pod>(
      pod("unlimited", BARE_NODE, ["sleep", "600"], { limits: { cpu: "100m", memory: "50Mi" } }),
    );
    await eventually("Running", async () => {
      const got = await client.get<Pod>(POD, "unlimited", "default");
      return status(got)?.state?.running ? got : undefined;
    });
    const proc = agent.workers.get(created.metadata.uid ?? "")?.record.containers[0].process;
    expect(proc?.pid).toBeGreaterThan(0);
    expect(proc?.cgroup).toBeUndefined();
    expect(readFileSync(`/proc/${proc?.pid}/cgroup`, "utf8")).not.toMatch(/setpoint-/);
    await client.delete(POD, "unlimited", "default", { gracePeriodSeconds: 1 });
  });
});
