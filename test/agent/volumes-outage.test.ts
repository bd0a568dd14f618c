/**
 * Volumes are part of the agent's last known-good state: with the apiserver gone
 * and the agent restarted, a Pod's volume files are still there, and a container
 * that died meanwhile is restarted from the state on disk and reads its
 * configMap, secret and projected token volumes as before (the ConfigMap, Secret
 * and token are in DATA/state.json; no request reaches an apiserver).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Pod } from "@setpoint/api";
import { Client } from "@setpoint/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Agent } from "../../src/agent/index.ts";
import { isAlive, podLogDir, volumesDir } from "../../src/agent/pods/index.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import { eventually, removeTempDirs, tempDir, testImageStore } from "./helpers.ts";

let env: TestServer | undefined;
let client: Client;
let dataDir: string;
let imageDir: string;
const agents: Agent[] = [];
const clients: Client[] = [];

function newAgent(c: Client): Agent {
  const a = new Agent({
    client: c,
    nodeName: "node-o",
    dataDir,
    imageDir,
    podRange: 82,
    restartBackoff: { initialMs: 200, maxMs: 1_000 },
    volumeSyncMs: 300,
    serviceProxy: false,
  });
  agents.push(a);
  return a;
}

beforeAll(async () => {
  env = await startTestServer({ tls: true });
  client = new Client(env.config);
  clients.push(client);
  dataDir = tempDir("setpoint-agent-volumes-outage-");
  imageDir = testImageStore().root;
});

afterAll(async () => {
  for (const a of agents) await a.stop({ stopPods: true });
  for (const c of clients) c.close();
  await env?.stop();
  removeTempDirs();
});

const read = (p: string) => readFileSync(p, "utf8");

describe("volumes when the apiserver is gone", () => {
  it("keeps the files, and a container restarted from disk during the outage reads them", async () => {
    const agent = newAgent(client);
    await agent.start();
    await agent.waitForSync();
    await client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "cfg", namespace: "default" },
      data: { greeting: "kept" },
    } as unknown as Pod);
    await client.create({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "sec", namespace: "default" },
      stringData: { password: "p4ss" },
    } as unknown as Pod);
    await client.create({
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name: "app", namespace: "default" },
    } as unknown as Pod);
    const created = await client.create<Pod>({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "keep", namespace: "default" },
      spec: {
        nodeName: "node-o",
        serviceAccountName: "app",
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: "main",
            image: "shell:1",
            command: ["sh", "-c"],
            args: [
              'R="$SETPOINT_ROOT"; echo "$(cat $R/etc/cfg/greeting) $(cat $R/etc/sec/password) $(wc -c < $R/var/run/tok/token)" > "$SETPOINT_VOLUME_CACHE/run-$(date +%s%N)"; exec sleep 600',
            ],
            volumeMounts: [
              { name: "cfg", mountPath: "/etc/cfg" },
              { name: "sec", mountPath: "/etc/sec" },
              { name: "tok", mountPath: "/var/run/tok" },
              { name: "cache", mountPath: "/cache" },
            ],
          },
        ],
        volumes: [
          { name: "cfg", configMap: { name: "cfg" } },
          { name: "sec", secret: { secretName: "sec" } },
          { name: "tok", projected: { sources: [{ serviceAccountToken: { path: "token" } }] } },
          { name: "cache", emptyDir: {} },
        ],
      },
    });
    const vols = volumesDir(podLogDir(dataDir, "default", "keep", created.metadata.uid ?? ""));
    const runs = () => readdirSync(join(vols, "cache")).filter((f) => f.startsWith("run-"));
    await eventually("the first run's report", () => runs().length === 1, 30_000);
    const first = read(join(vols, "cache", runs()[0]));
    expect(first).toMatch(/^kept p4ss \d+\n$/);
    const token = read(join(vols, "tok", "token"));
    expect(token.length).toBeGreaterThan(100);

    // The state on disk holds what the volumes read.
    const state = JSON.parse(read(join(dataDir, "state.json")));
    expect(state.configMaps["default/cfg"]).toEqual({ greeting: "kept" });
    expect(state.secrets["default/sec"]).toEqual({ password: "p4ss" });
    expect(Object.values(state.tokens).map((t) => (t as { token: string }).token)).toEqual([token]);

    // The apiserver goes; the agent stops (Pods keep running); the Pod's process dies.
    await env?.stop();
    env = undefined;
    await agent.stop();
    agents.splice(agents.indexOf(agent), 1);
    const proc = agent.workers.get(created.metadata.uid ?? "")?.record.containers[0].process;
    expect(proc && isAlive(proc)).toBe(true);
    if (proc) process.kill(-proc.pid, "SIGKILL");
    await eventually("the process gone", () => proc && !isAlive(proc));
    expect(read(join(vols, "cfg", "greeting"))).toBe("kept");

    // A new agent with no apiserver restarts it from disk; it reads the same files.
    const offline = new Client({ ...client.config });
    clients.push(offline);
    const next = newAgent(offline);
    await next.start();
    await eventually("the restarted run's report", () => runs().length === 2, 30_000);
    for (const f of runs()) expect(read(join(vols, "cache", f))).toBe(first);
    expect(read(join(vols, "tok", "token"))).toBe(token);
    expect(read(join(vols, "sec", "password"))).toBe("p4ss");
    expect(next.workers.get(created.metadata.uid ?? "")?.record.containers[0].restartCount).toBe(1);
    expect(existsSync(join(vols, "cfg", "..data"))).toBe(true);
  }, 120_000);
});
