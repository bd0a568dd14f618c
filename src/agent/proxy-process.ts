/**
 * The service proxy as a process of its own, which the agent starts and which
 * outlives it, as Pods do (and as kube-proxy is apart from the kubelet): while
 * the agent restarts, the cluster IPs and node ports go on being served.
 *
 * - It is started as a container is: detached, the leader of its own process
 *   group, stdin closed, its output appended to DATA/service-proxy.log. Its
 *   identity (pid and start time, pods/proc.ts) is saved atomically in
 *   DATA/service-proxy.json, so a pid the kernel reused is never taken for it.
 * - `ensure()` adopts the process the file names when it still runs, and
 *   otherwise starts one; it needs no apiserver (the process serves the table on
 *   disk). The agent calls it at start and at every housekeeping, so a proxy
 *   that died is started again.
 * - `stop()` sends SIGTERM to its group, SIGKILL after STOP_TIMEOUT_MS, and
 *   waits until the group is gone.
 * The process itself (`setpoint service-proxy`, src/proxy/service-proxy.ts)
 * follows the table the agent writes to disk; the two never talk otherwise.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, mkdirSync, openSync, readFileSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { RuntimeLogger } from "@setpoint/runtime";
import { writeFileAtomic } from "../dataplane/index.ts";
import {
  groupExists,
  isAlive,
  type ProcessIdentity,
  processStartTicks,
  signalGroup,
} from "./pods/proc.ts";

/** The proxy process's identity, in the agent's data directory. */
export const PROXY_PROCESS_FILE = "service-proxy.json";
/** The proxy process's log, in the agent's data directory. */
export const PROXY_LOG_FILE = "service-proxy.log";
/** How long stop() waits after SIGTERM before SIGKILL, ms. */
export const STOP_TIMEOUT_MS = 10_000;
/** The environment variable naming a proxy process's data directory (to find it in /proc). */
export const PROXY_DATA_DIR_ENV = "SETPOINT_SERVICE_PROXY_DATA_DIR";

export interface ProxyProcessOptions {
  dataDir: string;
  /** The node's address, where node ports listen. */
  nodeAddress: string;
  logger: RuntimeLogger;
  /** The command that runs `setpoint` (default: node and this package's bin/setpoint.mjs). */
  command?: string[] | undefined;
}

/** node and bin/setpoint.mjs of the package this module belongs to (sources or bundle). */
export function setpointCommand(): string[] {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const json = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
      if (json.name === "setpoint") return [process.execPath, join(dir, "bin", "setpoint.mjs")];
    } catch {
      // no package.json here
    }
    const up = dirname(dir);
    if (up === dir) throw new Error("cannot find the setpoint package (bin/setpoint.mjs)");
    dir = up;
  }
}

export class ProxyProcess {
  private current: ProcessIdentity | undefined;
  private starting = false;

  constructor(private readonly opts: ProxyProcessOptions) {}

  private get file(): string {
    return join(this.opts.dataDir, PROXY_PROCESS_FILE);
  }

  /** The running proxy's identity, if any. */
  get identity(): ProcessIdentity | undefined {
    return this.current && isAlive(this.current) ? this.current : undefined;
  }

  private saved(): ProcessIdentity | undefined {
    try {
      const p = JSON.parse(readFileSync(this.file, "utf8")) as ProcessIdentity;
      return Number.isInteger(p.pid) && Number.isInteger(p.startTicks) ? p : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Makes sure a proxy runs: the one already known, else the one the file
   * names (adopted), else a new one. Returns what it did.
   */
  ensure(): "running" | "adopted" | "started" | "starting" {
    if (this.starting) return "starting";
    if (this.current && isAlive(this.current)) return "running";
    if (!this.current) {
      const saved = this.saved();
      if (saved && isAlive(saved)) {
        this.current = saved;
        this.opts.logger.info({ pid: saved.pid }, "adopted the running service proxy");
        return "adopted";
      }
    } else {
      this.opts.logger.warn({ pid: this.current.pid }, "the service proxy exited; starting it");
    }
    try {
      this.start();
    } catch (err) {
      this.starting = false;
      this.opts.logger.error({ err: (err as Error).message }, "could not start the service proxy");
    }
    return "started";
  }

  private start(): void {
    const [cmd, ...args] = this.opts.command ?? setpointCommand();
    mkdirSync(this.opts.dataDir, { recursive: true });
    const fd = openSync(join(this.opts.dataDir, PROXY_LOG_FILE), "a");
    let child: ChildProcess;
    try {
      child = spawn(
        cmd,
        [
          ...args,
          "service-proxy",
          "--data-dir",
          this.opts.dataDir,
          "--node-address",
          this.opts.nodeAddress,
          "--log-format",
          "json",
        ],
        {
          detached: true,
          stdio: ["ignore", fd, fd],
          env: { ...process.env, [PROXY_DATA_DIR_ENV]: this.opts.dataDir },
        },
      );
    } finally {
      closeSync(fd);
    }
    this.starting = true;
    child.once("error", (err) => {
      this.starting = false;
      this.opts.logger.error({ err: err.message }, "could not start the service proxy");
    });
    child.once("spawn", () => {
      this.starting = false;
      child.unref();
      const pid = child.pid ?? 0;
      const startTicks = processStartTicks(pid);
      if (startTicks === undefined) return;
      this.current = { pid, startTicks };
      writeFileAtomic(this.file, JSON.stringify(this.current), { syncDir: true });
      this.opts.logger.info({ pid }, "started the service proxy");
    });
  }

  /** Resolves once a proxy process runs (started or adopted). */
  async running(timeoutMs = 10_000): Promise<ProcessIdentity> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const id = this.identity;
      if (id) return id;
      if (Date.now() > deadline) throw new Error("the service proxy did not start");
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Stops the proxy process (SIGTERM, SIGKILL after STOP_TIMEOUT_MS) and forgets it. */
  async stop(): Promise<void> {
    while (this.starting) await new Promise((r) => setTimeout(r, 10));
    const p = this.current ?? this.saved();
    this.current = undefined;
    if (p && isAlive(p)) {
      signalGroup(p.pid, "SIGTERM");
      const deadline = Date.now() + STOP_TIMEOUT_MS;
      while (groupExists(p.pid)) {
        if (Date.now() > deadline) signalGroup(p.pid, "SIGKILL");
        await new Promise((r) => setTimeout(r, 20));
      }
      this.opts.logger.info({ pid: p.pid }, "stopped the service proxy");
    }
    rmSync(this.file, { force: true });
  }
}
