/**
 * `kubectl exec` on the agent (the kubelet's /exec/NS/NAME/CONTAINER): the
 * command runs as a new process with the container's environment and working
 * directory, in a process group of its own (so that ending it ends whatever it
 * started), its standard streams carried over a WebSocket in Kubernetes'
 * channel protocol (`v5.channel.k8s.io`, or `v4.channel.k8s.io`): every binary
 * message starts with its channel, 0 stdin, 1 stdout, 2 stderr, 3 the error
 * channel (a v1 Status once the command ended: Success, or NonZeroExitCode with
 * the code as the ExitCode cause, from which kubectl says `command terminated
 * with exit code N` and exits with N), 4 terminal resizes (`{"Width":W,"Height":H}`)
 * and, in v5, 255 to close a stream (kubectl closes stdin with it at its end of
 * input).
 *
 * With a TTY (`-t`) the command runs under util-linux `script`, which gives it a
 * pseudo-terminal as its controlling terminal without a native addon; a resize
 * is applied to that terminal with `stty` (the command gets SIGWINCH). stderr is
 * then the terminal too, as with the kubelet.
 *
 * A command still running when its connection ends is killed (its whole group),
 * and so is every command of a Pod that stops (ExecSessions.stopPod).
 *
 * In the isolated mode the command runs in the container's network and mount
 * namespaces: the context's `prefix` (nsenter) goes before it, or before
 * `script`; the command is looked up first, so a missing one is reported as
 * with the default mode.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, readlinkSync } from "node:fs";
import { constants as osConstants } from "node:os";
import type { Duplex } from "node:stream";
import type { WebSocket } from "ws";
import { resolveCommand } from "../pods/index.ts";

export const STDIN = 0;
export const STDOUT = 1;
export const STDERR = 2;
export const ERROR = 3;
export const RESIZE = 4;
export const CLOSE = 255;

/** The channel protocols served, most preferred first. */
export const EXEC_PROTOCOLS = ["v5.channel.k8s.io", "v4.channel.k8s.io"];

/** Sends queued on a connection beyond which a command's output is paused. */
const MAX_PENDING_SENDS = 32;

/** Where a command runs: the container's environment and working directory, and (isolated mode) how to enter its namespaces. */
export interface ExecContext {
  env: Record<string, string>;
  cwd: string;
  /** An argv prefix that runs the command in the container's namespaces. */
  prefix?: string[];
}

export interface ExecSpec extends ExecContext {
  argv: string[];
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/** The commands running for `kubectl exec`, by Pod uid, and the endpoint's upgraded connections. */
export class ExecSessions {
  private readonly byPod = new Map<string, Set<ChildProcess>>();
  private readonly sockets = new Set<Duplex>();

  /** Keeps `socket` (an upgraded connection) until it closes. */
  track(socket: Duplex): void {
    this.sockets.add(socket);
    socket.once("close", () => this.sockets.delete(socket));
  }

  add(uid: string, child: ChildProcess): void {
    let set = this.byPod.get(uid);
    if (!set) {
      set = new Set();
      this.byPod.set(uid, set);
    }
    set.add(child);
    child.once("close", () => {
      set.delete(child);
      if (set.size === 0 && this.byPod.get(uid) === set) this.byPod.delete(uid);
    });
  }

  /** Kills every command running in the Pod `uid`. */
  stopPod(uid: string): void {
    for (const child of this.byPod.get(uid) ?? []) killGroup(child);
  }

  /** Kills every command and closes every upgraded connection (the agent stops). */
  stopAll(): void {
    for (const uid of [...this.byPod.keys()]) this.stopPod(uid);
    for (const socket of this.sockets) socket.destroy();
  }
}

function killGroup(child: ChildProcess): void {
  if (child.exitCode !== null || child.signalCode !== null || !child.pid) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    try {
      child.kill("SIGKILL");
    } catch {}
  }
}

/** A word for `sh -c`, quoted. */
function shellQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** A v1 Status as the error channel carries it. */
export function statusMessage(status: Record<string, unknown>): Buffer {
  return Buffer.from(JSON.stringify({ metadata: {}, ...status }));
}

function exitStatus(argv: string[], code: number): Buffer {
  if (code === 0) return statusMessage({ status: "Success" });
  return statusMessage({
    status: "Failure",
    message: `command terminated with non-zero exit code: error executing command [${argv.join(" ")}], exit code ${code}`,
    reason: "NonZeroExitCode",
    details: { causes: [{ reason: "ExitCode", message: String(code) }] },
  });
}

function internalError(message: string): Buffer {
  return statusMessage({
    status: "Failure",
    message: `Internal error occurred: error executing command in container: ${message}`,
    reason: "InternalError",
    details: { causes: [{ message: `error executing command in container: ${message}` }] },
    code: 500,
  });
}

/** The terminal of a `script` session: the one its child (the command's shell) has. */
function sessionTerminal(scriptPid: number): string | undefined {
  try {
    const children = readFileSync(`/proc/${scriptPid}/task/${scriptPid}/children`, "utf8")
      .trim()
      .split(/\s+/)
      .filter(Boolean);
    for (const pid of children) {
      const tty = readlinkSync(`/proc/${pid}/fd/0`);
      if (tty.startsWith("/dev/pts/")) return tty;
    }
  } catch {}
  return undefined;
}

