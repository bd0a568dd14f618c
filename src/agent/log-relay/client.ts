/**
 * The agent's side of the log relay (relay.ts): it makes a run's two named
 * pipes, opens them for the container, and hands them to the relay.
 *
 * - Making a named pipe takes a process (`mkfifo`; Node has no call for it), so
 *   pipes are made ahead, SPARE_BATCH at a time, in DATA/log-relay-spare/, and a
 *   run takes two: each is opened (read and write, which never blocks and keeps
 *   the pipe whole while its holders live) and only then renamed beside the log
 *   file, so a pipe found there always has a holder.
 * - After the container is spawned (it holds the pipes too), `handOver` asks the
 *   relay to read them. The agent keeps its own descriptors for the whole run
 *   (`hold` opens them again for a process adopted after a restart): a pipe's
 *   content is lost when its last holder closes it, so output written while the
 *   relay was down must not go with the container's end. When the run ends,
 *   `release` asks the relay once more and closes the agent's descriptors only
 *   when it answers (it has the pipes open, or they are gone).
 * - Requests are asked again whenever the connection comes back.
 */
import { execFile } from "node:child_process";
import {
  closeSync,
  constants,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
} from "node:fs";
import { createConnection, type Socket } from "node:net";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import type { LogStream } from "./cri-format.ts";
import { pipePaths, relaySocketPath } from "./paths.ts";

/** Where pipes made ahead wait, in the data directory. */
export const SPARE_DIR = "log-relay-spare";
/** How many pipes are made at once; more are made when fewer than half are left. */
export const SPARE_BATCH = 16;
/** How long a container's start waits for the relay to answer. */
export const READY_TIMEOUT_MS = 5_000;
/** How often a lost connection to the relay is tried again. */
export const RECONNECT_MS = 500;

const run = promisify(execFile);

/** A run's pipes, open for its container. */
export interface RunPipes {
  logPath: string;
  fds: Record<LogStream, number>;
}

export class LogRelayClient {
  private readonly spareDir: string;
  private spares: string[] = [];
  private making: Promise<void> | undefined;
  private seq = 0;
  private conn: Socket | undefined;
  private connecting = false;
  private reconnect: NodeJS.Timeout | undefined;
  private closed = false;
  /** The runs whose pipes the agent holds. */
  private readonly held = new Map<string, RunPipes>();
  /** Of those, the runs that ended: their descriptors go once the relay answers. */
  private readonly ending = new Set<string>();

  constructor(private readonly dataDir: string) {
    this.spareDir = join(dataDir, SPARE_DIR);
    mkdirSync(this.spareDir, { recursive: true });
    this.spares = readdirSync(this.spareDir).map((n) => join(this.spareDir, n));
  }

  private refill(): Promise<void> {
    if (!this.making) {
      const names = Array.from({ length: SPARE_BATCH }, () =>
        join(this.spareDir, `${process.pid}-${Date.now()}-${this.seq++}`),
      );
      this.making = run("mkfifo", ["-m", "600", ...names])
        .then(() => {
          this.spares.push(...names);
        })
        .finally(() => {
          this.making = undefined;
        });
    }
    return this.making;
  }

  private async spare(): Promise<string> {
    for (;;) {
      const p = this.spares.shift();
      if (this.spares.length < SPARE_BATCH / 2) this.refill().catch(() => {});
      if (p) return p;
      await this.refill();
    }
  }

  /** Makes a run's pipes beside `logPath`, open for its container. */
  async pipes(logPath: string): Promise<RunPipes> {
    mkdirSync(dirname(logPath), { recursive: true });
    const paths = pipePaths(logPath);
    const fds: Partial<Record<LogStream, number>> = {};
    try {
      for (const stream of ["stdout", "stderr"] as const) {
        let fd: number | undefined;
        let spare = "";
        while (fd === undefined) {
          spare = await this.spare();
          try {
            fd = openSync(spare, constants.O_RDWR);
          } catch {
            // gone (another agent's clean-up): take the next
          }
        }
        fds[stream] = fd;
        renameSync(spare, paths[stream]);
      }
    } catch (err) {
      for (const fd of Object.values(fds)) closeSync(fd);
      throw err;
    }
    return { logPath, fds: fds as Record<LogStream, number> };
  }

