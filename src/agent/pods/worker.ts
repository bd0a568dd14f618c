/**
 * The pod worker: runs one Pod's containers as processes and keeps its record
 * (record.ts) up to date, as the kubelet's pod worker does for one Pod.
 *
 * - Init containers run one at a time, in order, each to a successful exit; then
 *   the containers all start. A failed init container is retried by the restart
 *   policy (Never: the Pod fails).
 * - A container that exits is restarted by `restartPolicy` (Always; OnFailure when
 *   the exit code is not 0; Never), under the crash-loop back-off (backoff.ts):
 *   meanwhile it waits as CrashLoopBackOff with the kubelet's message.
 * - An image the store lacks gives ErrImagePull, then ImagePullBackOff until its
 *   back-off ends; a ConfigMap or Secret the environment needs and that is missing
 *   gives CreateContainerConfigError.
 * - Probes (probes.ts): the startup probe gates the others; readiness sets the
 *   container's `ready`; a failed liveness or startup probe restarts the container.
 * - `terminate` stops every process (preStop, SIGTERM, grace period, SIGKILL);
 *   `close` lets go of the processes without stopping them (the agent exits, the
 *   Pods keep running); `adopt` takes over processes a previous agent started.
 */

import type { ChildProcess } from "node:child_process";
import { existsSync, readlinkSync } from "node:fs";
import { dirname, isAbsolute, join } from "node:path";
import type { Container, Pod, Probe } from "@setpoint/api";
import type { ImageStore, StoredImage } from "../images/index.ts";
import type { LogRelayClient } from "../log-relay/index.ts";
import type { Isolation } from "../sandbox/index.ts";
import { type Backoff, goDuration } from "./backoff.ts";
import { type Cgroups, containerLimits } from "./cgroups.ts";
import { containerEnv, EnvConfigError, expandVars, type NodeResources } from "./env.ts";
import { containerLogPath, podLogDir, rotateIfLarge } from "./logs.ts";
import { ProbeRunner, probeOnce } from "./probes.ts";
import { isAlive } from "./proc.ts";
import { type ProcessExit, spawnContainer, stopProcess, watchExit } from "./process-runner.ts";
import {
  type ContainerRecord,
  newContainerRecord,
  type PodRecord,
  type RunningProcess,
  rfc3339,
} from "./record.ts";
import { containerStdinPath } from "./stdin.ts";
import {
  containerMounts,
  mountEnv,
  setUpVolumes,
  type VolumeSources,
  volumesDir,
} from "./volumes.ts";

/** Retry of a container whose environment could not be made (a ConfigMap not there yet). */
export const CONFIG_ERROR_RETRY_MS = 5_000;
/** Kubernetes' default terminationGracePeriodSeconds. */
export const DEFAULT_GRACE_SECONDS = 30;

export interface WorkerDeps {
  images: ImageStore;
  /** ConfigMap, Secret and token data (kept on disk by the agent). */
  sources: VolumeSources;
  /** Called before a container's environment is made, to read its ConfigMaps and Secrets again. */
  refreshSources?: (pod: Pod) => Promise<void>;
  node: NodeResources;
  /** Where logs go (pods/<ns>_<name>_<uid>/...). */
  dataDir: string;
  /** The log relay the containers' output goes through (absent: straight to their files). */
  logRelay?: LogRelayClient;
  /** Containers' cgroups (memory and CPU limits); absent or not enforced: limits are not applied. */
  cgroups?: Cgroups;
  /** The isolated mode: each Pod in its own network namespace, each container in its own mount namespace. */
  isolation?: Isolation;
  /** Crash-loop and image pull back-off (shared by the agent's workers). */
  restartBackoff: Backoff;
  pullBackoff: Backoff;
  /** The record changed: persist it and report status. */
  onChange: (rec: PodRecord) => void;
  /** Something happened worth an Event (Started, Killing, Unhealthy, BackOff, ...). */
  onEvent?: (rec: PodRecord, type: "Normal" | "Warning", reason: string, message: string) => void;
}

/** A fresh record for a Pod the agent is to run. */
export function newPodRecord(pod: Pod, podIP: string): PodRecord {
  return {
    uid: pod.metadata.uid ?? "",
    pod,
    podIP,
    startTime: rfc3339(),
    initContainers: (pod.spec?.initContainers ?? []).map((c) => newContainerRecord(c.name)),
    containers: (pod.spec?.containers ?? []).map((c) => newContainerRecord(c.name)),
  };
}

