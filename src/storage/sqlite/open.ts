import fs from "node:fs";
import nodePath from "node:path";
import Database from "better-sqlite3";
import { StorageError } from "../errors.ts";
import { acquireLock, lockFileOf } from "./lock.ts";
import { APPLICATION_ID, CREATE_SCHEMA, SCHEMA_VERSION, TABLES } from "./sql-schema.ts";

/** Why a file could not be opened as a store. */
export type SqliteOpenFailure =
  | "not-a-database"
  | "corrupt"
  | "newer-schema"
  | "foreign-database"
  | "locked";

/** Opening a store file failed; the file was left as it was. */
export class SqliteOpenError extends StorageError {
  override name = "SqliteOpenError";
  constructor(
    readonly path: string,
    readonly reason: SqliteOpenFailure,
    detail: string,
    options?: ErrorOptions,
  ) {
    super(`cannot open store ${path}: ${detail}`, options);
  }
}

/** Files up to this size get a full `PRAGMA quick_check` when opened. */
export const QUICK_CHECK_MAX_BYTES = 64 * 1024 * 1024;

/**
 * SQLite page cache of a store's connection when it is the only one (it reads and
 * writes: ":memory:", or `writerThread: false`), in KiB.
 */
export const PAGE_CACHE_KIB = 32 * 1024;

/**
 * SQLite page cache of the writer thread's connection, in KiB. Commits append to
 * history (its newest pages) and update `current` (one small row per key: 100,000
 * keys take about 6 MiB), and compaction walks history in order: this holds them
 * with room to spare (a smaller one measurably slows commits of 150,000 keys);
 * other pages are in the operating system's cache, which more would only duplicate.
 */
export const WRITER_PAGE_CACHE_KIB = 16 * 1024;

/**
 * SQLite page cache of the store's reading connection when a writer thread writes,
 * in KiB. The API server answers most reads from its watch cache; what still comes
 * here (consistent gets and lists, watch replay) reads pages the operating system
 * caches anyway, so a large cache here would mostly hold a second copy of them.
 */
export const READER_PAGE_CACHE_KIB = 4 * 1024;

/**
 * How long the writer's connection waits on a lock held by another connection of the
 * store (only transient ones exist: the reader's snapshot while the WAL is reset).
 */
export const WRITER_BUSY_TIMEOUT_MS = 5000;

const SQLITE_MAGIC = "SQLite format 3\0";
const HEADER_BYTES = 100;

export interface OpenDatabaseOptions {
  /** WAL + synchronous=FULL when true; WAL + synchronous=NORMAL when false. */
  durable: boolean;
}

/**
 * Store files open in this process. POSIX advisory locks (SQLite's) belong to the
 * process and any close() of a descriptor of the file drops them all, so a second open
 * in the same process must be refused before the file is even read.
 */
const openInProcess = new Set<string>();

/** An open store database and the call that gives up its claim on the file. */
export interface OpenedDatabase {
  db: Database.Database;
  release: () => void;
}

/**
 * Opens (creating if absent) a store database for this process as its only writer.
 * Everything that could refuse the file (opened by this or another process, not SQLite,
 * damaged, another application's, newer schema) is checked before anything is written.
 *
 * Another process is kept out by the store's lock file (see lock.ts), taken before the
 * file is read and given up by `release()`; the connection itself is an ordinary WAL
 * connection, so the writer thread can open a second one beside it.
 */
export function openDatabase(path: string, opts: OpenDatabaseOptions): OpenedDatabase {
  const memory = path === ":memory:" || path === "";
  if (memory) return { db: openMemory(), release: () => {} };
  const claim = canonicalPath(path);
  if (openInProcess.has(claim)) {
    throw new SqliteOpenError(path, "locked", "the store is already open in this process");
  }
  const attempt = acquireLock(lockFileOf(path));
  if (!attempt.ok) throw new SqliteOpenError(path, "locked", attempt.detail);
  const lock = attempt.lock;
  let db: Database.Database | null = null;
  try {
    const size = inspectHeader(path);
    if (size === 0) createPrivate(path);
    db = new Database(path, { timeout: 0 });
    const isNew = inspectContents(db, path, size);
    db.pragma("journal_mode = WAL");
    tune(db, opts.durable);
    if (isNew) db.transaction(() => db!.exec(CREATE_SCHEMA))();
  } catch (error) {
    db?.close();
    lock.release();
    throw error;
  }
  openInProcess.add(claim);
  let released = false;
  return {
    db,
    release: () => {
      if (released) return;
      released = true;
      openInProcess.delete(claim);
      lock.release();
    },
  };
}

/**
 * Opens the writer's connection to a store file already opened (and so checked and
 * locked) by openDatabase in this process.
 */
