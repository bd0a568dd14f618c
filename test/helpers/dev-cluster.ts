/**
 * `setpoint dev-cluster` as a real child process for tests: started in a process
 * group of its own on a fresh data dir, waited for until it prints that its nodes are
 * Ready, with the pids it recorded (processes.json) and the Pods' pids (the agents'
 * state files), so that `destroy()` can kill every process it started even when the
 * test failed half-way.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SETPOINT_BIN } from "../e2e/helpers/setpoint.ts";

/** Longest wait for the dev cluster to be ready (eleven processes on a shared machine). */
export const DEV_CLUSTER_READY_MS = 150_000;

export interface DevClusterProcess {
  name: string;
  role: string;
  pid: number;
  address?: string;
  logFile: string;
}

export class DevCluster {
  stdout = "";
  stderr = "";
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(
    readonly dir: string,
    readonly child: ChildProcess,
  ) {
    child.stdout?.on("data", (d: Buffer) => {
      this.stdout += d.toString();
    });
    child.stderr?.on("data", (d: Buffer) => {
      this.stderr += d.toString();
    });
    this.exited = new Promise((resolve) =>
      child.once("exit", (code, signal) => resolve({ code, signal })),
    );
  }

  /** Starts a dev cluster on a fresh data dir; `ready()` waits for it. */
  static start(extraArgs: string[] = []): DevCluster {
    const dir = mkdtempSync(join(tmpdir(), "setpoint-dev-cluster-"));
    const child = spawn(
      process.execPath,
      [SETPOINT_BIN, "dev-cluster", "--data-dir", dir, "--ready-timeout", "140s", ...extraArgs],
      { stdio: ["ignore", "pipe", "pipe"], detached: true },
    );
    return new DevCluster(dir, child);
  }

  get kubeconfig(): string {
    return join(this.dir, "kubeconfig");
  }

  /** Resolves once the cluster printed that it is ready; throws with its output otherwise. */
  async ready(timeoutMs = DEV_CLUSTER_READY_MS): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let exited = false;
    void this.exited.then(() => {
      exited = true;
    });
    while (!/^Dev cluster ready/m.test(this.stdout)) {
      if (exited || Date.now() > deadline) {
        throw new Error(
          `dev-cluster not ready (${exited ? "exited" : "timed out"})\nstdout:\n${this.stdout}\nstderr:\n${this.stderr}\n${this.logTails()}`,
        );
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** The processes it recorded in processes.json. */
  processes(): DevClusterProcess[] {
    const file = join(this.dir, "processes.json");
    if (!existsSync(file)) return [];
    return JSON.parse(readFileSync(file, "utf8")) as DevClusterProcess[];
  }

  process(name: string): DevClusterProcess {
    const p = this.processes().find((x) => x.name === name);
    if (!p) throw new Error(`no process ${name} in ${this.dir}/processes.json`);
    return p;
  }

  /** The pids of the Pods the agents run (from their state files). */
  podPids(): number[] {
    const pids: number[] = [];
    for (const entry of readdirSync(this.dir)) {
      if (!entry.startsWith("agent-")) continue;
      try {
        const state = JSON.parse(readFileSync(join(this.dir, entry, "state.json"), "utf8")) as {
          pods: Record<string, { containers: { process?: { pid: number } }[] }>;
        };
        for (const pod of Object.values(state.pods)) {
          for (const c of pod.containers) if (c.process) pids.push(c.process.pid);
        }
      } catch {
        // no state yet
      }
    }
    return pids;
  }

  /** The last lines of every process's log, to explain a failure. */
  logTails(lines = 15): string {
    const logs = join(this.dir, "logs");
    if (!existsSync(logs)) return "";
    return readdirSync(logs)
      .map((f) => {
        const text = readFileSync(join(logs, f), "utf8").trim().split("\n").slice(-lines);
        return `--- ${f}\n${text.join("\n")}`;
      })
      .join("\n");
  }

  /** SIGTERM (or `signal`) to the dev-cluster command, and its exit. */
  async stop(signal: NodeJS.Signals = "SIGTERM", timeoutMs = 60_000) {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    const timer = setTimeout(() => this.child.kill("SIGKILL"), timeoutMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Kills whatever is left of it (its group, every recorded pid, the Pods) and removes the dir. */
  async destroy(): Promise<void> {
    const pids = [...this.processes().map((p) => p.pid), ...this.podPids()];
    for (const target of [-(this.child.pid ?? 0), ...pids, ...this.podPids().map((p) => -p)]) {
      if (!target) continue;
      try {
        process.kill(target, "SIGKILL");
      } catch {
        // already gone
      }
    }
    await Promise.race([this.exited, new Promise((r) => setTimeout(r, 5_000))]);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Whether a process with this pid exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