interface Live {
  child?: ChildProcess;
  unwatch?: () => void;
  probes: ProbeRunner[];
  /** Being stopped on purpose (liveness failure, termination). */
  stopping?: Promise<void>;
  env?: Record<string, string>;
  cwd?: string;
}

export class PodWorker {
  private readonly live = new Map<ContainerRecord, Live>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = 0;
  private syncing: Promise<void> | undefined;
  private again = false;
  private closed = false;
  /** The last FailedMount message (an event is sent when it changes). */
  private mountProblem: string | undefined;
  /** The last FailedCreatePodSandBox message (isolated mode). */
  private sandboxProblem: string | undefined;

  constructor(
    readonly record: PodRecord,
    private readonly deps: WorkerDeps,
  ) {}

  private get pod(): Pod {
    return this.record.pod;
  }

  /** The Pod's directory: its logs, volumes and containers' roots. */
  get podDir(): string {
    const meta = this.pod.metadata;
    return podLogDir(
      this.deps.dataDir,
      meta.namespace ?? "default",
      meta.name ?? "",
      this.record.uid,
    );
  }

  /**
   * Sets up the Pod's volumes, or brings their files up to date with their
   * sources; false (and a FailedMount event, once per message) when one cannot be.
   */
  private setUpVolumes(): boolean {
    if (!this.pod.spec?.volumes?.length) return true;
    const errors = setUpVolumes(this.pod, this.podDir, this.deps.sources, this.deps.node);
    if (!errors.length) {
      this.mountProblem = undefined;
      return true;
    }
    const message = errors
      .map((e) => `MountVolume.SetUp failed for volume "${e.volume}" : ${e.message}`)
      .join("; ");
    if (this.mountProblem !== message) {
      this.mountProblem = message;
      for (const e of errors) {
        this.event(
          "Warning",
          "FailedMount",
          `MountVolume.SetUp failed for volume "${e.volume}" : ${e.message}`,
        );
      }
    }
    return false;
  }

  /**
   * Writes the volumes' files again from the current sources and Pod (a changed
   * ConfigMap, Secret, label or token), atomically; only once they were set up.
   */
  refreshVolumes(): void {
    if (this.closed || this.record.terminating || this.record.stopped) return;
    if (!this.pod.spec?.volumes?.length || !existsSync(volumesDir(this.podDir))) return;
    this.setUpVolumes();
  }

  private liveOf(rec: ContainerRecord): Live {
    let l = this.live.get(rec);
    if (!l) {
      l = { probes: [] };
      this.live.set(rec, l);
    }
    return l;
  }

  private changed(): void {
    if (!this.closed) this.deps.onChange(this.record);
  }

  private event(type: "Normal" | "Warning", reason: string, message: string): void {
    this.deps.onEvent?.(this.record, type, reason, message);
  }

  /** Takes in a newer version of the Pod (labels, deletion, an image change). */
  update(pod: Pod): void {
    this.record.pod = pod;
    this.kick();
  }

