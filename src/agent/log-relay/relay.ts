/**
 * The log relay: the process between containers and their log files, as a
 * container runtime's shim is. Each run of a container writes its stdout and
 * stderr into two named pipes beside its log file (`<run>.log.stdout.fifo`,
 * `<run>.log.stderr.fifo`); the relay reads them and appends every line to the
 * log file in the CRI format (cri-format.ts), stamped with the time it arrived.
 *
 * It is a process of its own, started by the agent and outliving it (as the
 * Pods do), so containers keep logging while the agent restarts. Its own restart
 * loses nothing either: each container holds its pipe open for reading and
 * writing, so the pipe never breaks (no SIGPIPE) and what is written meanwhile
 * waits in the pipe (64 KiB; a container writing more waits) until the relay
 * opens the pipe again.
 *
 * - The agent asks for a run's pipes on a Unix socket (RELAY_SOCKET in the data
 *   directory), one JSON line `{"open": "<log path>"}`, answered with
 *   `{"opened": ...}` or `{"failed": ..., "error": ...}` once the pipes are open.
 * - At start and every RESCAN_MS, the relay also opens every such pipe it finds
 *   under DATA/pods/, so none is missed while it was down.
 * - A pipe ends when every process holding it is gone: the relay writes what is
 *   left of an unfinished line, removes the pipe, and closes the log file once
 *   both streams ended. No pipe left means the run's log is complete.
 * - Past `maxBytes` the log file is rotated: `.1` ... `.(maxFiles-1)` shift up,
 *   the file becomes `.1` and a new one is started.
 * - It exits when its data directory is removed.
 */
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  mkdirSync,
  openSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { createServer, type Server, Socket } from "node:net";
import { dirname, join, resolve, sep } from "node:path";
import type { RuntimeLogger } from "@setpoint/runtime";
import { LOG_MAX_BYTES, LOG_MAX_FILES } from "../pods/logs.ts";
import { LineFramer, type LogStream } from "./cri-format.ts";
import { allPipesLeft, PIPE_SUFFIX, pipePaths, relaySocketPath } from "./paths.ts";

/** How often the relay looks for pipes it does not read yet. */
export const RESCAN_MS = 5_000;

export interface LogRelayOptions {
  dataDir: string;
  logger: RuntimeLogger;
  maxBytes?: number;
  maxFiles?: number;
  /** Called when the data directory is gone (the process exits). */
  onDataDirGone?: () => void;
}

/** One run's log file and the pipes feeding it. */
interface RunLog {
  path: string;
  fd: number;
  size: number;
  open: number;
  sockets: Socket[];
}

export class LogRelay {
  private server: Server | undefined;
  private readonly runs = new Map<string, RunLog>();
  private timer: NodeJS.Timeout | undefined;
  private readonly podsDir: string;
  private readonly maxBytes: number;
  private readonly maxFiles: number;

  constructor(private readonly opts: LogRelayOptions) {
    this.podsDir = join(resolve(opts.dataDir), "pods");
    this.maxBytes = opts.maxBytes ?? LOG_MAX_BYTES;
    this.maxFiles = opts.maxFiles ?? LOG_MAX_FILES;
  }

  /** Listens for the agent, then opens the pipes already there. */
  async start(): Promise<void> {
    const path = relaySocketPath(this.opts.dataDir);
    if (!path.startsWith("\0")) rmSync(path, { force: true });
    const server = createServer((conn) => this.serve(conn));
    this.server = server;
    await new Promise<void>((done, fail) => {
      server.once("error", fail);
      server.listen(path, () => {
        server.off("error", fail);
        done();
      });
    });
    this.scan();
    this.timer = setInterval(() => {
      if (!existsSync(this.opts.dataDir)) {
        this.opts.onDataDirGone?.();
        return;
      }
      this.scan();
    }, RESCAN_MS);
    this.timer.unref();
  }

  /** The runs being relayed (their log paths). */
  get relaying(): string[] {
    return [...this.runs.keys()];
  }

