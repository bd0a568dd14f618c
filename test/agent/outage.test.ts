/**
 * THE OUTAGE TEST: the data plane keeps serving with the control plane gone.
 *
 * Three Pods serving HTTP run on a real `setpoint agent` process against a real
 * `setpoint up`. Then, with every Pod polled over HTTP all along (requests and
 * failures counted per Pod, and printed): the apiserver is killed with SIGKILL;
 * one Pod's process is killed (the agent restarts it from its on-disk state); the
 * agent itself is restarted (it adopts the running processes: same pids, none
 * duplicated); the apiserver is started again; the Pods' status converges (all
 * Ready, the killed one with one restart). The process table holds exactly the
 * Pods' processes before and after. Every process is stopped at the end.
 *
 * Short by default; AGENT_OUTAGE_LONG=1 holds each outage phase for 30 s.
 */
import type { ChildProcess } from "node:child_process";
import type { Pod } from "@setpoint/api";
import { Client, loadKubeconfig } from "@setpoint/runtime";
import { afterAll, describe, expect, it } from "vitest";
import { groupMembers } from "../../src/agent/pods/proc.ts";
import { type SetpointProcess, startSetpoint } from "../e2e/helpers/setpoint.ts";
import {
  type AgentProcess,
  agentPods,
  killPodProcesses,
  podProcesses as podProcesses_,
  startAgentProcess,
  stopChild,
  stopServiceProxies,
} from "./agent-process.ts";
import { eventually, removeTempDirs, tempDir, testImageStore } from "./helpers.ts";

const LONG = process.env.AGENT_OUTAGE_LONG === "1";
const HOLD_MS = LONG ? 30_000 : 1_000;
const RANGE = 79;
const POD = { apiVersion: "v1", kind: "Pod" } as const;

const podProcesses = () => podProcesses_(RANGE);
const children: ChildProcess[] = [];
let up: SetpointProcess | undefined;

async function startAgent(
  kubeconfig: string,
  dataDir: string,
  imageDir: string,
): Promise<AgentProcess> {
  const agent = await startAgentProcess({
    kubeconfig,
    nodeName: "outage-node",
    dataDir,
    imageDir,
    range: RANGE,
  });
  children.push(agent.child);
  return agent;
}

