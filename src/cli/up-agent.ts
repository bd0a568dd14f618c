/**
 * The node agent `setpoint up` runs beside the control plane (unless --no-agent):
 * `setpoint agent` in a process of its own, on the data dir's kubeconfig, named
 * after the host (or "setpoint"), its state in DATA/agent and its images in
 * DATA/images (where `setpoint image` puts them by default). Its logs go to up's
 * stderr. It exits with `up`; its Pods keep running, and the next `up` adopts them.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { defaultNodeName } from "./node-name.ts";

export interface NodeAgentProcess {
  readonly child: ChildProcess;
  readonly nodeName: string;
  /** Asks the agent to exit (its Pods keep running) and waits. */
  stop(): Promise<void>;
}

export function startNodeAgent(opts: {
  dataDir: string;
  kubeconfig: string;
  /** The agent's authenticated endpoint (--secure-listen). */
  secureListen: string;
  logLevel: string;
  logFormat?: string | undefined;
}): NodeAgentProcess {
  const nodeName = defaultNodeName();
  const args = [
    process.argv[1],
    "agent",
    "--kubeconfig",
    opts.kubeconfig,
    "--node-name",
    nodeName,
    "--data-dir",
    join(opts.dataDir, "agent"),
    "--image-dir",
    join(opts.dataDir, "images"),
    "--secure-listen",
    opts.secureListen,
    "--parent-pid",
    String(process.pid),
    "--log-level",
    opts.logLevel,
    ...(opts.logFormat ? ["--log-format", opts.logFormat] : []),
  ];
  const child = spawn(process.execPath, args, { stdio: ["ignore", "ignore", "inherit"] });
  return {
    child,
    nodeName,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
