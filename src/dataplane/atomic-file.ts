/**
 * Writing a file atomically: the content goes to a temporary file in the same
 * directory, is flushed to disk, and is renamed over the target (and, with
 * `syncDir`, the directory is flushed too, so the rename itself survives a
 * crash), so a reader (or a process started after a crash) sees the old file or
 * the new one, never half.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, writeSync } from "node:fs";
import { dirname } from "node:path";

export interface AtomicWriteOptions {
  /** Mode of the file (default 0600). */
  mode?: number;
  /** Mode of the directory when it has to be made (default: the process's default). */
  dirMode?: number;
  /** fsync the directory after the rename (default false). */
  syncDir?: boolean;
}

export function writeFileAtomic(
  path: string,
  content: string | Buffer,
  opts: AtomicWriteOptions = {},
): void {
  const dir = dirname(path);
  mkdirSync(dir, {
    recursive: true,
    ...(opts.dirMode !== undefined ? { mode: opts.dirMode } : {}),
  });
  const tmp = `${path}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  const fd = openSync(tmp, "w", opts.mode ?? 0o600);
  try {
    writeSync(fd, typeof content === "string" ? Buffer.from(content) : content);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  if (opts.syncDir) {
    const dfd = openSync(dir, "r");
    try {
      fsyncSync(dfd);
    } finally {
      closeSync(dfd);
    }
  }
}
