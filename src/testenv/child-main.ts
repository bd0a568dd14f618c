/**
 * The child process of `startTestEnv({ process: "child" })` (child-process.ts):
 * starts a test environment from the options in argv[2] (JSON), reports
 * `{ type: "ready", url, kubeconfigPath }` over IPC, and stops it and exits when the
 * parent sends `{ type: "stop" }` or goes away.
 */
import type { FromTestEnvChild } from "./child-messages.ts";
import { startTestEnv, type TestEnvOptions } from "./testenv.ts";

const opts = JSON.parse(process.argv[2] ?? "{}") as TestEnvOptions;
try {
  const env = await startTestEnv({ ...opts, process: "self" });
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    void env.stop().finally(() => process.exit(0));
  };
  process.on("message", (msg: { type?: string }) => {
    if (msg.type === "stop") stop();
  });
  process.on("disconnect", stop);
  process.send?.({
    type: "ready",
    url: env.url,
    kubeconfigPath: env.kubeconfigPath,
  } satisfies FromTestEnvChild);
} catch (err) {
  const message = err instanceof Error ? (err.stack ?? err.message) : String(err);
  process.send?.({ type: "error", message } satisfies FromTestEnvChild, () => process.exit(1));
}
