/**
 * A container's stdin, for a container that asks for one (`stdin: true`), so that
 * `kubectl attach -i` can write to it: a named pipe beside the container's logs
 * (DATA/pods/<namespace>_<name>_<uid>/<container>/stdin), which the process gets
 * as its stdin opened for reading and writing. Holding a write end itself, the
 * process never reads an end of input while nobody is attached, and the pipe
 * outlives an agent restart as the process does (an adopted process is attached
 * to through the same pipe). A writer opens the pipe without blocking (no reader:
 * the container is gone) and writes with back-pressure.
 *
 * `stdinOnce` is not honoured: the stdin stays open after an attach ends.
 */
import { execFileSync } from "node:child_process";
import { closeSync, constants, mkdirSync, openSync, statSync } from "node:fs";
import { Socket } from "node:net";
import { dirname, join } from "node:path";

/** The named pipe that is a container's stdin. */
export function containerStdinPath(podDir: string, container: string): string {
  return join(podDir, container, "stdin");
}

/** Makes the pipe (if it is not there) and opens it for the process; the caller closes the fd once spawned. */
export function openContainerStdin(path: string): number {
  mkdirSync(dirname(path), { recursive: true });
  let isFifo = false;
  try {
    isFifo = statSync(path).isFIFO();
  } catch {}
  if (!isFifo) execFileSync("mkfifo", ["-m", "600", path]);
  return openSync(path, constants.O_RDWR);
}

/**
 * A stream writing to the stdin of the container whose pipe is `path`; undefined
 * when no process has it open (ENXIO) or it is not there.
 */
export function writeContainerStdin(path: string): Socket | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    return new Socket({ fd, readable: false, writable: true });
  } catch {
    closeSync(fd);
    return undefined;
  }
}
