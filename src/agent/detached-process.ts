/**
 * A helper process of the agent that outlives it, as Pods do: the service proxy
 * (proxy-process.ts) and the log relay (log-relay/). The agent starts it as a
 * container is started: detached, the leader of its own process group, stdin
 * closed, its output appended to DATA/<name>.log. Its identity (pid and start
 * time, pods/proc.ts) is saved atomically in DATA/<name>.json, so a pid the
 * kernel reused is never taken for it.
 * - `ensure()` adopts the process the file names when it still runs, and
 *   otherwise starts one (`setpoint <name> --data-dir DATA ...`); the agent calls
 *   it at start and at every housekeeping, so a helper that died is started again.
 * - `stop()` sends SIGTERM to its group, SIGKILL after STOP_TIMEOUT_MS, and
 *   waits until the group is gone.
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

/** How long stop() waits after SIGTERM before SIGKILL, ms. */
export const STOP_TIMEOUT_MS = 10_000;

export interface DetachedProcessOptions {
  /** The `setpoint` subcommand, also the name of its files in the data directory. */
  name: string;
  /** What log lines call it. */
  title: string;
  dataDir: string;
  /** Flags after --data-dir. */
  args: string[];
  /** The environment variable naming its data directory (to find it in /proc). */
  envVar: string;
  logger: RuntimeLogger;
  /** The command that runs `setpoint` (default: node and this package's bin/setpoint.mjs). */
  command?: string[] | undefined;
}

/**
 * V8's young generation for the agent's helper processes, MiB. They are small and
 * live as long as the node: with V8's default (up to 16 MiB per semi-space, grown
 * under allocation) each held about 35 MiB more resident memory for nothing.
 */
const HELPER_SEMI_SPACE_MIB = 2;

/**
 * node and bin/setpoint.mjs of the package this module belongs to (sources or
 * bundle), with the helpers' small young generation.
 */
export function setpointCommand(): string[] {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const json = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
      if (json.name === "setpoint") {
        return [
          process.execPath,
          `--max-semi-space-size=${HELPER_SEMI_SPACE_MIB}`,
          join(dir, "bin", "setpoint.mjs"),
        ];
      }
    } catch {
      // no package.json here
    }
    const up = dirname(dir);
    if (up === dir) throw new Error("cannot find the setpoint package (bin/setpoint.mjs)");
    dir = up;
  }
}

export class DetachedProcess {
  private current: ProcessIdentity | undefined;
  private starting = false;

  constructor(private readonly opts: DetachedProcessOptions) {}

  private get file(): string {
    return join(this.opts.dataDir, `${this.opts.name}.json`);
  }

  /** The running process's identity, if any. */
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
   * Makes sure the process runs: the one already known, else the one the file
   * names (adopted), else a new one. Returns what it did.
   */
  ensure(): "running" | "adopted" | "started" | "starting" {
    if (this.starting) return "starting";
    if (this.current && isAlive(this.current)) return "running";
    if (!this.current) {
      const saved = this.saved();
      if (saved && isAlive(saved)) {
        this.current = saved;
        this.opts.logger.info({ pid: saved.pid }, `adopted the running ${this.opts.title}`);
        return "adopted";
      }
    } else {
      this.opts.logger.warn(
        { pid: this.current.pid },
        `the ${this.opts.title} exited; starting it`,
      );
    }
    try {
      this.start();
    } catch (err) {
      this.starting = false;
      this.opts.logger.error(
        { err: (err as Error).message },
        `could not start the ${this.opts.title}`,
      );
    }
    return "started";
  }

  private start(): void {
    const [cmd, ...args] = this.opts.command ?? setpointCommand();
    mkdirSync(this.opts.dataDir, { recursive: true });
    const fd = openSync(join(this.opts.dataDir, `${this.opts.name}.log`), "a");
    let child: ChildProcess;
    try {
      child = spawn(
        cmd,
        [
          ...args,
          this.opts.name,
          "--data-dir",
          this.opts.dataDir,
          ...this.opts.args,
          "--log-format",
          "json",
        ],
        {
          detached: true,
          stdio: ["ignore", fd, fd],
          env: { ...process.env, [this.opts.envVar]: this.opts.dataDir },
        },
      );
    } finally {
      closeSync(fd);
    }
    this.starting = true;
    child.once("error", (err) => {
      this.starting = false;
      this.opts.logger.error({ err: err.message }, `could not start the ${this.opts.title}`);
    });
    child.once("spawn", () => {
      this.starting = false;
      child.unref();
      const pid = child.pid ?? 0;
      const startTicks = processStartTicks(pid);
      if (startTicks === undefined) return;
      this.current = { pid, startTicks };
      writeFileAtomic(this.file, JSON.stringify(this.current), { syncDir: true });
      this.opts.logger.info({ pid }, `started the ${this.opts.title}`);
    });
  }

  /** Resolves once the process runs (started or adopted). */
  async running(timeoutMs = 10_000): Promise<ProcessIdentity> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const id = this.identity;
      if (id) return id;
      if (Date.now() > deadline) throw new Error(`the ${this.opts.title} did not start`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Stops the process (SIGTERM, SIGKILL after STOP_TIMEOUT_MS) and forgets it. */
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
      this.opts.logger.info({ pid: p.pid }, `stopped the ${this.opts.title}`);
    }
    rmSync(this.file, { force: true });
  }
}
