/**
 * Starting and talking to a benchmark server child process (bench/lib/api-child.ts).
 *
 * The child runs compiled, as the `setpoint` command does: bench/lib/api-child.ts is
 * bundled with esbuild by scripts/build.mjs (with the SQLite writer thread's compiled
 * entry beside it, as in dist/), once per benchmark process, into a folder of its own
 * under node_modules/.cache (inside the package, so the bundle finds its dependencies),
 * removed when the benchmark exits. A server child run through tsx instead would carry
 * the TypeScript loader in its main thread and again in the writer thread, tens of MiB
 * that no user's server holds. BENCH_FROM_SOURCE=1 runs the sources through tsx (to
 * compare).
 */
import { type ChildProcess, execFileSync, fork } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ChildStats, FromChild, ToChild } from "./api-child.ts";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, "..", "..");
const SOURCE = join(HERE, "api-child.ts");
const BUILD = join(ROOT, "scripts", "build.mjs");
const FROM_SOURCE = process.env.BENCH_FROM_SOURCE === "1";

let compiled: string | undefined;

/** The child's entry: bundled on first use (see the header), or the TypeScript source. */
function childEntry(): string {
  if (FROM_SOURCE) return SOURCE;
  if (compiled) return compiled;
  const cache = join(ROOT, "node_modules", ".cache");
  mkdirSync(cache, { recursive: true });
  const outdir = join(cache, `setpoint-bench-${process.pid}`);
  execFileSync(process.execPath, [BUILD, "--outdir", outdir, "--entry", `api-child=${SOURCE}`], {
    stdio: "inherit",
  });
  process.once("exit", () => rmSync(outdir, { recursive: true, force: true }));
  compiled = join(outdir, "api-child.mjs");
  return compiled;
}
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
    /** The admin's bearer token (servers started with `auth`). */
    readonly token: string | undefined,
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

  /**
   * Forks the child and waits until it listens; `volatile`: SQLite without fsync at
   * commit; `auth`: requests need a bearer token (see api-child.ts).
   */
  static start(
    mode: ChildMode,
    opts: { tls: boolean; volatile?: boolean; auth?: boolean },
  ): Promise<ChildServer> {
    const args = [
      mode,
      ...(opts.tls ? ["--tls"] : []),
      ...(opts.volatile ? ["--volatile"] : []),
      ...(opts.auth ? ["--auth"] : []),
    ];
    const child = fork(childEntry(), args, {
      execArgv: [
        ...(FROM_SOURCE ? ["--import", "tsx"] : []),
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
        resolve(new ChildServer(mode, child, msg.url, msg.ca, msg.token));
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
