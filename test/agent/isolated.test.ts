/**
 * The agent's isolated mode (`setpoint agent --isolation=namespaces`), with real
 * processes, a real `setpoint up`, the real kubectl and the machine's real
 * network namespaces, veth pairs and mounts. Runs as root only (CI does); it is
 * skipped with the reason printed elsewhere. Covered: two Pods both listening on
 * 0.0.0.0:8080, each in its own namespace, reached from the host at
 * podIP:8080 (readiness probe and a request); `localhost` between a Pod's
 * containers; a ConfigMap at its real mountPath (/etc/config), read-only, seen by
 * the process and not by the host; `kubectl exec` inside the namespaces; a
 * Service's cluster IP reached from inside a Pod; adoption after an agent restart
 * (same processes, same namespaces); and, once the Pods are deleted and the agent
 * stopped, no namespace, veth, bridge, mount, mount point or process left. Whatever
 * a failed test leaves is removed in afterAll. And as another user, the flag is
 * refused at start with one line, before anything is made.
 */
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import type { Pod } from "@setpoint/api";
import { Client, loadKubeconfig } from "@setpoint/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isolationTools } from "../../src/agent/sandbox/index.ts";
import { Kubectl } from "../e2e/helpers/kubectl.ts";
import { SETPOINT_BIN, type SetpointProcess, startSetpoint } from "../e2e/helpers/setpoint.ts";
import {
  type AgentProcess,
  agentPods,
  killPodProcesses,
  podProcesses,
  startAgentProcess,
  stopChild,
  stopServiceProxies,
} from "./agent-process.ts";
import { eventually, httpText, removeTempDirs, tempDir, testImageStore } from "./helpers.ts";

const RANGE = 213;
const NODE = "isolated-node";
const POD = { apiVersion: "v1", kind: "Pod" } as const;
const SERVICE = { apiVersion: "v1", kind: "Service" } as const;
/** A real mountPath on the host's root file system. */
const MOUNT = "/etc/config";
const mountExisted = existsSync(MOUNT);

const tools = isolationTools();
const skip = typeof tools === "string" ? tools : mountExisted ? `${MOUNT} exists here` : undefined;
if (skip) console.log(`test/agent/isolated.test.ts skipped: the isolated mode ${skip}`);

let dir = "";
let images = "";
let up: SetpointProcess | undefined;
let agent: AgentProcess | undefined;
let client: Client | undefined;
let kubectl: Kubectl | undefined;

const SERVER = `const fs = require("fs");
require("http").createServer((q, s) => s.end(process.env.HOSTNAME + " " + fs.readFileSync("${MOUNT}/greeting", "utf8"))).listen(8080);`;

function webPod(name: string, app: string): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default", labels: { app } },
    spec: {
      nodeName: NODE,
      terminationGracePeriodSeconds: 5,
      volumes: [{ name: "config", configMap: { name: "greeting" } }],
      containers: [
        {
          name: "web",
          image: "shell:1",
          command: ["node", "-e", SERVER],
          ports: [{ containerPort: 8080 }],
          volumeMounts: [{ name: "config", mountPath: MOUNT }],
          readinessProbe: { httpGet: { path: "/", port: 8080 }, periodSeconds: 1 },
        },
        { name: "side", image: "shell:1", command: ["sh", "-c", "exec sleep 3600"] },
      ],
    },
  } as Pod;
}

async function getPod(name: string): Promise<Pod> {
  return client!.get<Pod>(POD, name, "default");
}

function ready(p: Pod): boolean {
  return !!p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
}

/** The network namespaces, veths, bridge and mounts of this test's range on the host. */
function leftovers(): string[] {
  const out: string[] = [];
  const ls = (d: string) => {
    try {
      return readdirSync(d);
    } catch {
      return [];
    }
  };
  for (const n of ls("/run/netns")) if (n.startsWith(`setpoint-${RANGE}-`)) out.push(`netns ${n}`);
  for (const l of ls("/sys/class/net")) {
    if (l.startsWith(`sp${RANGE}v`) || l === `spbr${RANGE}`) out.push(`link ${l}`);
  }
  for (const line of readFileSync("/proc/mounts", "utf8").split("\n")) {
    if (line.includes(`setpoint-${RANGE}-`) || line.includes(MOUNT)) out.push(`mount ${line}`);
  }
  return out;
}

function removeLeftovers(): void {
  for (const thing of leftovers()) {
    const [kind, name] = thing.split(" ");
    if (kind === "netns") spawnSync("ip", ["netns", "del", name]);
    if (kind === "link") spawnSync("ip", ["link", "del", name]);
  }
  if (!mountExisted) {
    try {
      rmdirSync(MOUNT);
    } catch {}
  }
}

