/**
 * `setpoint agent` as a real process for the outage tests: start it (waiting for
 * its endpoint line), stop it, ask its endpoint which Pods it runs, and find the
 * Pod processes of a Pod address range in /proc.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { SETPOINT_BIN } from "../e2e/helpers/setpoint.ts";
import { currentTempDirs, eventually, helperProcesses } from "./helpers.ts";

export interface AgentProcess {
  child: ChildProcess;
  endpoint: string;
  output: () => string;
}

export interface AgentProcessOptions {
  kubeconfig: string;
  nodeName: string;
  dataDir: string;
  imageDir: string;
  /** The second octet of the Pods' addresses (127.RANGE.x.y). */
  range: number;
  /** More flags (e.g. --isolation=namespaces). */
  args?: string[];
}

/** Starts `setpoint agent` and resolves once it prints its endpoint. */
export async function startAgentProcess(opts: AgentProcessOptions): Promise<AgentProcess> {
  const child = spawn(
    process.execPath,
    [
      SETPOINT_BIN,
      "agent",
      "--kubeconfig",
      opts.kubeconfig,
      "--node-name",
      opts.nodeName,
      "--data-dir",
      opts.dataDir,
      "--image-dir",
      opts.imageDir,
      "--pod-range",
      String(opts.range),
      "--secure-listen",
      "127.0.0.1:0",
      "--log-format",
      "json",
      ...(opts.args ?? []),
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  child.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const endpoint = await eventually(
    "the agent to start",
    () =>
      /endpoint (http:\/\/\S+)/.exec(out)?.[1] ?? (child.exitCode !== null ? "exited" : undefined),
    30_000,
  ).catch((err: Error) => {
    child.kill("SIGKILL");
    throw err;
  });
  if (endpoint === "exited") throw new Error(`the agent exited:\n${out}`);
  return { child, endpoint, output: () => out };
}

/** Sends `signal` and waits for the exit (SIGKILL after 15 s). */
export async function stopChild(
  child: ChildProcess,
  signal: NodeJS.Signals = "SIGTERM",
): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill(signal);
  const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
  await exited;
  clearTimeout(timer);
}

export interface PodSummary {
  name: string;
  podIP: string;
  containers: { pid?: number; restartCount: number }[];
}

/** The Pods the agent runs, as its endpoint's /pods lists them, by name. */
export async function agentPods(endpoint: string): Promise<PodSummary[]> {
  const res = await fetch(`${endpoint}/pods`);
  return ((await res.json()) as PodSummary[]).sort((a, b) => a.name.localeCompare(b.name));
}

/** Pids of the live processes whose environment says they are Pods of `range` (first octet `first`, 127 by default). */
export function podProcesses(range: number, first = 127): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const env = readFileSync(`/proc/${name}/environ`, "utf8");
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
      const vars = env.split("\0");
      if (state !== "Z" && vars.some((v) => v.startsWith(`SETPOINT_POD_IP=${first}.${range}.`))) {
        out.push(Number(name));
      }
    } catch {}
  }
  return out.sort((a, b) => a - b);
}

/** SIGKILLs the process groups of whatever Pods of `range` are left. */
export function killPodProcesses(range: number, first = 127): void {
  for (const pid of podProcesses(range, first)) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {}
  }
}

/**
 * Stops the service proxy and log relay processes agents left running on `dirs`
 * (by default any temporary directory of this test file): an agent stopped
 * without --stop-pods-on-exit leaves them running, as its Pods. SIGTERM, SIGKILL
 * after 10 s; resolves once they are gone.
 */
export async function stopServiceProxies(
  dirs: readonly string[] = currentTempDirs(),
): Promise<void> {
  const pids = helperProcesses(dirs);
  for (const pid of pids) {
    try {
      process.kill(-pid, "SIGTERM");
    } catch {}
  }
  const deadline = Date.now() + 10_000;
  while (helperProcesses(dirs).length > 0) {
    if (Date.now() > deadline) {
      for (const pid of helperProcesses(dirs)) {
        try {
          process.kill(-pid, "SIGKILL");
        } catch {}
      }
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
