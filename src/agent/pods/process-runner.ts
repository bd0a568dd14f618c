/**
 * Starting, watching and stopping one container process. A process is spawned
 * detached (the leader of its own process group, in its own session, so it
 * outlives the agent), stdin closed (or, with `stdin: true`, a named pipe that
 * `kubectl attach` writes to: stdin.ts), its stdout and stderr written to the log
 * relay's named pipes (../log-relay/: the relay writes the log file, each line
 * with its time) or, without a relay, appended to its log file as they are. Its
 * end is learned from the child's exit when this agent started it, or by polling
 * /proc when it was adopted from an earlier agent (exit code then unknown).
 * Stopping runs the preStop hook, sends SIGTERM to the group, waits out the grace
 * period, then SIGKILLs the group; once the leader is gone, whatever is left in
 * its group is killed too, so no process outlives its container.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants as fsConstants, statSync } from "node:fs";
import { constants } from "node:os";
import { delimiter, isAbsolute, join } from "node:path";
import type { LogRelayClient, RunPipes } from "../log-relay/index.ts";
import { cgroupWrapper } from "./cgroups.ts";
import { closeLog, openLog } from "./logs.ts";
import {
  groupExists,
  isAlive,
  type ProcessIdentity,
  processStartTicks,
  signalGroup,
} from "./proc.ts";
import type { RunningProcess } from "./record.ts";
import { rfc3339 } from "./record.ts";
import { openContainerStdin } from "./stdin.ts";

/** How often an adopted process is checked for its end, and a stopping one for its exit. */
export const EXIT_POLL_MS = 500;

export interface SpawnSpec {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  logPath: string;
  /** The named pipe that is the process's stdin (a container with `stdin: true`); none: stdin closed. */
  stdinPath?: string;
  image: string;
  imageID: string;
  /** The log relay: output goes through it (CRI format); without one, straight to the file. */
  logRelay?: LogRelayClient;
  /** The container's cgroup: its id and the `cgroup.procs` files the process joins before it execs. */
  cgroup?: { id: string; procs: string[] };
  /**
   * Puts the program (its resolved path and arguments) in the Pod's sandbox
   * (the isolated mode: namespaces entered, volumes mounted, then exec); run
   * inside the cgroup wrapper.
   */
  wrap?: (argv: string[]) => string[];
}

