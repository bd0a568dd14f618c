/**
 * A real `setpoint up` (with a token file, for RBAC checks) and a real `setpoint
 * agent` as its node, as the tests of the agent's endpoint use them (logs, exec,
 * port-forward, attach): a client and a kubectl for the admin, and a stop that
 * leaves no process behind (the agent, its service proxy, its Pods' processes,
 * the apiserver).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client, loadKubeconfig } from "@setpoint/runtime";
import { Kubectl } from "../e2e/helpers/kubectl.ts";
import { type SetpointProcess, startSetpoint } from "../e2e/helpers/setpoint.ts";
import {
  type AgentProcess,
  type AgentProcessOptions,
  killPodProcesses,
  startAgentProcess,
  stopChild,
  stopServiceProxies,
} from "./agent-process.ts";
import { removeTempDirs, tempDir, testImageStore } from "./helpers.ts";

export interface UpWithAgent {
  up: SetpointProcess;
  agent: AgentProcess;
  /** How the agent was started (to start it again). */
  agentOptions: AgentProcessOptions;
  client: Client;
  kubectl: Kubectl;
}

export interface UpWithAgentOptions {
  /** Prefix of the temporary directory. */
  prefix: string;
  nodeName: string;
  /** The second octet of the Pods' addresses (127.RANGE.x.y). */
  range: number;
  /** `token,user,uid` lines of the token file. */
  tokens: string[];
}

export async function startUpWithAgent(opts: UpWithAgentOptions): Promise<UpWithAgent> {
  const dir = tempDir(opts.prefix);
  const images = testImageStore(join(dir, "images"));
  const tokens = join(dir, "tokens.csv");
  writeFileSync(tokens, opts.tokens.map((line) => `${line}\n`).join(""));
  const up = await startSetpoint(["--data-dir", join(dir, "up"), "--token-auth-file", tokens]);
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
  await parts?.kubectl?.close();
  parts?.client?.close();
  if (parts?.agent) await stopChild(parts.agent.child);
  // The agent's service proxy and log relay outlive it, as its Pods do.
  await stopServiceProxies();
  killPodProcesses(range);
  await parts?.up?.stop();
  removeTempDirs();
}
