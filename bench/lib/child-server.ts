/**
 * Starting and talking to a benchmark server child process (bench/lib/api-child.ts).
 */
import { type ChildProcess, fork } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ChildStats, FromChild, ToChild } from "./api-child.ts";

const CHILD = join(dirname(fileURLToPath(import.meta.url)), "api-child.ts");
/** Longest wait for a child to start listening. */
export const CHILD_START_TIMEOUT_MS = 60_000;

export type ChildMode = "api" | "bare";

/** A running server child. */
export class ChildServer {
  #nextId = 0;
  #waiting = new Map<number, (stats: ChildStats) => void>();
  #cannedOk: (() => void) | undefined;
  #snapshot: ((file: string) => void) | undefined;

  private constructor(
    readonly mode: ChildMode,
    readonly child: ChildProcess,
    readonly url: string,
    readonly ca: string | undefined,
  ) {
    child.on("message", (msg: FromChild) => {
      if (msg.type === "stats") {
        this.#waiting.get(msg.id)?.(msg);
        this.#waiting.delete(msg.id);
      } else if (msg.type === "canned-ok") {
        this.#cannedOk?.();
      } else if (msg.type === "heap-snapshot") {
        this.#snapshot?.(msg.file);
      }
    });
  }

  /** Forks the child and waits until it listens; `volatile`: SQLite without fsync at commit. */
  static start(mode: ChildMode, opts: { tls: boolean; volatile?: boolean }): Promise<ChildServer> {
    const args = [mode, ...(opts.tls ? ["--tls"] : []), ...(opts.volatile ? ["--volatile"] : [])];
    const child = fork(CHILD, args, {
      execArgv: [
        "--import",
        "tsx",
        "--expose-gc",
        // BENCH_NODE_ARGS="--trace-gc ...": more node/V8 flags for the server children.
        ...(process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(" ") : []),
        // BENCH_PROFILE_DIR=dir: CPU profiles of the API server children, for
        // finding where the time goes (open in Chrome DevTools, or summarize).
        ...(process.env.BENCH_PROFILE_DIR && mode === "api"
          ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`]
          : []),
      ],
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        reject(new Error(`${mode} server did not start`));
      }, CHILD_START_TIMEOUT_MS);
      child.once("exit", (code) => reject(new Error(`${mode} server exited with ${code}`)));
      child.on("message", (msg: FromChild) => {
        if (msg.type !== "ready") return;
        clearTimeout(timer);
        resolve(new ChildServer(mode, child, msg.url, msg.ca));
      });
    });
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** Memory and CPU of the child; `gc` forces a collection first. */
  stats(gc = false): Promise<ChildStats> {
    const id = this.#nextId++;
    return new Promise((resolve) => {
      this.#waiting.set(id, resolve);
      this.child.send({ type: "stats", id, gc } satisfies ToChild);
    });
  }

  /** Sets a bare server's canned answers. */
  canned(msg: { created?: string; listFile?: string }): Promise<void> {
    return new Promise((resolve) => {
      this.#cannedOk = resolve;
      this.child.send({ type: "canned", ...msg } satisfies ToChild);
    });
  }

  /** Writes a heap snapshot of the child into `dir`; resolves with its path. */
  heapSnapshot(dir: string): Promise<string> {
    return new Promise((resolve) => {
      this.#snapshot = resolve;
      this.child.send({ type: "heap-snapshot", dir } satisfies ToChild);
    });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((r) => this.child.once("exit", r));
    this.child.send({ type: "stop" } satisfies ToChild);
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  }
}
