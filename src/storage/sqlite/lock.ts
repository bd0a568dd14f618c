/**
 * The single-writer guard of a store file: a lock file next to the database,
 * `<database>.lock`, created with O_EXCL and holding who owns the store.
 *
 * Content: one line of JSON, `{"pid":…,"start":…,"host":…,"token":…}`: the owner's
 * process id, that process's start time (field 22 of /proc/<pid>/stat on Linux, null
 * where that is not available), its host name (shown in messages only) and a random
 * token naming this hold of the lock.
 *
 * A lock file is stale, and is taken over, when its owner is gone: no process has its
 * pid, or the process that has it now started at another time (the pid was reused), or
 * it is a zombie. A file that cannot be parsed is one being written right now unless it
 * is older than LOCK_PARTIAL_GRACE_MS (a crash while writing it). A stale file is first
 * renamed aside and checked to be the very file judged stale before it is deleted, so
 * two processes taking over the same stale lock cannot both win.
 *
 * The lock is released by close() and, for a process that exits without closing, by an
 * exit handler; after kill -9 the file stays and the next open finds it stale. Owners
 * are only judged by pid, so the guard holds among processes that see the same pids:
 * one machine, one pid namespace (SQLite's WAL mode needs one machine anyway).
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";

/** A lock file that does not parse is taken to be mid-write for this long after its mtime. */
export const LOCK_PARTIAL_GRACE_MS = 10_000;

/** Attempts to create the lock file before giving up (each after removing a stale one). */
const MAX_LOCK_ATTEMPTS = 3;

/** Who holds (or held) a store's lock. */
export interface LockOwner {
  pid: number;
  /** The process's start time in clock ticks since boot (null: unknown). */
  start: string | null;
  host: string;
  token: string;
}

/** A held lock; release() gives it up (idempotent). */
export interface StoreLock {
  readonly path: string;
  readonly owner: LockOwner;
  release(): void;
}

/** The outcome of trying to take a store's lock. */
export type LockAttempt =
  | { ok: true; lock: StoreLock }
  | { ok: false; owner: LockOwner | null; detail: string };

/** The lock file of the database at `databasePath`. */
export function lockFileOf(databasePath: string): string {
  return `${databasePath}.lock`;
}

/** Locks held by this process, released on exit if their stores were not closed. */
const held = new Set<HeldLock>();
let exitHandlerInstalled = false;

/** Takes the lock file at `path` for this process, or says who holds it. */
export function acquireLock(path: string): LockAttempt {
  const me: LockOwner = {
    pid: process.pid,
    start: processStart(process.pid),
    host: os.hostname(),
    token: randomBytes(12).toString("hex"),
  };
  const content = `${JSON.stringify(me)}\n`;
  let lastOwner: LockOwner | null = null;
  for (let attempt = 0; attempt < MAX_LOCK_ATTEMPTS; attempt++) {
    if (tryCreate(path, content)) {
      const lock = new HeldLock(path, me);
      held.add(lock);
      installExitHandler();
      return { ok: true, lock };
    }
    const text = readIfPresent(path);
    if (text === null) continue; // released meanwhile: try again
    const owner = parseOwner(text);
    lastOwner = owner;
    if (owner === null) {
      if (ageMs(path) < LOCK_PARTIAL_GRACE_MS) {
        return { ok: false, owner: null, detail: `its lock file ${path} is being written` };
      }
    } else if (isAlive(owner)) {
      return { ok: false, owner, detail: describeOwner(owner, path) };
    }
    if (!removeStale(path, text, me.token)) {
      const now = readIfPresent(path);
      const current = now === null ? null : parseOwner(now);
      return {
        ok: false,
        owner: current,
        detail: current ? describeOwner(current, path) : `its lock file ${path} changed hands`,
      };
    }
  }
  return {
    ok: false,
    owner: lastOwner,
    detail: `its lock file ${path} kept reappearing; another process is opening it`,
  };
}

class HeldLock implements StoreLock {
  #released = false;
  constructor(
    readonly path: string,
    readonly owner: LockOwner,
  ) {}

  release(): void {
    if (this.#released) return;
    this.#released = true;
    held.delete(this);
    // Only remove the file if it is still this hold's (never another owner's).
    const text = readIfPresent(this.path);
    if (text !== null && parseOwner(text)?.token === this.owner.token) {
      try {
        fs.unlinkSync(this.path);
      } catch {
        // Gone already: nothing to release.
      }
    }
  }
}

function installExitHandler(): void {
  if (exitHandlerInstalled) return;
  exitHandlerInstalled = true;
  process.on("exit", () => {
    for (const lock of [...held]) lock.release();
  });
}

/** Creates `path` with `content` if it does not exist; false if it does. */
function tryCreate(path: string, content: string): boolean {
  let fd: number;
  try {
    fd = fs.openSync(path, "wx", 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
  try {
    fs.writeSync(fd, content);
  } catch (error) {
    fs.closeSync(fd);
    fs.rmSync(path, { force: true });
    throw error;
  }
  fs.closeSync(fd);
  return true;
}

/**
 * Removes the stale lock file whose content was `judged`: renames it aside (atomic), and
 * deletes it only if it is still that file; a fresh lock renamed by mistake is put back.
 * False if the lock changed hands meanwhile.
 */
function removeStale(path: string, judged: string, token: string): boolean {
  const aside = `${path}.stale-${token}`;
  try {
    fs.renameSync(path, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return true;
    throw error;
  }
  const moved = readIfPresent(aside);
  if (moved === judged) {
    fs.rmSync(aside, { force: true });
    return true;
  }
  try {
    fs.linkSync(aside, path);
  } catch {
    // Someone created a new lock meanwhile; theirs stands.
  }
  fs.rmSync(aside, { force: true });
  return false;
}

function readIfPresent(path: string): string | null {
  try {
    return fs.readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}

function ageMs(path: string): number {
  try {
    return Date.now() - fs.statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}

function parseOwner(text: string): LockOwner | null {
  try {
    const o = JSON.parse(text) as Partial<LockOwner>;
    if (
      typeof o.pid !== "number" ||
      !Number.isSafeInteger(o.pid) ||
      o.pid <= 0 ||
      typeof o.token !== "string"
    ) {
      return null;
    }
    return {
      pid: o.pid,
      start: typeof o.start === "string" ? o.start : null,
      host: typeof o.host === "string" ? o.host : "",
      token: o.token,
    };
  } catch {
    return null;
  }
}

/** Whether the lock's owner still runs: its pid exists, is not a zombie, and started then. */
function isAlive(owner: LockOwner): boolean {
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ESRCH") return false;
    // EPERM: a process of another user has this pid; judge it by its start time below.
  }
  const stat = procStat(owner.pid);
  if (stat === null) return true; // no /proc: the pid exists, take it as the owner
  if (stat.state === "Z" || stat.state === "X") return false;
  return owner.start === null || owner.start === stat.start;
}

function processStart(pid: number): string | null {
  return procStat(pid)?.start ?? null;
}

/** State and start time of a process from /proc (Linux); null where unavailable. */
function procStat(pid: number): { state: string; start: string } | null {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  // fields[0] is field 3 (state); field 22 (starttime) is fields[19].
  if (fields.length < 20) return null;
  return { state: fields[0], start: fields[19] };
}

function describeOwner(owner: LockOwner, path: string): string {
  const host = owner.host && owner.host !== os.hostname() ? ` on host ${owner.host}` : "";
  return `the store is open in process ${owner.pid}${host} (lock file ${path})`;
}
