/**
 * The audit log backend: JSON lines appended to a file (or stdout for "-"), rotated
 * as kube-apiserver's log backend (lumberjack) rotates it: when the next line would
 * take the file past the maximum size, the file is renamed beside itself with the
 * time of the rotation in its name (`audit-2026-12-05T13-04-05.123.log` for
 * `audit.log`, UTC), a new one is started, and backups beyond the count or older than
 * the age kept are removed.
 *
 * Writing never blocks or fails a request: lines are queued and written
 * asynchronously in batches; a write error is logged and the batch dropped, and when
 * the queue grows past its bound newer lines are dropped (and counted) until it drains.
 */

import type { FileHandle } from "node:fs/promises";
import { mkdir, open, readdir, rename, stat, unlink } from "node:fs/promises";
import { basename, dirname, extname, join } from "node:path";
import type { Logger } from "pino";

/** kube-apiserver's (lumberjack's) default maximum size when none is given: 100 MB. */
export const DEFAULT_MAX_SIZE_MB = 100;
/** Queued bytes beyond which new lines are dropped until the queue drains. */
export const MAX_QUEUED_BYTES = 64 * 1024 * 1024;

export interface AuditLogOptions {
  /** The file, or "-" for standard output. */
  path: string;
  /** Rotate before the file would exceed this many megabytes; 0: the default 100. */
  maxSizeMB?: number;
  /** The same bound in bytes (overrides maxSizeMB; for tests). */
  maxSizeBytes?: number;
  /** Rotated files kept; 0: all (subject to maxAgeDays). */
  maxBackups?: number;
  /** Days a rotated file is kept, by the time in its name; 0: no limit. */
  maxAgeDays?: number;
  logger?: Logger;
}

/** Lumberjack's backup time format: 2006-01-02T15-04-05.000, UTC. */
function backupTime(d: Date): string {
  return d.toISOString().replace(/:/g, "-").replace(/Z$/, "");
}

function parseBackupTime(s: string): number | undefined {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})\.(\d{3})$/.exec(s);
  if (!m) return undefined;
  const t = Date.parse(`${m[1]}T${m[2]}:${m[3]}:${m[4]}.${m[5]}Z`);
  return Number.isNaN(t) ? undefined : t;
}

export class AuditLogWriter {
  readonly #opts: AuditLogOptions;
  readonly #maxBytes: number;
  #queue: string[] = [];
  #queuedBytes = 0;
  #dropped = 0;
  #flushing: Promise<void> | undefined;
  #file: FileHandle | undefined;
  #size = 0;
  #lastBackup = 0;
  #closed = false;

  constructor(opts: AuditLogOptions) {
    this.#opts = opts;
    this.#maxBytes = opts.maxSizeBytes ?? (opts.maxSizeMB || DEFAULT_MAX_SIZE_MB) * 1024 * 1024;
  }

