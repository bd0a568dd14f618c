/**
 * Helpers of the CLI tests: the real `setpoint` command run as a child process
 * (`node bin/setpoint.mjs ...`) against a test environment's kubeconfig, and a
 * small custom resource kind with a status subresource.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { KubeObject } from "@setpoint/api";
import { silentLogger } from "@setpoint/runtime";
import type { Client } from "../../packages/runtime/src/client/client.ts";
import { Manager } from "../../packages/runtime/src/manager/manager.ts";
import { startTestEnv, type TestEnv } from "../../src/testenv/testenv.ts";
import { SETPOINT_BIN } from "../e2e/helpers/setpoint.ts";
import { schemalessCrd } from "../helpers/crd.ts";

/** Longest a CLI run may take (compiling sources on a loaded machine included). */
export const CLI_TIMEOUT_MS = 60_000;

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `command args...` with its own HOME (removed after), USER=`user` and no
 * KUBECONFIG, and waits for it to exit (killed after CLI_TIMEOUT_MS). Its stdin
 * is a pipe: closed at once, or, given `answer`, closed after writing
 * `answer.text` and a newline once `answer.prompt` has appeared on stdout.
 */
function runWithOwnHome(
  command: string,
  args: string[],
  user: string,
  answer?: { prompt: string; text: string },
): Promise<CliResult> {
  const home = mkdtempSync(join(tmpdir(), "setpoint-cli-home-"));
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, USER: user };
  delete env.KUBECONFIG;
  const child = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"], env });
  if (!answer) child.stdin.end();
  let stdout = "";
  let stderr = "";
  let answered = false;
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
    if (answer && !answered && stdout.includes(answer.prompt)) {
      answered = true;
      child.stdin.end(`${answer.text}\n`);
    }
  });
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), CLI_TIMEOUT_MS);
  return new Promise((done) => {
    child.on("close", (code) => {
      clearTimeout(timer);
      rmSync(home, { recursive: true, force: true });
      done({ code, stdout, stderr });
    });
  });
}

/**
 * Runs `setpoint args...` (then `--kubeconfig <kubeconfig>` when given) with stdin
 * not a terminal (a pipe, closed at once), its own HOME, and USER=`user`
 * (default alice), and waits for it to exit.
 */
export function runCli(
  args: string[],
  opts: { user?: string; kubeconfig?: string } = {},
): Promise<CliResult> {
  const all = opts.kubeconfig ? [...args, "--kubeconfig", opts.kubeconfig] : args;
  return runWithOwnHome(process.execPath, [SETPOINT_BIN, ...all], opts.user ?? "alice");
}

/** The Widget kind (example.com/v1, namespaced, with a status subresource). */
export const WIDGET = { apiVersion: "example.com/v1", kind: "Widget" } as const;

/** The CustomResourceDefinition of Widgets. */
export function widgetCrd(): KubeObject {
  return schemalessCrd("widgets", "Widget", { shortNames: ["wd"], subresources: { status: {} } });
}

/** A test environment serving Widgets and running no built-in controller, so planted states stay put. */
export function startWidgetEnv(): Promise<TestEnv> {
  return startTestEnv({ crds: [widgetCrd()], controllers: false });
}

/**
 * A Manager of `client`, running as `identity`, whose controllers run while it
 * holds the Lease kube-system/`leaseId` (what the CLI reads to tell live
 * controllers); the caller registers controllers and starts it.
 */
export function electedManager(client: Client, identity: string, leaseId: string): Manager {
  return new Manager({
    client,
    logger: silentLogger(),
    identity,
    leaderElection: { id: leaseId, namespace: "kube-system" },
  });
}

/** A Widget object. */
export function widget(
  name: string,
  namespace: string,
  extra: { finalizers?: string[]; spec?: Record<string, unknown> } = {},
): KubeObject {
  return {
    ...WIDGET,
    metadata: { name, namespace, ...(extra.finalizers ? { finalizers: extra.finalizers } : {}) },
    spec: extra.spec ?? { size: 1 },
  };
}

/**
 * Runs `setpoint args...` on a pseudo-terminal (util-linux `script`), answers
 * `answer` once `prompt` appears, and waits for it to exit. Output comes back
 * as the terminal shows it (CRLF line ends).
 */
export function runCliOnTerminal(
  args: string[],
  prompt: string,
  answer: string,
): Promise<CliResult> {
  const quote = (a: string) => `'${a.replaceAll("'", "'\\''")}'`;
  const command = [process.execPath, SETPOINT_BIN, ...args].map(quote).join(" ");
  return runWithOwnHome("script", ["-q", "-e", "-c", command, "/dev/null"], "alice", {
    prompt,
    text: answer,
  });
}
