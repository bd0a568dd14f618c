/**
 * The lifetime of a helper process the agent starts and which outlives it
 * (`setpoint service-proxy`, `setpoint log-relay`): started, it runs until
 * SIGINT or SIGTERM, or until its data directory is removed, then stops.
 */
import type { RuntimeLogger } from "@setpoint/runtime";

export async function runUntilStopped(
  logger: RuntimeLogger,
  title: string,
  dataDir: string,
  start: (onDataDirGone: () => void) => Promise<{ stop(): Promise<void> }>,
): Promise<number> {
  let gone: (reason: string) => void = () => {};
  const stopped = new Promise<string>((done) => {
    gone = done;
    process.once("SIGINT", () => done("SIGINT"));
    process.once("SIGTERM", () => done("SIGTERM"));
  });
  const running = await start(() => gone("data directory removed"));
  logger.info({ pid: process.pid, dataDir }, `${title} started`);
  const reason = await stopped;
  logger.info({ reason }, `${title} stopping`);
  await running.stop();
  return 0;
}
