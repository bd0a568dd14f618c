/**
 * Running the real kubectl against a server: each Kubectl has its own HOME (kubectl
 * caches discovery there) and kubeconfig. `run` waits for a command to finish;
 * `start` keeps one running (`kubectl get -w`) and collects its output.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Longest a single kubectl command may run before it is killed. */
export const KUBECTL_TIMEOUT_MS = 30_000;
/** Longest wait for expected output from a running kubectl. */
export const OUTPUT_WAIT_MS = 15_000;

export interface KubectlResult {
  /** Exit code; null when killed by a signal (e.g. the timeout). */
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** Written to kubectl's stdin (for `-f -`). */
  input?: string;
  timeoutMs?: number;
}

/** A kubectl that runs until stopped, with its output so far. */
export class RunningKubectl {
  stdout = "";
  stderr = "";
  readonly exited: Promise<KubectlResult>;

  constructor(readonly child: ChildProcess) {
    child.stdout?.on("data", (d: Buffer) => {
      this.stdout += d.toString();
    });
    child.stderr?.on("data", (d: Buffer) => {
      this.stderr += d.toString();
    });
    this.exited = new Promise((resolve) => {
      child.on("close", (code) => resolve({ code, stdout: this.stdout, stderr: this.stderr }));
    });
  }

  /** Waits until stdout matches `pattern`; throws with the output so far on timeout or exit. */
  async waitFor(pattern: RegExp, timeoutMs = OUTPUT_WAIT_MS): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    let exited = false;
    void this.exited.then(() => {
      exited = true;
    });
    for (;;) {
      const m = this.stdout.match(pattern);
      if (m) return m;
      if (exited || Date.now() > deadline) {
        throw new Error(
          `kubectl output never matched ${pattern} (${exited ? "exited" : "timed out"})\n` +
            `stdout:\n${this.stdout}\nstderr:\n${this.stderr}`,
        );
      }
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /** Stops kubectl (SIGTERM) and waits for it to exit. */
  async stop(): Promise<KubectlResult> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGTERM");
    return this.exited;
  }
}

/** kubectl bound to one kubeconfig and a HOME of its own. */
export class Kubectl {
  readonly home: string;
  readonly #running = new Set<RunningKubectl>();

  constructor(
    readonly kubeconfig: string,
    home?: string,
  ) {
    this.home = home ?? mkdtempSync(join(tmpdir(), "setpoint-kubectl-home-"));
  }

  #spawn(args: string[]): ChildProcess {
    return spawn("kubectl", args, {
      env: { ...process.env, HOME: this.home, KUBECONFIG: this.kubeconfig },
      stdio: ["pipe", "pipe", "pipe"],
    });
  }

  /** Runs `kubectl args...` to completion. */
  run(args: string[], opts: RunOptions = {}): Promise<KubectlResult> {
    const running = new RunningKubectl(this.#spawn(args));
    running.child.stdin?.end(opts.input ?? "");
    const timer = setTimeout(
      () => running.child.kill("SIGKILL"),
      opts.timeoutMs ?? KUBECTL_TIMEOUT_MS,
    );
    return running.exited.finally(() => clearTimeout(timer));
  }

  /** Runs kubectl and returns its stdout; throws with stderr when it exits non-zero. */
  async ok(args: string[], opts: RunOptions = {}): Promise<string> {
    const r = await this.run(args, opts);
    if (r.code !== 0) {
      throw new Error(`kubectl ${args.join(" ")} exited ${r.code}\n${r.stderr}${r.stdout}`);
    }
    return r.stdout;
  }

  /** Runs kubectl expecting failure; returns its result (throws if it succeeded). */
  async fails(args: string[], opts: RunOptions = {}): Promise<KubectlResult> {
    const r = await this.run(args, opts);
    if (r.code === 0) throw new Error(`kubectl ${args.join(" ")} succeeded:\n${r.stdout}`);
    return r;
  }

  /** Starts a long-running kubectl (e.g. `get -w`); stopped by `stop()` or `close()`. */
  start(args: string[]): RunningKubectl {
    const running = new RunningKubectl(this.#spawn(args));
    running.child.stdin?.end();
    this.#running.add(running);
    void running.exited.then(() => this.#running.delete(running));
    return running;
  }

  /** Stops every running kubectl and removes HOME. */
  async close(): Promise<void> {
    await Promise.all([...this.#running].map((r) => r.stop()));
    rmSync(this.home, { recursive: true, force: true });
  }
}