  /** Creates the log's directory and opens the file, as kube-apiserver does at start. */
  async open(): Promise<void> {
    if (this.#opts.path === "-") return;
    await mkdir(dirname(this.#opts.path), { recursive: true });
    await this.#openFile();
  }

  /** Queues one line (without its newline); never throws. */
  write(line: string): void {
    if (this.#closed) return;
    const text = `${line}\n`;
    const bytes = Buffer.byteLength(text);
    if (this.#queuedBytes + bytes > MAX_QUEUED_BYTES) {
      if (this.#dropped++ === 0) {
        this.#opts.logger?.warn("audit log queue is full: dropping audit events");
      }
      return;
    }
    this.#queue.push(text);
    this.#queuedBytes += bytes;
    this.#flushing ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() =>
      this.#drain(),
    );
  }

  /** Resolves once everything queued so far is written. */
  async flush(): Promise<void> {
    while (this.#flushing) await this.#flushing;
  }

  /** Writes what is queued and closes the file. */
  async close(): Promise<void> {
    await this.flush();
    this.#closed = true;
    await this.#file?.close().catch(() => {});
    this.#file = undefined;
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const lines = this.#queue;
        this.#queue = [];
        this.#queuedBytes = 0;
        if (this.#dropped > 0) {
          this.#opts.logger?.warn({ dropped: this.#dropped }, "audit events dropped");
          this.#dropped = 0;
        }
        try {
          await this.#writeLines(lines);
        } catch (err) {
          this.#opts.logger?.error({ err, path: this.#opts.path }, "writing the audit log failed");
          // The next batch reopens the file.
          await this.#file?.close().catch(() => {});
          this.#file = undefined;
        }
      }
    } finally {
      this.#flushing = undefined;
    }
  }

  async #writeLines(lines: string[]): Promise<void> {
    if (this.#opts.path === "-") {
      const text = lines.join("");
      await new Promise<void>((resolve) => process.stdout.write(text, () => resolve()));
      return;
    }
    if (!this.#file) await this.#openFile();
    let batch: string[] = [];
    let batchBytes = 0;
    for (const line of lines) {
      const bytes = Buffer.byteLength(line);
      if (bytes > this.#maxBytes) {
        // As lumberjack refuses a write larger than the file may be.
        this.#opts.logger?.error(
          { bytes, max: this.#maxBytes },
          "audit event larger than --audit-log-maxsize: dropped",
        );
        continue;
      }
      if (this.#size + batchBytes + bytes > this.#maxBytes) {
        await this.#append(batch.join(""), batchBytes);
        batch = [];
        batchBytes = 0;
        if (this.#size > 0) await this.#rotate();
      }
      batch.push(line);
      batchBytes += bytes;
    }
    await this.#append(batch.join(""), batchBytes);
  }

  async #append(text: string, bytes: number): Promise<void> {
    if (bytes === 0) return;
    if (!this.#file) await this.#openFile();
    await this.#file!.write(text);
    this.#size += bytes;
  }

  async #openFile(): Promise<void> {
    this.#file = await open(this.#opts.path, "a", 0o600);
    this.#size = (await this.#file.stat()).size;
  }

  async #rotate(): Promise<void> {
    const path = this.#opts.path;
    await this.#file?.close();
    this.#file = undefined;
    // Distinct names even for two rotations within one millisecond.
    const at = Math.max(Date.now(), this.#lastBackup + 1);
    this.#lastBackup = at;
    const ext = extname(path);
    const prefix = basename(path, ext);
    await rename(path, join(dirname(path), `${prefix}-${backupTime(new Date(at))}${ext}`));
    await this.#openFile();
    await this.#removeOldBackups().catch((err: unknown) =>
      this.#opts.logger?.warn({ err }, "removing old audit log backups failed"),
    );
  }

  async #removeOldBackups(): Promise<void> {
    const { maxBackups = 0, maxAgeDays = 0 } = this.#opts;
    if (maxBackups <= 0 && maxAgeDays <= 0) return;
    const path = this.#opts.path;
    const dir = dirname(path);
    const ext = extname(path);
    const prefix = `${basename(path, ext)}-`;
    const backups: { name: string; time: number }[] = [];
    for (const name of await readdir(dir)) {
      if (!name.startsWith(prefix) || !name.endsWith(ext)) continue;
      const time = parseBackupTime(name.slice(prefix.length, name.length - ext.length));
      if (time === undefined) continue;
      if (!(await stat(join(dir, name))).isFile()) continue;
      backups.push({ name, time });
    }
    backups.sort((a, b) => b.time - a.time);
    const cutoff = Date.now() - maxAgeDays * 24 * 3600 * 1000;
    const remove = backups.filter(
      (b, i) => (maxBackups > 0 && i >= maxBackups) || (maxAgeDays > 0 && b.time < cutoff),
    );
    for (const b of remove) await unlink(join(dir, b.name));
  }
}