async function exec(pod: string, container: string, script: string): Promise<string> {
  return kubectl!.ok(["exec", pod, "-c", container, "--", "sh", "-c", script]);
}

/** Runs `kubectl exec ARGS` until it succeeds; its output. */
function execSucceeds(what: string, args: string[]): Promise<string> {
  return eventually(
    what,
    async () => {
      const r = await kubectl!.run(["exec", ...args]);
      return r.code === 0 && r.stdout;
    },
    30_000,
    250,
  );
}

function netnsInode(pod: Pod): number {
  return statSync(`/run/netns/setpoint-${RANGE}-${pod.metadata.uid}`).ino;
}

function startAgent(extra: string[] = []): Promise<AgentProcess> {
  return startAgentProcess({
    kubeconfig: up!.kubeconfig,
    nodeName: NODE,
    dataDir: join(dir, "agent"),
    imageDir: images,
    range: RANGE,
    args: ["--isolation=namespaces", ...extra],
  });
}

const setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].find((f) => existsSync(f));
describe.skipIf(process.getuid?.() !== 0 || !setpriv)("isolated mode where it cannot run", () => {
  it("refuses at start with one line when not root", () => {
    try {
      const d = tempDir("setpoint-isolated-user-");
      chmodSync(d, 0o755);
      const kubeconfig = join(d, "kubeconfig");
      writeFileSync(
        kubeconfig,
        [
          "apiVersion: v1",
          "kind: Config",
          "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]",
          "users: [{name: u, user: {token: t}}]",
          "contexts: [{name: c, context: {cluster: c, user: u}}]",
          "current-context: c",
        ].join("\n"),
        { mode: 0o644 },
      );
      const r = spawnSync(
        setpriv as string,
        [
          "--reuid=65534",
          "--regid=65534",
          "--clear-groups",
          process.execPath,
          SETPOINT_BIN,
          "agent",
          "--kubeconfig",
          kubeconfig,
          "--data-dir",
          join(d, "agent"),
          "--isolation=namespaces",
        ],
        { encoding: "utf8", timeout: 60_000 },
      );
      expect(r.status).toBe(1);
      expect(r.stderr).toBe(
        "setpoint agent: --isolation=namespaces: needs root (it makes network namespaces, veth pairs and mounts); this agent runs as uid 65534\n",
      );
      expect(existsSync(join(d, "agent"))).toBe(false);
    } finally {
      removeTempDirs();
    }
  }, 90_000);
});

