/**
 * Writing a file atomically: the content goes to a temporary file in the same
 * directory, is flushed to disk, and is renamed over the target, so a reader (or
 * the agent started after a crash) sees the old file or the new one, never half.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, writeSync } from "node:fs";
import { dirname } from "node:path";

export function writeFileAtomic(path: string, content: string | Buffer): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  const fd = openSync(tmp, "w", 0o600);
  try {
    writeSync(fd, typeof content === "string" ? Buffer.from(content) : content);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}