/** The executable `cmd` names (looked up in the environment's PATH), or undefined. */
export function resolveCommand(
  cmd: string,
  env: Record<string, string>,
  cwd: string,
): string | undefined {
  const executable = (file: string) => {
    try {
      if (!statSync(file).isFile()) return false;
      accessSync(file, fsConstants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  if (cmd.includes("/")) {
    const file = isAbsolute(cmd) ? cmd : join(cwd, cmd);
    return executable(file) ? file : undefined;
  }
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const file = join(isAbsolute(dir) ? dir : join(cwd, dir), cmd);
    if (executable(file)) return file;
  }
  return undefined;
}

export type SpawnResult =
  | { ok: true; process: RunningProcess; child: ChildProcess }
  | { ok: false; message: string };

/** Spawns a container process; resolves once it runs (or failed to start). */
export async function spawnContainer(spec: SpawnSpec): Promise<SpawnResult> {
  let [cmd, ...args] = spec.argv;
  const shown = cmd;
  if (spec.cgroup || spec.wrap) {
    // Through a shell that joins the cgroup and execs (and the sandbox's wrapper, which
    // execs too): the program runs limited and isolated from its first instruction. The
    // program is looked up first, so a missing one is still a start error rather than
    // the shell's exit.
    const file = resolveCommand(cmd, spec.env, spec.cwd);
    if (!file) {
      return { ok: false, message: `exec: "${cmd}": executable file not found in $PATH` };
    }
    const argv = spec.wrap ? spec.wrap([file, ...args]) : [file, ...args];
    [cmd, ...args] = spec.cgroup ? cgroupWrapper(spec.cgroup.procs, argv) : argv;
  }
  let pipes: RunPipes | undefined;
  if (spec.logRelay) {
    await spec.logRelay.ready();
    try {
      pipes = await spec.logRelay.pipes(spec.logPath);
    } catch (err) {
      return { ok: false, message: `could not make the log pipes: ${(err as Error).message}` };
    }
  }
  let stdin: number | undefined;
  try {
    stdin = spec.stdinPath ? openContainerStdin(spec.stdinPath) : undefined;
  } catch (err) {
    if (pipes) spec.logRelay?.discard(pipes);
    return { ok: false, message: `could not make the stdin pipe: ${(err as Error).message}` };
  }
  const fd = pipes ? -1 : openLog(spec.logPath);
  const release = (started: boolean) => {
    if (stdin !== undefined) closeLog(stdin);
    if (!pipes) closeLog(fd);
    else if (started) spec.logRelay?.handOver(pipes);
    else spec.logRelay?.discard(pipes);
  };
  return new Promise((done) => {
    let child: ChildProcess;
    try {
      child = spawn(cmd, args, {
        cwd: spec.cwd,
        env: spec.env,
        detached: true,
        stdio: [stdin ?? "ignore", pipes?.fds.stdout ?? fd, pipes?.fds.stderr ?? fd],
      });
    } catch (err) {
      release(false);
      done({ ok: false, message: (err as Error).message });
      return;
    }
    child.once("error", (err: NodeJS.ErrnoException) => {
      release(false);
      const message =
        err.code === "ENOENT"
          ? `exec: "${shown}": executable file not found in $PATH`
          : `exec: "${shown}": ${err.message}`;
      done({ ok: false, message });
    });
    child.once("spawn", () => {
      release(true);
      child.unref();
      const pid = child.pid ?? 0;
      const startTicks = processStartTicks(pid) ?? -1;
      done({
        ok: true,
        child,
        process: {
          pid,
          startTicks,
          startedAt: rfc3339(),
          containerID: `setpoint://${pid}-${startTicks}`,
          imageID: spec.imageID,
          image: spec.image,
          ...(pipes ? { logFormat: "cri" as const } : {}),
          ...(spec.cgroup ? { cgroup: spec.cgroup.id } : {}),
        },
      });
    });
  });
}

/** How a process ended: exit code (128+signal when killed), or unknown when it was adopted. */
export interface ProcessExit {
  exitCode: number;
  signal?: number;
  known: boolean;
}

/**
 * Calls `onExit` once when the process ends. With `child` (started by this agent)
 * from its exit; else by polling /proc. Returns a function that stops watching.
 */
export function watchExit(
  proc: ProcessIdentity,
  child: ChildProcess | undefined,
  onExit: (exit: ProcessExit) => void,
): () => void {
  let fired = false;
  const fire = (exit: ProcessExit) => {
    if (fired) return;
    fired = true;
    cancel();
    // Whatever the container started is part of it: nothing outlives it.
    signalGroup(proc.pid, "SIGKILL");
    onExit(exit);
  };
  const onChildExit = (code: number | null, signal: NodeJS.Signals | null) => {
    const signo = signal ? constants.signals[signal] : undefined;
    fire({
      exitCode: code ?? 128 + (signo ?? 0),
      ...(signo ? { signal: signo } : {}),
      known: true,
    });
  };
  child?.once("exit", onChildExit);
  const timer = child
    ? undefined
    : setInterval(() => {
        if (!isAlive(proc)) fire({ exitCode: 137, known: false });
      }, EXIT_POLL_MS);
  timer?.unref();
  const cancel = () => {
    if (timer) clearInterval(timer);
    child?.off("exit", onChildExit);
  };
  // An adopted process may already be gone.
  if (!child && !isAlive(proc)) queueMicrotask(() => fire({ exitCode: 137, known: false }));
  return cancel;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until the process is gone or `deadline` (ms since epoch) passes; true when gone. */
export async function waitGone(proc: ProcessIdentity, deadline: number): Promise<boolean> {
  for (;;) {
    if (!isAlive(proc)) return true;
    if (Date.now() >= deadline) return false;
    await sleep(Math.min(50, Math.max(1, deadline - Date.now())));
  }
}

/**
 * Stops a process: `preStop` first (bounded by the grace period), SIGTERM to its
 * group, then SIGKILL once `graceMs` (counted from the start) is over.
 */
export async function stopProcess(
  proc: ProcessIdentity,
  graceMs: number,
  preStop?: (deadline: number) => Promise<void>,
): Promise<void> {
  const deadline = Date.now() + graceMs;
  if (!isAlive(proc)) {
    signalGroup(proc.pid, "SIGKILL");
    return;
  }
  if (preStop) {
    await Promise.race([preStop(deadline).catch(() => {}), sleep(graceMs)]);
  }
  signalGroup(proc.pid, "SIGTERM");
  if (!(await waitGone(proc, deadline))) {
    signalGroup(proc.pid, "SIGKILL");
    await waitGone(proc, Date.now() + 5_000);
  }
  signalGroup(proc.pid, "SIGKILL");
  // A killed process lingers until the kernel has torn it down: stopped means gone.
  await waitGroupGone(proc.pid, Date.now() + 5_000);
}

/** Waits until no live process is left in the group led by `pgid`, or `deadline` passes. */
async function waitGroupGone(pgid: number, deadline: number): Promise<void> {
  while (groupExists(pgid) && Date.now() < deadline) await sleep(20);
}