  private serve(conn: Socket): void {
    let buf = "";
    conn.setEncoding("utf8");
    conn.on("error", () => {});
    conn.on("data", (text: string) => {
      buf += text;
      for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        let path: unknown;
        try {
          path = (JSON.parse(line) as { open?: unknown }).open;
        } catch {
          path = undefined;
        }
        if (typeof path !== "string") continue;
        const error = this.open(path);
        conn.write(`${JSON.stringify(error ? { failed: path, error } : { opened: path })}\n`);
      }
    });
  }

  /** Opens a run's pipes (idempotent); an error message when it cannot. */
  open(logPath: string): string | undefined {
    const path = resolve(logPath);
    if (!path.startsWith(`${this.podsDir}${sep}`)) return `not under ${this.podsDir}`;
    if (this.runs.has(path)) return undefined;
    const pipes = pipePaths(path);
    const fds: [LogStream, number][] = [];
    try {
      for (const [stream, pipe] of Object.entries(pipes) as [LogStream, string][]) {
        if (!existsSync(pipe)) continue;
        const fd = openSync(pipe, constants.O_RDONLY | constants.O_NONBLOCK);
        if (!fstatSync(fd).isFIFO()) {
          closeSync(fd);
          continue;
        }
        fds.push([stream, fd]);
      }
      if (fds.length === 0) return "no pipes";
      mkdirSync(dirname(path), { recursive: true });
      const fd = openSync(path, "a", 0o640);
      const run: RunLog = { path, fd, size: fstatSync(fd).size, open: fds.length, sockets: [] };
      this.runs.set(path, run);
      for (const [stream, pipeFd] of fds) this.relay(run, stream, pipeFd, pipes[stream]);
      return undefined;
    } catch (err) {
      for (const [, fd] of fds) closeSync(fd);
      return (err as Error).message;
    }
  }

  private relay(run: RunLog, stream: LogStream, fd: number, pipe: string): void {
    const framer = new LineFramer(stream);
    const socket = new Socket({ fd, readable: true, writable: false });
    run.sockets.push(socket);
    socket.on("data", (chunk: Buffer) => this.append(run, framer.push(chunk)));
    socket.on("error", (err) => {
      this.opts.logger.warn({ pipe, err: err.message }, "reading a container's output failed");
    });
    socket.once("close", () => {
      this.append(run, framer.end());
      try {
        unlinkSync(pipe);
      } catch {}
      if (--run.open === 0) {
        closeSync(run.fd);
        this.runs.delete(run.path);
      }
    });
  }

  private append(run: RunLog, records: Buffer): void {
    if (!records.length || run.fd < 0) return;
    try {
      let off = 0;
      while (off < records.length) off += writeSync(run.fd, records, off);
      run.size += records.length;
      if (run.size > this.maxBytes) this.rotate(run);
    } catch (err) {
      this.opts.logger.warn({ log: run.path, err: (err as Error).message }, "writing a log failed");
    }
  }

  /** `.1` ... shift up, the file becomes `.1`, a new file is started. */
  private rotate(run: RunLog): void {
    const p = run.path;
    for (let i = this.maxFiles - 1; i >= 2; i--) {
      if (existsSync(`${p}.${i - 1}`)) renameSync(`${p}.${i - 1}`, `${p}.${i}`);
    }
    closeSync(run.fd);
    renameSync(p, `${p}.1`);
    run.fd = openSync(p, "a", 0o640);
    run.size = 0;
  }

  /** Opens the pipes under DATA/pods/ that are not read yet. */
  scan(): void {
    for (const pipe of allPipesLeft(this.opts.dataDir)) {
      const suffix = Object.values(PIPE_SUFFIX).find((x) => pipe.endsWith(x)) ?? "";
      const log = resolve(pipe.slice(0, -suffix.length));
      if (!this.runs.has(log)) this.open(log);
    }
  }

  /** Stops reading (the pipes stay for the next relay) and closes the log files. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    for (const run of this.runs.values()) {
      for (const s of run.sockets) {
        s.removeAllListeners("close");
        s.destroy();
      }
      closeSync(run.fd);
      run.fd = -1;
    }
    this.runs.clear();
    const server = this.server;
    if (server) await new Promise<void>((done) => server.close(() => done()));
  }
}
