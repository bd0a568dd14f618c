/**
 * Where the log relay and the agent meet: the relay's socket in the data
 * directory and the two named pipes of a container's run beside its log file.
 */
import { createHash } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import type { LogStream } from "./cri-format.ts";

/** The relay's socket, in the agent's data directory. */
export const RELAY_SOCKET = "log-relay.sock";
/** The longest path a Unix socket may have (sun_path, less its terminating NUL). */
const MAX_SOCKET_PATH = 107;

/** The name of each stream's pipe, after the log file's. */
export const PIPE_SUFFIX: Record<LogStream, string> = {
  stdout: ".stdout.fifo",
  stderr: ".stderr.fifo",
};

/** A run's pipes, beside its log file. */
export function pipePaths(logPath: string): Record<LogStream, string> {
  return { stdout: `${logPath}${PIPE_SUFFIX.stdout}`, stderr: `${logPath}${PIPE_SUFFIX.stderr}` };
}

/**
 * The relay's socket: the file in the data directory, or (when that path is too
 * long for a socket) an abstract socket named after the directory.
 */
export function relaySocketPath(dataDir: string): string {
  const file = join(resolve(dataDir), RELAY_SOCKET);
  if (Buffer.byteLength(file) <= MAX_SOCKET_PATH) return file;
  const id = createHash("sha256").update(resolve(dataDir)).digest("hex").slice(0, 32);
  return `\0setpoint-log-relay-${id}`;
}

/** Whether any pipe of a run is left (the relay removes each once it has written all of it). */
export function pipesLeft(logPath: string): boolean {
  return Object.values(pipePaths(logPath)).some((p) => existsSync(p));
}

/** The pipes left under DATA/pods/ (runs whose output the relay has not all written). */
export function allPipesLeft(dataDir: string): string[] {
  const out: string[] = [];
  const pods = join(dataDir, "pods");
  const list = (dir: string) => {
    try {
      return readdirSync(dir);
    } catch {
      return [];
    }
  };
  for (const pod of list(pods)) {
    for (const container of list(join(pods, pod))) {
      for (const name of list(join(pods, pod, container))) {
        if (Object.values(PIPE_SUFFIX).some((s) => name.endsWith(s))) {
          out.push(join(pods, pod, container, name));
        }
      }
    }
  }
  return out;
}

/** Waits until the relay has written every pipe of DATA/pods/ (or `timeoutMs` passed). */
export async function waitForPipesRelayed(dataDir: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (allPipesLeft(dataDir).length && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
  }
}