  /** Runs a sync now (or right after the one running). */
  kick(): void {
    if (this.closed) return;
    if (this.syncing) {
      this.again = true;
      return;
    }
    this.syncing = this.sync()
      .catch(() => {})
      .finally(() => {
        this.syncing = undefined;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** Waits for the sync in progress, if any. */
  async settled(): Promise<void> {
    while (this.syncing) await this.syncing;
  }

  private syncAt(at: number): void {
    if (this.closed) return;
    if (this.timer && this.timerAt <= at) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.kick();
      },
      Math.max(0, at - Date.now()),
    );
    this.timer.unref();
  }

  /**
   * Takes over the processes in the record (started by an earlier agent): those
   * still alive are watched again, those gone count as exited with an unknown code.
   */
  adopt(): { adopted: number; gone: number } {
    let adopted = 0;
    let gone = 0;
    const specs = this.specs();
    for (const [rec, c, init] of this.allContainers(specs)) {
      const proc = rec.process;
      if (!proc || !c) continue;
      if (isAlive(proc)) {
        adopted++;
        const l = this.liveOf(rec);
        l.env = this.envFor(c, proc.image, undefined);
        l.cwd = undefined;
        l.unwatch = watchExit(proc, undefined, (exit) => this.exited(rec, c, init, proc, exit));
        if (proc.logFormat === "cri") this.deps.logRelay?.hold(this.logPath(rec));
        this.startProbes(rec, c, true);
      } else {
        gone++;
        this.exited(rec, c, init, proc, { exitCode: 137, known: false });
      }
    }
    this.kick();
    return { adopted, gone };
  }

  private specs(): { init: Container[]; main: Container[] } {
    return { init: this.pod.spec?.initContainers ?? [], main: this.pod.spec?.containers ?? [] };
  }

  private allContainers(specs: {
    init: Container[];
    main: Container[];
  }): [ContainerRecord, Container | undefined, boolean][] {
    return [
      ...this.record.initContainers.map(
        (r) =>
          [r, specs.init.find((c) => c.name === r.name), true] as [
            ContainerRecord,
            Container | undefined,
            boolean,
          ],
      ),
      ...this.record.containers.map(
        (r) =>
          [r, specs.main.find((c) => c.name === r.name), false] as [
            ContainerRecord,
            Container | undefined,
            boolean,
          ],
      ),
    ];
  }

  private async sync(): Promise<void> {
    if (this.closed || this.record.terminating) return;
    const policy = this.pod.spec?.restartPolicy ?? "Always";
    const specs = this.specs();
    for (const [i, c] of specs.init.entries()) {
      const rec = this.record.initContainers[i];
      if (!rec) continue;
      if (rec.done) {
        if (rec.terminated?.exitCode === 0) continue;
        return;
      }
      if (rec.process || this.live.get(rec)?.stopping) return;
      if (rec.terminated && policy === "Never") {
        rec.done = true;
        this.changed();
        return;
      }
      await this.start(rec, c);
      return;
    }
    for (const [i, c] of specs.main.entries()) {
      const rec = this.record.containers[i];
      if (!rec || rec.process || rec.done || this.live.get(rec)?.stopping) continue;
      await this.start(rec, c);
      if (this.closed || this.record.terminating) return;
    }
  }

  /** Starts a container's process (again), unless a back-off or an error stands in the way. */
  private async start(rec: ContainerRecord, c: Container): Promise<void> {
    const { uid } = this.record;
    const meta = this.pod.metadata;
    const image = c.image ?? "";
    const now = Date.now();
    const key = `${uid}/${c.name}`;
    if (rec.terminated) {
      const finished = Date.parse(rec.terminated.finishedAt);
      const until = this.deps.restartBackoff.waitUntil(key, finished);
      if (until !== undefined) {
        const delay = goDuration(this.deps.restartBackoff.get(key));
        const message = `back-off ${delay} restarting failed container=${c.name} pod=${meta.name}_${meta.namespace}(${uid})`;
        if (rec.waiting?.reason !== "CrashLoopBackOff" || rec.waiting.message !== message) {
          rec.waiting = { reason: "CrashLoopBackOff", message };
          this.event(
            "Warning",
            "BackOff",
            `Back-off restarting failed container ${c.name} in pod ${meta.name}_${meta.namespace}(${uid})`,
          );
          this.changed();
        }
        this.syncAt(until);
        return;
      }
      this.deps.restartBackoff.next(key, finished);
    }
    const pullKey = `${key}/${image}`;
    const pullWait = this.deps.pullBackoff.waitSinceUpdate(pullKey);
    if (pullWait !== undefined) {
      const last = rec.waiting?.reason === "ErrImagePull" ? rec.waiting.message : undefined;
      const message = `Back-off pulling image "${image}"${last ? `: ErrImagePull: ${last}` : ""}`;
      if (rec.waiting?.reason !== "ImagePullBackOff") {
        rec.waiting = { reason: "ImagePullBackOff", message };
        this.event("Normal", "BackOff", `Back-off pulling image "${image}"`);
        this.changed();
      }
      this.syncAt(pullWait);
      return;
    }
    let stored: StoredImage;
    try {
      stored = this.deps.images.resolve(image);
      this.deps.pullBackoff.delete(pullKey);
    } catch (err) {
      this.deps.pullBackoff.next(pullKey, now);
      const message = `failed to pull image "${image}": ${(err as Error).message}`;
      rec.waiting = { reason: "ErrImagePull", message };
      this.event("Warning", "Failed", `Failed to pull image "${image}": ${(err as Error).message}`);
      this.changed();
      this.syncAt(now + this.deps.pullBackoff.get(pullKey));
      return;
    }
    if (this.deps.refreshSources) await this.deps.refreshSources(this.pod).catch(() => {});
    if (this.closed || this.record.terminating) return;
    if (!this.setUpVolumes()) {
      // As the kubelet: the container waits (ContainerCreating) until its volumes mount.
      if (rec.waiting?.reason !== "ContainerCreating" || rec.waiting.message) {
        rec.waiting = { reason: "ContainerCreating" };
        this.changed();
      }
      this.syncAt(Date.now() + CONFIG_ERROR_RETRY_MS);
      return;
    }
    let env: Record<string, string>;
    try {
      env = this.envFor(c, image, stored, true) ?? {};
    } catch (err) {
      const message = (err as Error).message;
      if (rec.waiting?.message !== message) {
        rec.waiting = { reason: "CreateContainerConfigError", message };
        this.event("Warning", "Failed", `Error: ${message}`);
        this.changed();
      }
      this.syncAt(Date.now() + CONFIG_ERROR_RETRY_MS);
      return;
    }
    const command = c.command ?? stored.manifest.entrypoint ?? [];
    const args = c.args ?? (c.command ? [] : (stored.manifest.cmd ?? []));
    const argv = [...command, ...args].map((a) => expandVars(a, env));
    const cwd = c.workingDir
      ? isAbsolute(c.workingDir)
        ? c.workingDir
        : join(stored.rootfs, c.workingDir)
      : join(stored.rootfs, stored.manifest.workingDir ?? ".");
    // The run's count: taken on once it has started (or failed to), so a status made while
    // it is being spawned still shows the last run as it ended, with its own count.
    const restartCount = rec.terminated ? rec.restartCount + 1 : rec.restartCount;
    const logPath = this.logPath(rec, restartCount);
    const wrap = await this.sandboxFor(rec, c, env);
    if (wrap === false || this.closed || this.record.terminating) return;
    const cgroup = argv.length === 0 ? undefined : this.makeCgroup(c, restartCount);
    const result =
      argv.length === 0
        ? ({ ok: false, message: "no command specified" } as const)
        : await spawnContainer({
            argv,
            cwd,
            env,
            logPath,
            ...(c.stdin ? { stdinPath: containerStdinPath(this.podDir, c.name) } : {}),
            image,
            imageID: stored.digest,
            ...(cgroup ? { cgroup } : {}),
            ...(wrap ? { wrap } : {}),
            ...(this.deps.logRelay ? { logRelay: this.deps.logRelay } : {}),
          });
    rec.restartCount = restartCount;
    if (!result.ok) {
      if (cgroup) this.removeCgroup(cgroup.id);
      rec.previous = rec.terminated;
      rec.terminated = {
        exitCode: 128,
        reason: "StartError",
        message: `failed to start container "${c.name}": ${result.message}`,
        startedAt: "1970-01-01T00:00:00Z",
        finishedAt: rfc3339(),
        containerID: "",
      };
      rec.imageID = stored.digest;
      rec.waiting = undefined;
      rec.done = this.wontRestart(false, 128);
      this.event("Warning", "Failed", `Error: ${result.message}`);
      this.changed();
      this.syncAt(Date.now());
      return;
    }
    const proc = result.process;
    if (this.closed || this.record.terminating) {
      // Terminated while starting: the process must not outlive the Pod.
      void stopProcess(proc, 0).then(() => {
        if (proc.cgroup) this.removeCgroup(proc.cgroup);
      });
      return;
    }
    rec.process = proc;
    rec.imageID = stored.digest;
    rec.waiting = undefined;
    rec.started = false;
    rec.ready = false;
    const l = this.liveOf(rec);
    l.child = result.child;
    l.env = env;
    l.cwd = cwd;
    const init = this.record.initContainers.includes(rec);
    l.unwatch = watchExit(proc, result.child, (exit) => this.exited(rec, c, init, proc, exit));
    this.event("Normal", "Started", `Started container ${c.name}`);
    this.startProbes(rec, c, false);
    this.changed();
  }

  /**
   * In the isolated mode: the Pod's sandbox made (or made again, when it went
   * missing) and the container's mount points ready; returns how its program is
   * started in them. False while the sandbox cannot be made (the container waits
   * as ContainerCreating, with a FailedCreatePodSandBox event, and is retried).
   */
  private async sandboxFor(
    rec: ContainerRecord,
    c: Container,
    env: Record<string, string>,
  ): Promise<((argv: string[]) => string[]) | undefined | false> {
    const isolation = this.deps.isolation;
    if (!isolation) return undefined;
    try {
      const before = this.record.sandbox;
      let sandbox = await isolation.ensure(this.record.uid, this.record.podIP, before);
      const mounts = containerMounts(this.pod, c, this.podDir, env);
      sandbox = isolation.prepareMounts(sandbox, mounts);
      this.sandboxProblem = undefined;
      if (sandbox !== before) {
        this.record.sandbox = sandbox;
        this.changed();
      }
      return (argv) => isolation.wrap(sandbox, mounts, argv);
    } catch (err) {
      const message = `Failed to create pod sandbox: ${(err as Error).message}`;
      if (rec.waiting?.reason !== "ContainerCreating" || this.sandboxProblem !== message) {
        this.sandboxProblem = message;
        rec.waiting = { reason: "ContainerCreating" };
        this.event("Warning", "FailedCreatePodSandBox", message);
        this.changed();
      }
      this.syncAt(Date.now() + CONFIG_ERROR_RETRY_MS);
      return false;
    }
  }

  /** The argv prefix that runs a command in the namespaces of the running process `pid` (isolated mode). */
  private enterPrefix(pid: number, cwd: string | undefined): string[] | undefined {
    return this.deps.isolation?.enter(pid, cwd, []);
  }

  /** A cgroup with the container's limits, when it declares some and the node enforces them. */
  private makeCgroup(
    c: Container,
    restartCount: number,
  ): { id: string; procs: string[] } | undefined {
    const cgroups = this.deps.cgroups;
    const limits = containerLimits(c);
    if (!cgroups?.enforced || !limits) return undefined;
    const id = `${this.record.uid}_${c.name}_${restartCount}`;
    try {
      const procs = cgroups.create(id, limits);
      return procs && { id, procs };
    } catch (err) {
      this.removeCgroup(id);
      this.event(
        "Warning",
        "Failed",
        `Error: cannot apply the resource limits: ${(err as Error).message}`,
      );
      return undefined;
    }
  }

  /** Removes a container's cgroup once the last of its processes is gone (retried for a few seconds). */
  private removeCgroup(id: string, tries = 50): void {
    const cgroups = this.deps.cgroups;
    if (!cgroups || cgroups.remove(id) || tries <= 0) return;
    setTimeout(() => this.removeCgroup(id, tries - 1), 100).unref();
  }

  /** The container's environment (undefined when it cannot be made and `strict` is off). */
  private envFor(
    c: Container,
    image: string,
    stored: StoredImage | undefined,
    strict = false,
  ): Record<string, string> | undefined {
    try {
      const img = stored ?? this.deps.images.resolve(image);
      const env = containerEnv(this.pod, c, {
        imageEnv: img.manifest.env,
        sources: this.deps.sources,
        node: this.deps.node,
        podIP: this.record.podIP,
        image,
        imageDir: img.rootfs,
      });
      env.PATH ??= `${dirname(process.execPath)}:${process.env.PATH ?? "/usr/bin:/bin"}`;
      Object.assign(env, mountEnv(this.pod, c, this.podDir, env));
      return env;
    } catch (err) {
      if (strict) throw err;
      if (!(err instanceof EnvConfigError)) return undefined;
      return undefined;
    }
  }

  private wontRestart(init: boolean, exitCode: number): boolean {
    const policy = this.pod.spec?.restartPolicy ?? "Always";
    if (this.record.terminating) return true;
    if (init) return exitCode === 0 || policy === "Never";
    return policy === "Never" || (policy === "OnFailure" && exitCode === 0);
  }

  private exited(
    rec: ContainerRecord,
    c: Container,
    init: boolean,
    proc: RunningProcess,
    exit: ProcessExit,
  ): void {
    const l = this.liveOf(rec);
    for (const p of l.probes) p.stop();
    l.probes = [];
    l.child = undefined;
    l.unwatch = undefined;
    if (rec.process !== proc) return;
    if (proc.logFormat === "cri") this.deps.logRelay?.release(this.logPath(rec));
    // The OOM killer is read from the cgroup (even when the process ended while no agent ran).
    const oom =
      proc.cgroup !== undefined &&
      !(exit.known && exit.exitCode === 0) &&
      (this.deps.cgroups?.oomKilled(proc.cgroup) ?? false);
    if (proc.cgroup) this.removeCgroup(proc.cgroup);
    rec.previous = rec.terminated;
    rec.terminated = oom
      ? {
          exitCode: exit.known ? exit.exitCode : 137,
          reason: "OOMKilled",
          startedAt: proc.startedAt,
          finishedAt: rfc3339(),
          containerID: proc.containerID,
        }
      : {
          exitCode: exit.exitCode,
          ...(exit.signal ? { signal: exit.signal } : {}),
          reason: !exit.known
            ? "ContainerStatusUnknown"
            : exit.exitCode === 0
              ? "Completed"
              : "Error",
          ...(!exit.known
            ? {
                message:
                  "The process ended while the agent was not running; its exit code is unknown",
              }
            : {}),
          startedAt: proc.startedAt,
          finishedAt: rfc3339(),
          containerID: proc.containerID,
        };
    rec.imageID = proc.imageID;
    rec.process = undefined;
    rec.ready = false;
    rec.started = false;
    rec.waiting = undefined;
    rec.done = this.wontRestart(init, exit.known || oom ? rec.terminated.exitCode : 1);
    if (init && rec.done && exit.exitCode !== 0 && !this.record.terminating) {
      // Never: the Pod has failed, its containers will not run.
      for (const m of this.record.containers) m.done = true;
    }
    void c;
    this.changed();
    this.kick();
  }

  private startProbes(rec: ContainerRecord, c: Container, adopted: boolean): void {
    const l = this.liveOf(rec);
    const proc = rec.process;
    if (!proc) return;
    const run = (probe: Probe) => () =>
      probeOnce(probe, {
        podIP: this.record.podIP,
        container: c,
        env: l.env ?? {},
        cwd: l.cwd ?? process.cwd(),
        prefix: this.enterPrefix(proc.pid, l.cwd),
      });
    const startRest = () => {
      if (c.readinessProbe) {
        const r = new ProbeRunner(c.readinessProbe, run(c.readinessProbe), (ok, message) => {
          if (rec.process !== proc) return;
          if (!ok) this.event("Warning", "Unhealthy", `Readiness probe failed: ${message ?? ""}`);
          if (rec.ready !== ok) {
            rec.ready = ok;
            this.changed();
          }
        });
        if (adopted && rec.ready) r.result = true;
        l.probes.push(r);
        r.start();
      } else if (!rec.ready) {
        rec.ready = true;
        this.changed();
      }
      if (c.livenessProbe) {
        const r = new ProbeRunner(c.livenessProbe, run(c.livenessProbe), (ok, message) => {
          if (ok || rec.process !== proc) return;
          this.event("Warning", "Unhealthy", `Liveness probe failed: ${message ?? ""}`);
          this.restartUnhealthy(
            rec,
            proc,
            `Container ${c.name} failed liveness probe, will be restarted`,
          );
        });
        l.probes.push(r);
        r.start();
      }
    };
    if (this.record.initContainers.includes(rec)) {
      rec.started = true;
      return;
    }
    if (c.startupProbe && !(adopted && rec.started)) {
      const r = new ProbeRunner(c.startupProbe, run(c.startupProbe), (ok, message) => {
        if (rec.process !== proc) return;
        r.stop();
        if (ok) {
          rec.started = true;
          this.changed();
          startRest();
        } else {
          this.event("Warning", "Unhealthy", `Startup probe failed: ${message ?? ""}`);
          this.restartUnhealthy(
            rec,
            proc,
            `Container ${c.name} failed startup probe, will be restarted`,
          );
        }
      });
      l.probes.push(r);
      r.start();
      return;
    }
    rec.started = true;
    startRest();
  }

  private restartUnhealthy(rec: ContainerRecord, proc: RunningProcess, message: string): void {
    const l = this.liveOf(rec);
    if (l.stopping) return;
    this.event("Normal", "Killing", message);
    const grace = (this.pod.spec?.terminationGracePeriodSeconds ?? DEFAULT_GRACE_SECONDS) * 1000;
    l.stopping = stopProcess(proc, grace).finally(() => {
      l.stopping = undefined;
      this.kick();
    });
  }

  /**
   * What a command run in a running container gets (`kubectl exec`): the
   * container's environment and working directory (an adopted process's, read from
   * /proc, when this agent did not start it); undefined when it does not run.
   */
  execContext(
    container: string,
  ): { env: Record<string, string>; cwd: string; prefix?: string[] } | undefined {
    const rec = [...this.record.initContainers, ...this.record.containers].find(
      (r) => r.name === container,
    );
    const proc = rec?.process;
    if (!rec || !proc || !isAlive(proc)) return undefined;
    const l = this.live.get(rec);
    let cwd = l?.cwd;
    if (!cwd) {
      try {
        cwd = readlinkSync(`/proc/${proc.pid}/cwd`);
      } catch {
        cwd = process.cwd();
      }
    }
    const prefix = this.enterPrefix(proc.pid, cwd);
    return { env: l?.env ?? {}, cwd, ...(prefix ? { prefix } : {}) };
  }

  /**
   * Rotates the log files of the running containers that write them directly
   * and grew past the limit (the log relay rotates the files it writes).
   */
  rotateLogs(): void {
    for (const rec of [...this.record.initContainers, ...this.record.containers]) {
      if (rec.process && rec.process.logFormat !== "cri") rotateIfLarge(this.logPath(rec));
    }
  }

  /** The log file of a container's run (by default its current one). */
  private logPath(rec: ContainerRecord, run: number = rec.restartCount): string {
    const meta = this.pod.metadata;
    return containerLogPath(
      podLogDir(this.deps.dataDir, meta.namespace ?? "default", meta.name ?? "", this.record.uid),
      rec.name,
      run,
    );
  }

  /**
   * Stops every process of the Pod: preStop hooks, SIGTERM, `gracePeriodSeconds`,
   * SIGKILL. Resolves once none is left; the record is then `stopped`.
   */
  async terminate(gracePeriodSeconds?: number): Promise<void> {
    const grace =
      gracePeriodSeconds ??
      this.pod.metadata.deletionGracePeriodSeconds ??
      this.pod.spec?.terminationGracePeriodSeconds ??
      DEFAULT_GRACE_SECONDS;
    if (!this.record.terminating) {
      this.record.terminating = { since: rfc3339(), gracePeriodSeconds: grace };
      this.changed();
    }
    if (this.timer) clearTimeout(this.timer);
    await this.settled();
    const specs = this.specs();
    const stops: Promise<void>[] = [];
    for (const [rec, c] of this.allContainers(specs)) {
      const l = this.liveOf(rec);
      for (const p of l.probes) p.stop();
      l.probes = [];
      const proc = rec.process;
      if (!proc) continue;
      if (rec.name && c) this.event("Normal", "Killing", `Stopping container ${c.name}`);
      const preStop = c?.lifecycle?.preStop;
      const hook = preStop
        ? async (deadline: number) => {
            const seconds = Math.max(1, Math.ceil((deadline - Date.now()) / 1000));
            if (preStop.sleep) {
              await new Promise((r) =>
                setTimeout(r, Math.min(preStop.sleep!.seconds * 1000, seconds * 1000)),
              );
              return;
            }
            const probe: Probe = { timeoutSeconds: seconds };
            if (preStop.exec) probe.exec = preStop.exec;
            if (preStop.httpGet) probe.httpGet = preStop.httpGet;
            if (c) {
              await probeOnce(probe, {
                podIP: this.record.podIP,
                container: c,
                env: l.env ?? {},
                cwd: l.cwd ?? process.cwd(),
                prefix: this.enterPrefix(proc.pid, l.cwd),
              });
            }
          }
        : undefined;
      const child = l.child;
      const exitSeen = child
        ? new Promise<void>((done) => {
            const t = setTimeout(done, 2_000);
            child.once("exit", () => {
              clearTimeout(t);
              setImmediate(done);
            });
          })
        : Promise.resolve();
      stops.push(
        (l.stopping ?? Promise.resolve())
          .then(() => stopProcess(proc, grace * 1000, hook))
          .then(() => exitSeen),
      );
    }
    await Promise.all(stops);
    // An adopted process's end is seen by polling: record it now.
    for (const [rec, c, init] of this.allContainers(specs)) {
      const proc = rec.process;
      if (proc && c && !isAlive(proc))
        this.exited(rec, c, init, proc, { exitCode: 137, known: false });
    }
    for (const rec of [...this.record.initContainers, ...this.record.containers]) {
      rec.done = true;
      rec.waiting = undefined;
    }
    this.record.stopped = true;
    this.changed();
  }

  /** Lets go of the processes without stopping them (the agent is exiting). */
  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    for (const l of this.live.values()) {
      for (const p of l.probes) p.stop();
      l.unwatch?.();
    }
    this.live.clear();
  }
}