describe.skipIf(skip !== undefined)("isolated mode", () => {
  beforeAll(async () => {
    removeLeftovers();
    dir = tempDir("setpoint-isolated-");
    images = testImageStore(join(dir, "images")).root;
    up = await startSetpoint(["--data-dir", join(dir, "up")]);
    agent = await startAgent();
    client = new Client(loadKubeconfig({ path: up.kubeconfig }));
    kubectl = new Kubectl(up.kubeconfig);
    await kubectl.ok(["create", "configmap", "greeting", "--from-literal=greeting=hello-isolated"]);
    await client.create<Pod>(webPod("web-a", "a"));
    await client.create<Pod>(webPod("web-b", "b"));
  }, 90_000);

  afterAll(async () => {
    await kubectl?.close();
    client?.close();
    if (agent) await stopChild(agent.child);
    killPodProcesses(RANGE, 10);
    await stopServiceProxies();
    await up?.stop();
    removeLeftovers();
    removeTempDirs();
  }, 60_000);

  it("runs two Pods on containerPort 8080, each in its own namespace, reached from the host", async () => {
    const [a, b] = await eventually(
      "both Pods ready",
      async () => {
        const pods = [await getPod("web-a"), await getPod("web-b")];
        return pods.every(ready) && pods;
      },
      30_000,
    );
    expect(a.status?.podIP).toMatch(new RegExp(`^10\\.${RANGE}\\.`));
    expect(b.status?.podIP).toMatch(new RegExp(`^10\\.${RANGE}\\.`));
    expect(a.status?.podIP).not.toBe(b.status?.podIP);
    expect(await httpText(`http://${a.status?.podIP}:8080/`)).toBe("web-a hello-isolated");
    expect(await httpText(`http://${b.status?.podIP}:8080/`)).toBe("web-b hello-isolated");
    // Nothing listens on the host's port 8080 for them.
    expect((await httpText("http://127.0.0.1:8080/", 500)) ?? "").not.toContain("hello-isolated");
    expect(netnsInode(a)).not.toBe(netnsInode(b));
  }, 60_000);

  it("shares the Pod's namespace between its containers and execs inside it", async () => {
    const a = await getPod("web-a");
    // The sidecar reaches the web container on localhost.
    const viaLocalhost = await exec(
      "web-a",
      "side",
      `node -e 'fetch("http://localhost:8080/").then(r => r.text()).then(t => process.stdout.write(t))'`,
    );
    expect(viaLocalhost).toBe("web-a hello-isolated");
    const ns = await exec("web-a", "side", "readlink /proc/self/ns/net");
    expect(ns.trim()).toBe(`net:[${netnsInode(a)}]`);
    expect(ns.trim()).not.toBe(`net:[${statSync("/proc/self/ns/net").ino}]`);
    const exit = await kubectl!.run(["exec", "web-a", "--", "sh", "-c", "exit 3"]);
    expect(exit.code).toBe(3);
  }, 60_000);

  it("mounts a volume at its real mountPath, read-only, seen by the process and not by the host", async () => {
    expect(await exec("web-a", "web", `cat ${MOUNT}/greeting`)).toBe("hello-isolated");
    const write = await kubectl!.run([
      "exec",
      "web-a",
      "-c",
      "web",
      "--",
      "sh",
      "-c",
      `echo x > ${MOUNT}/new`,
    ]);
    expect(write.code).not.toBe(0);
    expect(write.stderr).toContain("Read-only file system");
    // Another container of the Pod does not mount it.
    expect(await exec("web-a", "side", `ls -A ${MOUNT} | wc -l`)).toBe("0\n");
    expect(existsSync(join(MOUNT, "greeting"))).toBe(false);
    expect(readFileSync("/proc/mounts", "utf8")).not.toContain(MOUNT);
  }, 60_000);

  it("reaches a Service's cluster IP from inside a Pod", async () => {
    await client!.create({
      ...SERVICE,
      metadata: { name: "web-a", namespace: "default" },
      spec: { selector: { app: "a" }, ports: [{ port: 80, targetPort: 8080 }] },
    });
    const svc = await client!.get<{ spec?: { clusterIP?: string } } & Pod>(
      SERVICE,
      "web-a",
      "default",
    );
    const ip = svc.spec?.clusterIP ?? "";
    expect(ip).toMatch(/^127\.100\./);
    const script = `node -e 'fetch("http://${ip}:80/").then(r => r.text()).then(t => process.stdout.write(t))'`;
    const answer = await execSucceeds("the cluster IP answering inside web-b", [
      "web-b",
      "-c",
      "side",
      "--",
      "sh",
      "-c",
      script,
    ]);
    expect(answer).toBe("web-a hello-isolated");
  }, 60_000);

  it("adopts the Pods and their namespaces after an agent restart", async () => {
    const before = await agentPods(agent!.endpoint);
    const a = await getPod("web-a");
    const inode = netnsInode(a);
    await stopChild(agent!.child);
    agent = undefined;
    // The Pods keep serving with no agent.
    expect(await httpText(`http://${a.status?.podIP}:8080/`)).toBe("web-a hello-isolated");
    agent = await startAgent(["--stop-pods-on-exit"]);
    const after = await agentPods(agent.endpoint);
    expect(after.map((p) => [p.name, p.podIP, p.containers.map((c) => c.pid)])).toEqual(
      before.map((p) => [p.name, p.podIP, p.containers.map((c) => c.pid)]),
    );
    expect(netnsInode(a)).toBe(inode);
    expect(await httpText(`http://${a.status?.podIP}:8080/`)).toBe("web-a hello-isolated");
    const inside = await execSucceeds("exec through the restarted agent", [
      "web-a",
      "--",
      "cat",
      `${MOUNT}/greeting`,
    ]);
    expect(inside).toBe("hello-isolated");
  }, 90_000);

  it("removes the namespace, veth, mount points and processes with the Pod, and the bridge with the agent", async () => {
    const a = await getPod("web-a");
    await kubectl!.ok(["delete", "pod", "web-a", "--wait=true"]);
    await eventually(
      "web-a's sandbox gone",
      () => !existsSync(`/run/netns/setpoint-${RANGE}-${a.metadata.uid}`),
      30_000,
    );
    // web-b still uses the mount point web-a made.
    expect(existsSync(MOUNT)).toBe(true);
    expect(await exec("web-b", "web", `cat ${MOUNT}/greeting`)).toBe("hello-isolated");
    await kubectl!.ok(["delete", "pod", "web-b", "--wait=true"]);
    await eventually(
      "no sandbox left but the bridge",
      () => {
        const left = leftovers();
        return left.length === 1 && left[0] === `link spbr${RANGE}` && left;
      },
      30_000,
    );
    expect(podProcesses(RANGE, 10)).toEqual([]);
    expect(existsSync(MOUNT)).toBe(false);
    await stopChild(agent!.child);
    agent = undefined;
    expect(leftovers()).toEqual([]);
  }, 90_000);
});
