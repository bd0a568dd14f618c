/**
 * Helpers of the CLI tests: the real `setpoint` command run as a child process
 * (`node bin/setpoint.mjs ...`) against a test environment's kubeconfig, and a
 * small custom resource kind with a status subresource.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { KubeObject } from "../../src/api/meta.ts";

/** The `setpoint` entry point of this checkout. */
export const SETPOINT_BIN = resolve(
  dirname(fileURLToPath(import.meta.url)),
  "../../bin/setpoint.mjs",
);
/** Longest a CLI run may take (compiling sources on a loaded machine included). */
export const CLI_TIMEOUT_MS = 60_000;

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `setpoint args...` with stdin not a terminal (a pipe, closed at once),
 * its own HOME, and USER=`user`, and waits for it to exit.
 */
export function runCli(args: string[], opts: { user?: string } = {}): Promise<CliResult> {
  const home = mkdtempSync(join(tmpdir(), "setpoint-cli-home-"));
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, USER: opts.user ?? "alice" };
  delete env.KUBECONFIG;
  const child = spawn(process.execPath, [SETPOINT_BIN, ...args], {
    stdio: ["pipe", "pipe", "pipe"],
    env,
  });
  child.stdin.end();
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
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

/** The Widget kind (example.com/v1, namespaced, with a status subresource). */
export const WIDGET = { apiVersion: "example.com/v1", kind: "Widget" } as const;

/** The CustomResourceDefinition of Widgets. */
export function widgetCrd(): KubeObject {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "widgets.example.com" },
    spec: {
      group: "example.com",
      scope: "Namespaced",
      names: { plural: "widgets", singular: "widget", kind: "Widget", shortNames: ["wd"] },
      versions: [
        {
          name: "v1",
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
          },
        },
      ],
    },
  };
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

/** Polls `fn` until it returns a truthy value (returned) or `timeoutMs` passes (throws). */
export async function eventually<T>(
  fn: () => T | Promise<T>,
  timeoutMs = 10_000,
  what = "condition",
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as NonNullable<T>;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
  const home = mkdtempSync(join(tmpdir(), "setpoint-cli-home-"));
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, USER: "alice" };
  delete env.KUBECONFIG;
  const quote = (a: string) => `'${a.replaceAll("'", "'\\''")}'`;
  const command = [process.execPath, SETPOINT_BIN, ...args].map(quote).join(" ");
  const child = spawn("script", ["-q", "-e", "-c", command, "/dev/null"], {
    stdio: ["pipe", "pipe", "pipe"],
    env,
  });
  let stdout = "";
  let answered = false;
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
    if (!answered && stdout.includes(prompt)) {
      answered = true;
      child.stdin.end(`${answer}\n`);
    }
  });
  let stderr = "";
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