/** Runs `spec` for the connection `ws` (whose protocol was agreed) until the command ends. */
export function runExec(ws: WebSocket, spec: ExecSpec, sessions: ExecSessions, uid: string): void {
  const v5 = ws.protocol === EXEC_PROTOCOLS[0];
  let pending = 0;
  const paused = new Set<NodeJS.ReadableStream>();
  const send = (channel: number, data: Buffer, from?: NodeJS.ReadableStream) => {
    if (ws.readyState !== ws.OPEN) return;
    pending++;
    ws.send(Buffer.concat([Buffer.of(channel), data]), { binary: true }, () => {
      pending--;
      if (pending < MAX_PENDING_SENDS / 4) {
        for (const s of paused) s.resume();
        paused.clear();
      }
    });
    if (from && pending >= MAX_PENDING_SENDS) {
      from.pause();
      paused.add(from);
    }
  };
  const finish = (status: Buffer) => {
    send(ERROR, status);
    if (ws.readyState === ws.OPEN) ws.close(1000);
  };

  let child: ChildProcess;
  const stdio = (wanted: boolean) => (wanted ? "pipe" : "ignore");
  const prefix = spec.prefix ?? [];
  if (prefix.length && !spec.tty && !resolveCommand(spec.argv[0] ?? "", spec.env, spec.cwd)) {
    finish(
      internalError(
        `exec: ${JSON.stringify(spec.argv[0] ?? "")}: executable file not found in $PATH`,
      ),
    );
    return;
  }
  try {
    if (spec.tty) {
      const command = spec.argv.map(shellQuote).join(" ");
      const [cmd, ...args] = [...prefix, "script", "-q", "-e", "-c", command, "/dev/null"];
      child = spawn(cmd, args, {
        cwd: spec.cwd,
        env: spec.env,
        detached: true,
        // The session keeps its input open even without -i, as a terminal would.
        stdio: ["pipe", stdio(spec.stdout), "ignore"],
      });
    } else {
      const [cmd, ...args] = [...prefix, ...spec.argv];
      child = spawn(cmd ?? "", args, {
        cwd: spec.cwd,
        env: spec.env,
        detached: true,
        stdio: [stdio(spec.stdin), stdio(spec.stdout), stdio(spec.stderr)],
      });
    }
  } catch (err) {
    finish(internalError((err as Error).message));
    return;
  }
  sessions.add(uid, child);
  let started = false;
  child.once("spawn", () => {
    started = true;
  });
  child.once("error", (err: NodeJS.ErrnoException) => {
    if (started) return;
    const cmd = spec.tty ? "script" : (spec.argv[0] ?? "");
    finish(
      internalError(
        err.code === "ENOENT"
          ? `exec: ${JSON.stringify(cmd)}: executable file not found in $PATH`
          : `exec: ${JSON.stringify(cmd)}: ${err.message}`,
      ),
    );
  });
  child.stdout?.on("data", (d: Buffer) => send(STDOUT, d, child.stdout ?? undefined));
  child.stderr?.on("data", (d: Buffer) => send(STDERR, d, child.stderr ?? undefined));
  child.stdin?.on("error", () => {});
  child.once("close", (code, signal) => {
    if (!started) return;
    const exit = code ?? 128 + (signal ? (osSignal(signal) ?? 9) : 9);
    finish(exitStatus(spec.argv, exit));
  });

  // Resizes: applied to the session's terminal once it exists.
  let size: { Width: number; Height: number } | undefined;
  let resizeTimer: NodeJS.Timeout | undefined;
  const applySize = (tries: number) => {
    resizeTimer = undefined;
    if (!size || !child.pid || child.exitCode !== null) return;
    const tty = sessionTerminal(child.pid);
    if (!tty) {
      if (tries > 0) resizeTimer = setTimeout(() => applySize(tries - 1), 50);
      return;
    }
    const stty = spawn(
      "stty",
      ["-F", tty, "rows", String(size.Height), "cols", String(size.Width)],
      { stdio: "ignore" },
    );
    stty.on("error", () => {});
  };

  ws.on("message", (data: Buffer, isBinary: boolean) => {
    if (!isBinary || data.length === 0) return;
    const channel = data[0];
    const body = data.subarray(1);
    if (channel === STDIN) {
      if (spec.stdin && child.stdin?.writable) child.stdin.write(body);
    } else if (channel === RESIZE && spec.tty) {
      try {
        const s = JSON.parse(body.toString("utf8")) as { Width?: number; Height?: number };
        if (Number.isInteger(s.Width) && Number.isInteger(s.Height)) {
          size = { Width: s.Width ?? 0, Height: s.Height ?? 0 };
          if (resizeTimer) clearTimeout(resizeTimer);
          applySize(40);
        }
      } catch {}
    } else if (channel === CLOSE && v5 && body[0] === STDIN) {
      child.stdin?.end();
    }
  });
  ws.on("close", () => {
    if (resizeTimer) clearTimeout(resizeTimer);
    // The client went before the command ended: nothing is left running.
    killGroup(child);
  });
  ws.on("error", () => killGroup(child));
}

function osSignal(name: NodeJS.Signals): number | undefined {
  const n = (osConstants.signals as Record<string, number>)[name];
  return typeof n === "number" ? n : undefined;
}