  /** Gives up a run's pipes whose container did not start. */
  discard(p: RunPipes): void {
    closeFds(p);
    for (const path of Object.values(pipePaths(p.logPath))) rmSync(path, { force: true });
  }

  /** Asks the relay to read a run's pipes (its container holds them now); the agent keeps holding them. */
  handOver(p: RunPipes): void {
    this.held.set(p.logPath, p);
    this.ask(p.logPath);
  }

  /** Holds the pipes of a run started by an earlier agent (adopted), if they are there. */
  hold(logPath: string): void {
    if (this.held.has(logPath)) return;
    const paths = pipePaths(logPath);
    const fds: Partial<Record<LogStream, number>> = {};
    for (const stream of ["stdout", "stderr"] as const) {
      try {
        fds[stream] = openSync(paths[stream], constants.O_RDWR | constants.O_NONBLOCK);
      } catch {
        fds[stream] = -1;
      }
    }
    this.handOver({ logPath, fds: fds as Record<LogStream, number> });
  }

  /** The run ended: the agent lets go of its pipes once the relay reads them. */
  release(logPath: string): void {
    if (!this.held.has(logPath)) return;
    this.ending.add(logPath);
    this.ask(logPath);
  }

  /** Runs whose pipes the agent holds (running, or ended and not yet answered). */
  get holding(): number {
    return this.held.size;
  }

  private ask(path: string): void {
    const conn = this.connect();
    if (conn && !conn.connecting) conn.write(`${JSON.stringify({ open: path })}\n`);
  }

  private answered(path: string): void {
    if (!this.ending.has(path)) return;
    this.ending.delete(path);
    const p = this.held.get(path);
    this.held.delete(path);
    if (p) closeFds(p);
  }

  private connect(): Socket | undefined {
    if (this.conn || this.connecting || this.closed) return this.conn;
    this.connecting = true;
    const conn = createConnection(relaySocketPath(this.dataDir));
    conn.unref();
    let buf = "";
    conn.setEncoding("utf8");
    conn.once("connect", () => {
      this.connecting = false;
      this.conn = conn;
      for (const path of this.held.keys()) conn.write(`${JSON.stringify({ open: path })}\n`);
    });
    conn.on("data", (text: string) => {
      buf += text;
      for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          const msg = JSON.parse(line) as { opened?: string; failed?: string };
          this.answered(msg.opened ?? msg.failed ?? "");
        } catch {}
      }
    });
    conn.on("error", () => {});
    conn.once("close", () => {
      this.connecting = false;
      if (this.conn === conn) this.conn = undefined;
      if (this.closed) return;
      this.reconnect ??= setTimeout(() => {
        this.reconnect = undefined;
        if (this.ending.size) this.connect();
      }, RECONNECT_MS);
      this.reconnect.unref();
    });
    return undefined;
  }

  /**
   * Resolves once the relay answers on its socket, or after `timeoutMs` (a
   * container then starts anyway: its output waits in the pipes). Lines are
   * stamped when the relay reads them, so a container is started once it can.
   */
  async ready(timeoutMs = READY_TIMEOUT_MS): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.conn) return true;
      if (this.closed || Date.now() >= deadline) return false;
      this.connect();
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Tries the relay again now (it was just started): the held runs are asked again. */
  retry(): void {
    if (this.held.size) this.connect();
  }

  /** Closes the connection and the agent's descriptors (the agent exits; the containers hold their pipes). */
  close(): void {
    this.closed = true;
    if (this.reconnect) clearTimeout(this.reconnect);
    this.conn?.destroy();
    for (const p of this.held.values()) closeFds(p);
    this.held.clear();
    this.ending.clear();
  }
}

function closeFds(p: RunPipes): void {
  for (const fd of [p.fds.stdout, p.fds.stderr]) {
    if (fd >= 0) closeSync(fd);
  }
}
