/**
 * The pod worker with real processes: environment (values, $(VAR), fieldRef,
 * resourceFieldRef, ConfigMaps, Secrets, envFrom), init containers in order,
 * restart policies and the crash-loop back-off, image pull errors, probes driving
 * readiness and restarts, termination (preStop, SIGTERM, grace, SIGKILL, the whole
 * process group), adoption by a new worker, and no process left behind.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Container, Pod, PodSpec } from "@setpoint/api";
import { afterEach, describe, expect, it } from "vitest";
import {
  Backoff,
  containerLogPath,
  groupExists,
  isAlive,
  newPodRecord,
  type PodRecord,
  PodWorker,
  podLogDir,
  podStatus,
} from "../../src/agent/pods/index.ts";
import { eventually, httpText, removeTempDirs, tempDir, testImageStore } from "./helpers.ts";

const workers: PodWorker[] = [];
afterEach(async () => {
  for (const w of workers.splice(0)) await w.terminate(0);
  removeTempDirs();
});

let seq = 0;
function pod(spec: Partial<PodSpec> & { containers: Container[] }, name = `p${++seq}`): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace: "ns1",
      uid: `uid-${name}-${process.pid}`,
      labels: { app: "demo" },
    },
    spec: { nodeName: "node-a", ...spec },
  };
}

const configMaps: Record<string, Record<string, string>> = {
  "ns1/settings": { color: "blue", size: "L" },
};
const secrets: Record<string, Record<string, string>> = { "ns1/creds": { password: "s3cret" } };

function start(
  p: Pod,
  ip = `127.77.0.${10 + (seq % 200)}`,
  onEvent?: (r: PodRecord, type: "Normal" | "Warning", reason: string, message: string) => void,
) {
  const dataDir = tempDir("setpoint-worker-");
  const images = testImageStore();
  const changes: PodRecord[] = [];
  const deps = {
    images,
    sources: {
      configMap: (ns: string, n: string) => configMaps[`${ns}/${n}`],
      secret: (ns: string, n: string) => secrets[`${ns}/${n}`],
    },
    node: { cpu: 4, memory: 8 * 2 ** 30, ephemeralStorage: 100 * 2 ** 30 },
    dataDir,
    restartBackoff: new Backoff(),
    pullBackoff: new Backoff(),
    onChange: (r: PodRecord) => changes.push(r),
    onEvent,
  };
  const worker = new PodWorker(newPodRecord(p, ip), deps);
  workers.push(worker);
  worker.kick();
  const status = () => podStatus(worker.record, "127.0.0.1");
  const log = (container: string, restart = 0) =>
    readFileSync(
      containerLogPath(
        podLogDir(dataDir, "ns1", p.metadata.name ?? "", p.metadata.uid ?? ""),
        container,
        restart,
      ),
      "utf8",
    );
  return { worker, deps, status, log, changes };
}

describe("the pod worker", () => {
  it("makes the environment as the kubelet does and runs the command in the image", async () => {
    const { status, log } = start(
      pod({
        restartPolicy: "Never",
        containers: [
          {
            name: "main",
            image: "shell:1",
            args: ["env | sort; pwd; echo args '$(GREETING)'"],
            resources: { limits: { memory: "64Mi" }, requests: { cpu: "250m" } },
            envFrom: [{ configMapRef: { name: "settings" }, prefix: "CM_" }],
            env: [
              { name: "GREETING", value: "hi-$(CM_color)-$$(KEPT)" },
              { name: "POD", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
              { name: "APP", valueFrom: { fieldRef: { fieldPath: "metadata.labels['app']" } } },
              { name: "IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
              {
                name: "MEM_MI",
                valueFrom: { resourceFieldRef: { resource: "limits.memory", divisor: "1Mi" } },
              },
              {
                name: "CPU_M",
                valueFrom: { resourceFieldRef: { resource: "requests.cpu", divisor: "1m" } },
              },
              { name: "CPUS", valueFrom: { resourceFieldRef: { resource: "limits.cpu" } } },
              {
                name: "SIZE",
                valueFrom: { configMapKeyRef: { name: "settings", key: "size" } },
              },
              {
                name: "PASSWORD",
                valueFrom: { secretKeyRef: { name: "creds", key: "password" } },
              },
            ],
          },
        ],
      }),
      "127.77.1.1",
    );
    await eventually("the pod to succeed", () => status().phase === "Succeeded");
    const out = log("main");
    const p = `p${seq}`;
    for (const line of [
      "GREETING=hi-blue-$(KEPT)",
      `POD=${p}`,
      `HOSTNAME=${p}`,
      "APP=demo",
      "IP=127.77.1.1",
      "SETPOINT_POD_IP=127.77.1.1",
      "MEM_MI=64",
      "CPU_M=250",
      "CPUS=4",
      "SIZE=L",
      "PASSWORD=s3cret",
      "CM_color=blue",
      "FROM_IMAGE=yes",
      "args hi-blue-$(KEPT)",
    ]) {
      expect(out).toContain(`${line}\n`);
    }
    const cs = status().containerStatuses?.[0];
    expect(cs?.state?.terminated).toMatchObject({ exitCode: 0, reason: "Completed" });
    expect(cs?.imageID).toMatch(/^sha256:/);
    expect(status().conditions?.find((c) => c.type === "Ready")).toMatchObject({
      status: "False",
      reason: "PodCompleted",
    });
  });

  it("runs init containers one after another before the containers", async () => {
    const dir = tempDir("setpoint-init-");
    const { status } = start(
      pod({
        restartPolicy: "Never",
        initContainers: [
          { name: "one", image: "shell:1", args: [`echo one >> ${dir}/order`] },
          { name: "two", image: "shell:1", args: [`sleep 0.2; echo two >> ${dir}/order`] },
        ],
        containers: [{ name: "main", image: "shell:1", args: [`echo main >> ${dir}/order`] }],
      }),
    );
    await eventually("the pod to succeed", () => status().phase === "Succeeded");
    expect(readFileSync(join(dir, "order"), "utf8")).toBe("one\ntwo\nmain\n");
    expect(status().initContainerStatuses?.map((s) => s.state?.terminated?.reason)).toEqual([
      "Completed",
      "Completed",
    ]);
    expect(status().conditions?.find((c) => c.type === "Initialized")?.status).toBe("True");
  });

  it("fails a Pod whose init container fails under restartPolicy Never", async () => {
    const { status } = start(
      pod({
        restartPolicy: "Never",
        initContainers: [{ name: "init", image: "shell:1", args: ["exit 4"] }],
        containers: [{ name: "main", image: "shell:1" }],
      }),
    );
    await eventually("the pod to fail", () => status().phase === "Failed");
    expect(status().initContainerStatuses?.[0].state?.terminated).toMatchObject({
      exitCode: 4,
      reason: "Error",
    });
    expect(status().containerStatuses?.[0].state?.waiting?.reason).toBe("PodInitializing");
  });

  it("restarts a failing container, then backs off as CrashLoopBackOff", async () => {
    const p = pod({
      restartPolicy: "OnFailure",
      containers: [{ name: "crash", image: "shell:1", args: ["echo run; exit 2"] }],
    });
    const events: string[] = [];
    const { status, log } = start(p, undefined, (_r, type, reason, message) =>
      events.push(`${type} ${reason} ${message}`),
    );
    const waiting = await eventually("CrashLoopBackOff", () => {
      const cs = status().containerStatuses?.[0];
      return cs?.state?.waiting?.reason === "CrashLoopBackOff" ? cs : undefined;
    });
    expect(waiting.restartCount).toBe(1);
    expect(waiting.state?.waiting?.message).toBe(
      `back-off 10s restarting failed container=crash pod=${p.metadata.name}_ns1(${p.metadata.uid})`,
    );
    expect(waiting.lastState?.terminated).toMatchObject({ exitCode: 2, reason: "Error" });
    expect(status().phase).toBe("Running");
    expect(log("crash", 0)).toBe("run\n");
    expect(log("crash", 1)).toBe("run\n");
    // As the kubelet words it (kubectl describe pod, kubectl events).
    expect(events).toContain(
      `Warning BackOff Back-off restarting failed container crash in pod ${p.metadata.name}_ns1(${p.metadata.uid})`,
    );
  });

  it("leaves a container that failed under restartPolicy Never terminated, the Pod Failed", async () => {
    const { status } = start(
      pod({
        restartPolicy: "Never",
        containers: [{ name: "c", image: "shell:1", args: ["exit 3"] }],
      }),
    );
    await eventually("the pod to fail", () => status().phase === "Failed");
    expect(status().containerStatuses?.[0]).toMatchObject({
      restartCount: 0,
      state: { terminated: { exitCode: 3, reason: "Error" } },
    });
  });

  it("reports a missing image as ErrImagePull, then ImagePullBackOff", async () => {
    const { status, worker } = start(pod({ containers: [{ name: "c", image: "nope:1" }] }));
    const first = await eventually("ErrImagePull", () => {
      const w = status().containerStatuses?.[0].state?.waiting;
      return w?.reason === "ErrImagePull" ? w : undefined;
    });
    expect(first.message).toContain('failed to pull image "nope:1"');
    worker.kick();
    const second = await eventually("ImagePullBackOff", () => {
      const w = status().containerStatuses?.[0].state?.waiting;
      return w?.reason === "ImagePullBackOff" ? w : undefined;
    });
    expect(second.message).toMatch(/^Back-off pulling image "nope:1": ErrImagePull: /);
    expect(status().phase).toBe("Pending");
  });

  it("waits with CreateContainerConfigError when a ConfigMap is missing", async () => {
    const { status } = start(
      pod({
        containers: [
          {
            name: "c",
            image: "shell:1",
            env: [{ name: "X", valueFrom: { configMapKeyRef: { name: "absent", key: "k" } } }],
          },
        ],
      }),
    );
    const w = await eventually("CreateContainerConfigError", () => {
      const s = status().containerStatuses?.[0].state?.waiting;
      return s?.reason === "CreateContainerConfigError" ? s : undefined;
    });
    expect(w.message).toBe('configmap "absent" not found');
  });

  it("serves on the Pod's address and turns Ready when its readiness probe passes", async () => {
    const p = pod({
      containers: [
        {
          name: "web",
          image: "hello:2.0",
          ports: [{ name: "http", containerPort: 8080 }],
          readinessProbe: { httpGet: { path: "/healthz", port: "http" }, periodSeconds: 1 },
        },
      ],
    });
    const { status } = start(p, "127.77.2.5");
    await eventually("Ready", () =>
      status().conditions?.find((c) => c.type === "Ready" && c.status === "True"),
    );
    expect(await httpText("http://127.77.2.5:8080/")).toBe(
      `hello from ${p.metadata.name} (version 2.0)\n`,
    );
    expect(status()).toMatchObject({ phase: "Running", podIP: "127.77.2.5" });
    expect(status().containerStatuses?.[0]).toMatchObject({ ready: true, started: true });
  });

  it("restarts a container whose liveness probe fails", async () => {
    const { status } = start(
      pod({
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: "c",
            image: "shell:1",
            args: ["sleep 60"],
            livenessProbe: { exec: { command: ["false"] }, periodSeconds: 1, failureThreshold: 1 },
          },
        ],
      }),
    );
    const cs = await eventually("a restart", () => {
      const s = status().containerStatuses?.[0];
      return s && s.restartCount >= 1 ? s : undefined;
    });
    expect(cs.lastState?.terminated?.exitCode).toBe(143);
  });

  it("stops a Pod: preStop, SIGTERM to the group, SIGKILL after the grace period", async () => {
    const dir = tempDir("setpoint-stop-");
    const { worker } = start(
      pod({
        containers: [
          {
            name: "stubborn",
            image: "shell:1",
            // Ignores SIGTERM, and leaves a child of its own in its group.
            args: ["trap '' TERM; sleep 300 & while true; do sleep 1; done"],
            lifecycle: {
              preStop: { exec: { command: ["sh", "-c", `echo stopping > ${dir}/hook`] } },
            },
          },
        ],
      }),
    );
    const proc = await eventually("the process", () => worker.record.containers[0].process);
    await new Promise((r) => setTimeout(r, 300));
    expect(groupExists(proc.pid)).toBe(true);
    await worker.terminate(1);
    expect(readFileSync(join(dir, "hook"), "utf8")).toBe("stopping\n");
    expect(isAlive(proc)).toBe(false);
    expect(groupExists(proc.pid)).toBe(false);
    expect(worker.record.stopped).toBe(true);
    expect(
      podStatus(worker.record, "127.0.0.1").containerStatuses?.[0].state?.terminated,
    ).toMatchObject({
      exitCode: 137,
    });
  });

  it("hands its processes to a new worker, which adopts them and restarts one that died", async () => {
    const { worker, deps } = start(
      pod({ containers: [{ name: "web", image: "hello:1.0" }] }),
      "127.77.3.3",
    );
    const proc = await eventually("serving", async () =>
      (await httpText("http://127.77.3.3:8080/")) ? worker.record.containers[0].process : undefined,
    );
    worker.close();
    workers.splice(workers.indexOf(worker), 1);
    const record = JSON.parse(JSON.stringify(worker.record)) as PodRecord;
    const second = new PodWorker(record, deps);
    workers.push(second);
    expect(second.adopt()).toEqual({ adopted: 1, gone: 0 });
    expect(second.record.containers[0].process?.pid).toBe(proc.pid);
    process.kill(-proc.pid, "SIGKILL");
    const restarted = await eventually("a restart", () => {
      const c = second.record.containers[0];
      return c.process && c.process.pid !== proc.pid ? c : undefined;
    });
    expect(restarted.restartCount).toBe(1);
    expect(restarted.terminated?.reason).toBe("ContainerStatusUnknown");
    expect(await eventually("serving again", () => httpText("http://127.77.3.3:8080/"))).toMatch(
      /^hello from/,
    );
  });
});