export function openWriterConnection(path: string, durable: boolean): Database.Database {
  const db = new Database(path, { timeout: WRITER_BUSY_TIMEOUT_MS });
  try {
    if (db.pragma("journal_mode", { simple: true }) !== "wal") {
      throw new Error(`store ${path} is not in WAL mode`);
    }
    tune(db, durable, WRITER_PAGE_CACHE_KIB);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

function openMemory(): Database.Database {
  const db = new Database(":memory:");
  db.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
  db.pragma("temp_store = MEMORY");
  db.transaction(() => db.exec(CREATE_SCHEMA))();
  return db;
}

/** Per-connection settings: durability of commits, page cache (KiB), temporary storage. */
function tune(db: Database.Database, durable: boolean, cacheKib = PAGE_CACHE_KIB): void {
  db.pragma(`synchronous = ${durable ? "FULL" : "NORMAL"}`);
  db.pragma(`cache_size = -${cacheKib}`);
  db.pragma("temp_store = MEMORY");
}

/** The file's real path (through symlinks), also for a file that does not exist yet. */
function canonicalPath(path: string): string {
  const absolute = nodePath.resolve(path);
  try {
    return fs.realpathSync(absolute);
  } catch {
    try {
      return nodePath.join(
        fs.realpathSync(nodePath.dirname(absolute)),
        nodePath.basename(absolute),
      );
    } catch {
      return absolute;
    }
  }
}

/**
 * Creates the store file empty and readable by its owner only (0600) when absent.
 * SQLite would create it 0644 less the umask; its -wal and -shm files take the main
 * file's permissions, so they are private too.
 */
function createPrivate(path: string): void {
  try {
    fs.closeSync(fs.openSync(path, "wx", 0o600));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
}

/** Checks the file header without SQLite; returns the file size (0 if absent or empty). */
function inspectHeader(path: string): number {
  let fd: number;
  try {
    fd = fs.openSync(path, "r");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return 0;
    throw error;
  }
  try {
    const size = fs.fstatSync(fd).size;
    if (size === 0) return 0;
    const header = Buffer.alloc(HEADER_BYTES);
    const read = fs.readSync(fd, header, 0, HEADER_BYTES, 0);
    if (read < HEADER_BYTES || header.toString("latin1", 0, 16) !== SQLITE_MAGIC) {
      throw new SqliteOpenError(path, "not-a-database", "the file is not a SQLite database");
    }
    const rawPageSize = header.readUInt16BE(16);
    const pageSize = rawPageSize === 1 ? 65536 : rawPageSize;
    if (pageSize < 512 || (pageSize & (pageSize - 1)) !== 0 || size % pageSize !== 0) {
      throw new SqliteOpenError(
        path,
        "corrupt",
        "the file is damaged (not a whole number of pages)",
      );
    }
    const changeCounter = header.readUInt32BE(24);
    const pages = header.readUInt32BE(28);
    const validFor = header.readUInt32BE(92);
    if (validFor === changeCounter && pages * pageSize > size) {
      throw new SqliteOpenError(path, "corrupt", "the file is damaged (truncated)");
    }
    checkIdentity(path, header.readInt32BE(68), header.readInt32BE(60));
    return size;
  } finally {
    fs.closeSync(fd);
  }
}

function checkIdentity(path: string, applicationId: number, userVersion: number): void {
  if (applicationId === 0 && userVersion === 0) return;
  if (applicationId !== APPLICATION_ID) {
    throw new SqliteOpenError(
      path,
      "foreign-database",
      "the file is a SQLite database of another application",
    );
  }
  if (userVersion > SCHEMA_VERSION) {
    throw new SqliteOpenError(
      path,
      "newer-schema",
      `the file has schema version ${userVersion}, newer than this version supports (${SCHEMA_VERSION}); upgrade Setpoint`,
    );
  }
}

/**
 * Validates the schema inside an exclusive transaction that writes nothing (any other
 * program holding the file's SQLite lock refuses the open). Returns true for an empty
 * database that needs the schema.
 */
function inspectContents(db: Database.Database, path: string, size: number): boolean {
  try {
    db.exec("BEGIN EXCLUSIVE");
  } catch (error) {
    throw translate(error, path);
  }
  try {
    const applicationId = db.pragma("application_id", { simple: true }) as number;
    const userVersion = db.pragma("user_version", { simple: true }) as number;
    checkIdentity(path, applicationId, userVersion);
    const names = new Set(
      (db.prepare("SELECT name FROM sqlite_master").pluck().all() as string[]).map(String),
    );
    if (applicationId === 0 && userVersion === 0) {
      if (names.size > 0) {
        throw new SqliteOpenError(
          path,
          "foreign-database",
          "the file is a SQLite database of another application",
        );
      }
      db.exec("COMMIT");
      return true;
    }
    const missing = TABLES.filter((t) => !names.has(t));
    if (missing.length > 0) {
      throw new SqliteOpenError(
        path,
        "corrupt",
        `the store is missing tables: ${missing.join(", ")}`,
      );
    }
    if (size <= QUICK_CHECK_MAX_BYTES) {
      const result = db.pragma("quick_check(1)", { simple: true });
      if (result !== "ok") {
        throw new SqliteOpenError(path, "corrupt", `the file is damaged: ${String(result)}`);
      }
    }
    db.exec("COMMIT");
    return false;
  } catch (error) {
    try {
      if (db.inTransaction) db.exec("ROLLBACK");
    } catch {
      // The connection is closed next; nothing was written.
    }
    throw translate(error, path);
  }
}

function translate(error: unknown, path: string): unknown {
  if (error instanceof SqliteOpenError) return error;
  const code = (error as { code?: string }).code ?? "";
  const message = (error as Error).message;
  if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) {
    return new SqliteOpenError(path, "locked", "the store is open in another process", {
      cause: error,
    });
  }
  if (code.startsWith("SQLITE_NOTADB")) {
    return new SqliteOpenError(path, "not-a-database", "the file is not a SQLite database", {
      cause: error,
    });
  }
  if (code.startsWith("SQLITE_CORRUPT")) {
    return new SqliteOpenError(path, "corrupt", `the file is damaged: ${message}`, {
      cause: error,
    });
  }
  return error;
}
