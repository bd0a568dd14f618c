/**
 * A test environment in a child process of its own (`startTestEnv({ process:
 * "child" })`). In process, the apiserver answers on the test's own event loop, so
 * anything that blocks that loop while waiting for the server (`execFileSync
 * ("kubectl", ...)`, `spawnSync`, a synchronous HTTP client) waits for an answer the
 * server can never send: it hangs. In a child, the server has an event loop of its
 * own. The child runs child-main.ts (through tsx when run from the TypeScript
 * sources) and reports its URL and kubeconfig over IPC; stop() asks it to stop and
 * waits for it to exit (SIGKILL after CHILD_STOP_TIMEOUT_MS). The child stops by
 * itself when the test process goes away.
 */
import { fork } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Client, type RestConfig } from "@setpoint/runtime";
import type { FromTestEnvChild } from "./child-messages.ts";
import type { TestEnv, TestEnvOptions } from "./test-env-types.ts";

/** Longest wait for the child to report it is ready. */
export const CHILD_START_TIMEOUT_MS = 60_000;
/** Longest wait for the child to exit after stop() before it is killed. */
export const CHILD_STOP_TIMEOUT_MS = 10_000;

/** The child's entry, and the node flags that let it run (tsx for the sources). */
function childEntry(): { path: string; execArgv: string[]; env: NodeJS.ProcessEnv } {
  const here = new URL(".", import.meta.url);
  const ts = new URL("child-main.ts", here);
  if (!existsSync(fileURLToPath(ts))) {
    return { path: fileURLToPath(new URL("child-main.mjs", here)), execArgv: [], env: process.env };
  }
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
  // The repository's tsconfig maps the workspace packages (@setpoint/api, @setpoint/runtime).
  const tsconfig = fileURLToPath(new URL("../../tsconfig.json", here));
  return {
    path: fileURLToPath(ts),
    execArgv: ["--import", tsx],
    env: { ...process.env, ...(existsSync(tsconfig) ? { TSX_TSCONFIG_PATH: tsconfig } : {}) },
  };
}

/** Starts a test environment in a child process; see the module comment. */
export async function startTestEnvInChild(opts: TestEnvOptions): Promise<TestEnv> {
  const entry = childEntry();
  const child = fork(entry.path, [JSON.stringify({ ...opts, process: "self" })], {
    execArgv: entry.execArgv,
    env: entry.env,
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const ready = await new Promise<{ url: string; kubeconfigPath: string }>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(
        new Error(
          `the test environment's child process did not start in ${CHILD_START_TIMEOUT_MS} ms`,
        ),
      );
    }, CHILD_START_TIMEOUT_MS);
    child.on("message", (msg: FromTestEnvChild) => {
      clearTimeout(timer);
      if (msg.type === "ready") resolve(msg);
      else
        reject(new Error(`the test environment's child process failed to start: ${msg.message}`));
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(
        new Error(
          `the test environment's child process exited (${signal ?? code}) before it was ready`,
        ),
      );
    });
  });
  const config: RestConfig = { server: ready.url };
  const client = new Client(config);
  let stopped: Promise<void> | undefined;
  return {
    url: ready.url,
    config,
    client,
    kubeconfigPath: ready.kubeconfigPath,
    stop() {
      stopped ??= (async () => {
        client.close();
        if (child.exitCode === null && child.signalCode === null) {
          if (child.connected) child.send({ type: "stop" });
          const timer = setTimeout(() => child.kill("SIGKILL"), CHILD_STOP_TIMEOUT_MS);
          await exited;
          clearTimeout(timer);
        }
      })();
      return stopped;
    },
  };
}
