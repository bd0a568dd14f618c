/**
 * `setpoint up` as a real child process, started the way a user starts it
 * (`node bin/setpoint.mjs up ...`), with the URL read from what it prints.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import type { Target } from "./http.ts";

/** The `setpoint` entry point of this checkout. */
export const SETPOINT_BIN = resolve(
  dirname(fileURLToPath(import.meta.url)),
  "../../../bin/setpoint.mjs",
);
/** Longest wait for `setpoint up` to print where it serves (includes compiling sources). */
export const START_TIMEOUT_MS = 30_000;
/** Longest wait for the process to exit after a signal. */
export const EXIT_TIMEOUT_MS = 15_000;

const SERVING = /^Setpoint is serving at (\S+) \(storage: (\w+)\)$/m;
const EXPORT = /^export KUBECONFIG=(.+)$/m;

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `setpoint args...` to completion (for bad-flag checks and the like). */
export function runSetpoint(args: string[], timeoutMs = START_TIMEOUT_MS): Promise<Exit> {
  const child = spawn(process.execPath, [SETPOINT_BIN, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const out = collect(child);
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  return out.exited.finally(() => clearTimeout(timer));
}

function collect(child: ChildProcess): { text: () => [string, string]; exited: Promise<Exit> } {
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const exited = new Promise<Exit>((done) => {
    child.on("close", (code, signal) => done({ code, signal, stdout, stderr }));
  });
  return { text: () => [stdout, stderr], exited };
}

/** A running `setpoint up`. */
export interface SetpointProcess {
  readonly child: ChildProcess;
  /** The URL from "Setpoint is serving at ...". */
  readonly url: string;
  /** The storage it reported. */
  readonly storage: string;
  /** The path from the printed `export KUBECONFIG=...` line. */
  readonly kubeconfig: string;
  /** URL, CA and admin token read from that kubeconfig. */
  readonly target: Required<Target>;
  stdout(): string;
  stderr(): string;
  /** Resolves when the process exits. */
  readonly exited: Promise<Exit>;
  /** Sends `signal` (default SIGTERM) and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<Exit>;
}

interface KubeconfigFile {
  clusters: { cluster: { server: string; "certificate-authority-data"?: string } }[];
  users: { user: { token?: string } }[];
}

/** Reads server URL, CA and token from a kubeconfig written by `setpoint up`. */
export function readTarget(kubeconfig: string): Required<Target> {
  const doc = parse(readFileSync(kubeconfig, "utf8")) as KubeconfigFile;
  const cluster = doc.clusters[0].cluster;
  return {
    url: cluster.server,
    ca: Buffer.from(cluster["certificate-authority-data"] ?? "", "base64").toString("utf8"),
    token: doc.users[0].user.token ?? "",
  };
}

/**
 * Starts `setpoint up --listen 127.0.0.1:0 --no-agent --no-gateway args...` (`--agent`
 * in args: with its node agent; `--gateway-listen` in args: with its gateway) and waits
 * for its serving line.
 */
export async function startSetpoint(args: string[]): Promise<SetpointProcess> {
  // No node agent unless a test asks for one (--agent): it would run Pods on this host.
  const agent = args.includes("--agent");
  const rest = args.filter((a) => a !== "--agent");
  // Nor a gateway unless one is asked for with --gateway-listen.
  const gateway = args.includes("--gateway-listen");
  const base = [
    "up",
    "--listen",
    "127.0.0.1:0",
    // The agent's endpoint on a free port: tests run side by side.
    ...(agent
      ? args.includes("--agent-listen")
        ? []
        : ["--agent-listen", "127.0.0.1:0"]
      : ["--no-agent"]),
    ...(gateway ? [] : ["--no-gateway"]),
  ];
  const child = spawn(process.execPath, [SETPOINT_BIN, ...base, ...rest], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const out = collect(child);
  const deadline = Date.now() + START_TIMEOUT_MS;
  let done = false;
  void out.exited.then(() => {
    done = true;
  });
  for (;;) {
    const [stdout, stderr] = out.text();
    const serving = SERVING.exec(stdout);
    const exported = EXPORT.exec(stdout);
    if (serving && exported) {
      const kubeconfig = exported[1];
      return {
        child,
        url: serving[1],
        storage: serving[2],
        kubeconfig,
        target: readTarget(kubeconfig),
        stdout: () => out.text()[0],
        stderr: () => out.text()[1],
        exited: out.exited,
        stop: async (signal: NodeJS.Signals = "SIGTERM") => {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal);
          const timer = setTimeout(() => child.kill("SIGKILL"), EXIT_TIMEOUT_MS);
          return out.exited.finally(() => clearTimeout(timer));
        },
      };
    }
    if (done || Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(
        `setpoint up did not start (${done ? "exited" : "timed out"})\nstdout:\n${stdout}\nstderr:\n${stderr}`,
      );
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The data dir's kubeconfig path as `setpoint up` writes it. */
export function kubeconfigPath(dataDir: string): string {
  return join(resolve(dataDir), "kubeconfig");
}
