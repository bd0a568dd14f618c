/**
 * Container logs: each container's stdout and stderr go straight to a file
 * (DATA/pods/<namespace>_<name>_<uid>/<container>/<restartCount>.log, as the
 * kubelet lays out /var/log/pods), opened in append mode and handed to the
 * process, so a process keeps logging while the agent is down. The agent rotates a
 * file past its size limit (10 MiB) by copying it to `.1` (older copies shift up to
 * `.4`, five files in all) and truncating it in place; the process's appends go on
 * at the new end.
 */
import {
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  openSync,
  renameSync,
  statSync,
  truncateSync,
} from "node:fs";
import { dirname, join } from "node:path";

export const LOG_MAX_BYTES = 10 * 1024 * 1024;
export const LOG_MAX_FILES = 5;

/** The directory of a Pod's logs. */
export function podLogDir(dataDir: string, ns: string, name: string, uid: string): string {
  return join(dataDir, "pods", `${ns}_${name}_${uid}`);
}

/** The log file of one run of a container. */
export function containerLogPath(podDir: string, container: string, restartCount: number): string {
  return join(podDir, container, `${restartCount}.log`);
}

/** Opens a log file for appending (creating its folder); the caller closes the fd once spawned. */
export function openLog(path: string): number {
  mkdirSync(dirname(path), { recursive: true });
  return openSync(path, "a", 0o640);
}

/** Rotates `path` when it is past `maxBytes`: .1 .. .(maxFiles-1) shift up, the file is copied and truncated. */
export function rotateIfLarge(
  path: string,
  maxBytes: number = LOG_MAX_BYTES,
  maxFiles: number = LOG_MAX_FILES,
): boolean {
  let size: number;
  try {
    size = statSync(path).size;
  } catch {
    return false;
  }
  if (size <= maxBytes) return false;
  for (let i = maxFiles - 1; i >= 1; i--) {
    const from = i === 1 ? undefined : `${path}.${i - 1}`;
    if (from && existsSync(from)) renameSync(from, `${path}.${i}`);
  }
  copyFileSync(path, `${path}.1`);
  truncateSync(path, 0);
  return true;
}

export { closeSync as closeLog };