/** Polls every Pod over HTTP until stopped, counting requests and failures per Pod. */
function load(targets: { name: string; ip: string }[]) {
  const counts = new Map(targets.map((t) => [t.name, { requests: 0, failures: 0 }]));
  let running = true;
  const loops = targets.map(async (t) => {
    const c = counts.get(t.name)!;
    while (running) {
      c.requests++;
      try {
        const res = await fetch(`http://${t.ip}:8080/`, { signal: AbortSignal.timeout(1_000) });
        const text = await res.text();
        if (!text.startsWith(`hello from ${t.name}`)) c.failures++;
      } catch {
        c.failures++;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  });
  return {
    counts,
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

afterAll(async () => {
  for (const c of children) await stopChild(c);
  await up?.stop();
  // Whatever is left of the Pods (the agent leaves them running by design).
  await stopServiceProxies();
  killPodProcesses(RANGE);
  removeTempDirs();
});

describe("an apiserver outage", () => {
  it(
    "never stops a Pod from answering; the agent restarts and adopts from disk; status converges",
    async () => {
      expect(podProcesses()).toEqual([]);
      const upDir = tempDir("setpoint-outage-up-");
      const agentDir = tempDir("setpoint-outage-agent-");
      const imageDir = testImageStore().root;
      up = await startSetpoint(["--data-dir", upDir]);
      const port = new URL(up.url).port;
      const kubeconfig = up.kubeconfig;
      let agent = await startAgent(kubeconfig, agentDir, imageDir);
      const client = new Client(loadKubeconfig({ path: kubeconfig }));
      try {
        const names = ["web-a", "web-b", "web-c"];
        for (const name of names) {
          await client.create<Pod>({
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name, namespace: "default" },
            spec: {
              nodeName: "outage-node",
              containers: [
                {
                  name: "web",
                  image: "hello:1.0",
                  readinessProbe: { httpGet: { path: "/healthz", port: 8080 }, periodSeconds: 1 },
                },
              ],
            },
          });
        }
        const ready = async () => {
          const pods = (await client.list<Pod>(POD, { namespace: "default" })).items;
          return pods.length === 3 &&
            pods.every((p) =>
              p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
            )
            ? pods
            : undefined;
        };
        const before = await eventually("three Ready pods", ready, 30_000);
        const ips = new Map(before.map((p) => [p.metadata.name ?? "", p.status?.podIP ?? ""]));
        const pidsBefore = (await agentPods(agent.endpoint)).map((p) => p.containers[0].pid);
        expect(podProcesses()).toEqual([...pidsBefore].sort((a, b) => (a ?? 0) - (b ?? 0)));

        const traffic = load(names.map((name) => ({ name, ip: ips.get(name) ?? "" })));
        await new Promise((r) => setTimeout(r, 300));

        // 1. The apiserver dies.
        await up.stop("SIGKILL");
        await new Promise((r) => setTimeout(r, HOLD_MS));

        // 2. One Pod's process dies: the agent restarts it (no apiserver to ask).
        const victim = (await agentPods(agent.endpoint)).find((p) => p.name === "web-b");
        const victimPid = victim?.containers[0].pid ?? 0;
        process.kill(-victimPid, "SIGKILL");
        const restarted = await eventually("web-b restarted", async () => {
          const p = (await agentPods(agent.endpoint)).find((x) => x.name === "web-b");
          const pid = p?.containers[0].pid;
          return pid && pid !== victimPid ? p : undefined;
        });
        expect(restarted.containers[0].restartCount).toBe(1);
        await eventually("web-b answering again", async () => {
          const res = await fetch(`http://${ips.get("web-b")}:8080/`).catch(() => undefined);
          return res?.ok;
        });
        await new Promise((r) => setTimeout(r, HOLD_MS));

        // 3. The agent restarts, still without an apiserver: it adopts what runs.
        const running = (await agentPods(agent.endpoint)).map((p) => p.containers[0].pid);
        await stopChild(agent.child);
        expect(podProcesses()).toEqual([...running].sort((a, b) => (a ?? 0) - (b ?? 0)));
        agent = await startAgent(kubeconfig, agentDir, imageDir);
        const adopted = (await agentPods(agent.endpoint)).map((p) => p.containers[0].pid);
        expect(adopted).toEqual(running);
        expect(agent.output()).toMatch(/"adopted":3,"restarted":0/);
        await new Promise((r) => setTimeout(r, HOLD_MS));

        // 4. The apiserver comes back on the same address and data.
        up = await startSetpoint(["--listen", `127.0.0.1:${port}`, "--data-dir", upDir]);
        expect(new URL(up.url).port).toBe(port);
        const after = await eventually(
          "status to converge",
          async () => {
            const pods = await ready();
            const b = pods?.find((p) => p.metadata.name === "web-b");
            return b?.status?.containerStatuses?.[0].restartCount === 1 ? pods : undefined;
          },
          30_000,
        );
        await traffic.stop();

        const report = [...traffic.counts].map(
          ([name, c]) => `${name}: ${c.requests} requests, ${c.failures} failed`,
        );
        process.stdout.write(`outage test (${LONG ? "long" : "short"}): ${report.join("; ")}\n`);
        for (const name of ["web-a", "web-c"]) {
          expect(traffic.counts.get(name)?.failures).toBe(0);
        }
        expect(traffic.counts.get("web-b")?.requests).toBeGreaterThan(10);
        for (const p of after) expect(p.status?.podIP).toBe(ips.get(p.metadata.name ?? ""));
        const final = (await agentPods(agent.endpoint)).map((p) => p.containers[0].pid);
        expect(final).toEqual(running);
        expect(podProcesses()).toEqual([...final].sort((a, b) => (a ?? 0) - (b ?? 0)));
        for (const pid of final) expect(groupMembers(pid ?? 0)).toEqual([pid]);
      } finally {
        client.close();
      }
    },
    LONG ? 300_000 : 90_000,
  );
});
