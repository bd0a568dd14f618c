/**
 * A real `setpoint up` (with a token file, for RBAC checks) and a real `setpoint
 * agent` as its node, as the tests of the agent's endpoint use them (logs, exec,
 * port-forward, attach): a client and a kubectl for the admin, and a stop that
 * leaves no process behind (the agent, its service proxy, its Pods' processes,
 * the apiserver).
 */
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client, loadKubeconfig } from "@setpoint/runtime";
import { Kubectl, RunningKubectl } from "../e2e/helpers/kubectl.ts";
import { type SetpointProcess, startSetpoint } from "../e2e/helpers/setpoint.ts";
import {
  type AgentProcess,
  type AgentProcessOptions,
  killPodProcesses,
  startAgentProcess,
  stopChild,
  stopServiceProxies,
} from "./agent-process.ts";
import { eventually, removeTempDirs, tempDir, testImageStore } from "./helpers.ts";

export interface UpWithAgent {
  up: SetpointProcess;
  agent: AgentProcess;
  /** How the agent was started (to start it again). */
  agentOptions: AgentProcessOptions;
  client: Client;
  kubectl: Kubectl;
}

/** The kubectl processes startKubectl started, stopped by stopUpWithAgent. */
const started = new Set<RunningKubectl>();

/**
 * Starts `kubectl args...` against `kubectl`'s server, its stdin a pipe the test
 * writes to; `env` is added to its environment, and with `tty` it runs in a
 * pseudo-terminal of its own (util-linux `script`), as at a user's terminal.
 */
export function startKubectl(
  kubectl: Kubectl,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; tty?: boolean } = {},
): RunningKubectl {
  const [cmd, argv] = opts.tty
    ? ["script", ["-q", "-e", "-c", `kubectl ${args.join(" ")}`, "/dev/null"]]
    : ["kubectl", args];
  const child = spawn(cmd as string, argv as string[], {
    env: { ...process.env, HOME: kubectl.home, KUBECONFIG: kubectl.kubeconfig, ...opts.env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  const running = new RunningKubectl(child);
  started.add(running);
  void running.exited.then(() => started.delete(running));
  return running;
}

/**
 * Lets `user` (authenticated by `token`) get Pods, and waits until it can read
 * `pod`: the first step of each RBAC test of a Pod subresource.
 */
export async function letReadPods(
  kubectl: Kubectl,
  user: string,
  token: string,
  pod: string,
): Promise<void> {
  await kubectl.ok(["create", "role", "pod-reader", "--verb=get", "--resource=pods"]);
  await kubectl.ok(["create", "rolebinding", "pod-reader", "--role=pod-reader", `--user=${user}`]);
  await eventually(
    `${user} reading Pods`,
    async () => (await kubectl.run([`--token=${token}`, "get", "pod", pod])).code === 0,
  );
}

export interface UpWithAgentOptions {
  /** Prefix of the temporary directory. */
  prefix: string;
  nodeName: string;
  /** The second octet of the Pods' addresses (127.RANGE.x.y). */
  range: number;
  /** `token,user,uid` lines of the token file. */
  tokens: string[];
  /** More flags of `setpoint up`. */
  upArgs?: string[];
}

export async function startUpWithAgent(opts: UpWithAgentOptions): Promise<UpWithAgent> {
  const dir = tempDir(opts.prefix);
  const images = testImageStore(join(dir, "images"));
  const tokens = join(dir, "tokens.csv");
  writeFileSync(tokens, opts.tokens.map((line) => `${line}\n`).join(""));
  const up = await startSetpoint([
    "--data-dir",
    join(dir, "up"),
    "--token-auth-file",
    tokens,
    ...(opts.upArgs ?? []),
  ]);
  const agentOptions: AgentProcessOptions = {
    kubeconfig: up.kubeconfig,
    nodeName: opts.nodeName,
    dataDir: join(dir, "agent"),
    imageDir: images.root,
    range: opts.range,
  };
  const agent = await startAgentProcess(agentOptions);
  const client = new Client(loadKubeconfig({ path: up.kubeconfig }));
  return { up, agent, agentOptions, client, kubectl: new Kubectl(up.kubeconfig) };
}

/** Stops what startUpWithAgent started (any part of it), and removes the temporary directories. */
export async function stopUpWithAgent(
  parts: Partial<UpWithAgent> | undefined,
  range: number,
): Promise<void> {
  await Promise.all([...started].map((r) => r.stop()));
  await parts?.kubectl?.close();
  parts?.client?.close();
  if (parts?.agent) await stopChild(parts.agent.child);
  // The agent's service proxy and log relay outlive it, as its Pods do.
  await stopServiceProxies();
  killPodProcesses(range);
  await parts?.up?.stop();
  removeTempDirs();
}
