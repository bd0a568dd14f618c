/**
 * The processes of `setpoint dev-cluster`: each spawned with its output appended to
 * a log file of its own, its unexpected exit reported, and stopped with SIGTERM
 * (SIGKILL after a grace period).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";

/** How long a process may take to exit after SIGTERM before it gets SIGKILL. */
export const STOP_GRACE_MS = 15_000;

export interface ProcessSpec {
  /** Unique name, e.g. "apiserver-0". */
  name: string;
  /** What it is: etcd, apiserver, controller-manager, agent, gateway. */
  role: string;
  command: string;
  args: string[];
  /** Appended to with the process's stdout and stderr. */
  logFile: string;
  /** Where it can be reached, for the banner (a URL or an address). */
  address?: string | undefined;
}

/** One running process of the cluster. */
export class ManagedProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
  private stopping = false;

  constructor(
    readonly spec: ProcessSpec,
    onUnexpectedExit: (p: ManagedProcess, code: number | null, signal: string | null) => void,
  ) {
    const fd = openSync(spec.logFile, "a");
    try {
      this.child = spawn(spec.command, spec.args, { stdio: ["ignore", fd, fd] });
    } finally {
      closeSync(fd);
    }
    this.exited = new Promise((resolve) => {
      this.child.once("exit", (code, signal) => {
        if (!this.stopping) onUnexpectedExit(this, code, signal);
        resolve();
      });
      this.child.once("error", () => resolve());
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** SIGTERM, then SIGKILL if it is still there after STOP_GRACE_MS; resolves once it exited. */
  async stop(graceMs = STOP_GRACE_MS): Promise<void> {
    this.stopping = true;
    if (!this.running) return;
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}
