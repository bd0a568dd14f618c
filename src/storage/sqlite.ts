/**
 * The embedded storage backend: the Store contract on one SQLite file.
 *
 * One connection, held exclusively by this process, in WAL mode. Writes are queued and
 * committed together (group commit): every write that arrives while the event loop is
 * busy joins the next transaction, each still gets its own revision and its own
 * compare-and-swap check, and each promise settles only after that transaction commits.
 * Watches are fed in process from the commit path and replay older changes from history.
 * Compaction deletes superseded history in small transactions between commits.
 *
 * The file is locked for this process (SQLite's exclusive locking mode): another
 * process cannot open it, for writing or reading, until the store is closed. POSIX
 * locks belong to the whole process and any close() of a descriptor of the file
 * releases them, so do not open, read or copy the database file from the process that
 * has the store open (a second SqliteStore.open of it is refused for this reason).
 */
import type Database from "better-sqlite3";
import {
  AlreadyExistsError,
  ClosedError,
  CompactedError,
  ConflictError,
  FutureRevisionError,
  NotFoundError,
  StorageError,
  UnavailableError,
} from "./errors.ts";
import { decodeContinue, encodeContinue, keyAfter, prefixRange } from "./sqlite/keys.ts";
import { openDatabase } from "./sqlite/open.ts";
import {
  MAX_BATCH_VALUE_CHARS,
  MAX_BATCH_WRITES,
  type ResolvedSqliteStoreOptions,
  resolveOptions,
  type SqliteStoreOptions,
} from "./sqlite/options.ts";
import { META_COMPACT_PROGRESS, META_COMPACTED } from "./sqlite/schema.ts";
import {
  type ChangeRow,
  type CurrentRow,
  type HistoryRow,
  prepareStatements,
  type Statements,
} from "./sqlite/statements.ts";
import { BufferedWatch } from "./sqlite/watch.ts";
import type {
  GetOptions,
  KeyValue,
  ListOptions,
  ListResult,
  Store,
  Watch,
  WatchEvent,
  WatchOptions,
} from "./store.ts";
import { checkKey, checkRevision, checkValue } from "./validate.ts";

export {
  QUICK_CHECK_MAX_BYTES,
  SqliteOpenError,
  type SqliteOpenFailure,
} from "./sqlite/open.ts";
export {
  DEFAULT_COMPACTION_BATCH_SIZE,
  DEFAULT_COMPACTION_INTERVAL_MS,
  DEFAULT_HISTORY_RETENTION_MS,
  DEFAULT_MIN_HISTORY_REVISIONS,
  MAX_BATCH_WRITES,
  type SqliteStoreOptions,
} from "./sqlite/options.ts";

/**
 * Past-revision list pages are served from the current-state index when no key in the
 * remaining range changed since; at most this many newer revisions are examined to tell.
 */
export const UNCHANGED_CHECK_MAX_REVISIONS = 10_000;

/** Keys read per query while listing at a past revision. */
const HISTORY_KEYS_PER_READ = 256;

/** Counters describing what the store has done since it was opened. */
export interface SqliteStoreStats {
  /** Write transactions committed. */
  commits: number;
  /** Writes committed (each has its own revision). */
  writes: number;
  /** Most writes committed in one transaction. */
  largestBatch: number;
  /** Compaction transactions run. */
  compactionBatches: number;
  /** The last error background compaction hit, if any. */
  lastCompactionError: string | null;
}

type WriteKind = "create" | "update" | "delete";

interface PendingWrite {
  kind: WriteKind;
  key: string;
  value: string | null;
  expectedRevision: number | undefined;
  resolve: (revision: number) => void;
  reject: (error: unknown) => void;
}

export class SqliteStore implements Store {
  /** The database file (or ":memory:"). */
  readonly path: string;
  readonly #db: Database.Database;
  readonly #release: () => void;
  readonly #sql: Statements;
  readonly #opts: ResolvedSqliteStoreOptions;
  #revision: number;
  #compacted: number;
  #compactProgress: number;
  #lastWrittenAt = 0;
  #queue: PendingWrite[] = [];
  #flushScheduled = false;
  readonly #watches = new Set<BufferedWatch>();
  #compaction: Promise<void> | null = null;
  #timer: NodeJS.Timeout | null = null;
  #closed = false;
  readonly #stats: SqliteStoreStats = {
    commits: 0,
    writes: 0,
    largestBatch: 0,
    compactionBatches: 0,
    lastCompactionError: null,
  };

  private constructor(
    path: string,
    db: Database.Database,
    release: () => void,
    opts: ResolvedSqliteStoreOptions,
  ) {
    this.path = path;
    this.#db = db;
    this.#release = release;
    this.#opts = opts;
    this.#sql = prepareStatements(db);
    this.#compacted = this.#sql.getMeta.get(META_COMPACTED) ?? 0;
    this.#compactProgress = this.#sql.getMeta.get(META_COMPACT_PROGRESS) ?? 0;
    // Compaction may have removed the newest row (a delete), never a revision above it.
    this.#revision = Math.max(this.#sql.maxRevision.get() ?? 0, this.#compacted);
    if (this.#revision > 0) this.#lastWrittenAt = this.#writtenAt(this.#revision) ?? 0;
    if (opts.compactionIntervalMs > 0) {
      this.#timer = setInterval(() => this.#compactByRetention(), opts.compactionIntervalMs);
      this.#timer.unref();
    }
    if (this.#compactProgress < this.#compacted) this.#compactInBackground();
  }

  /**
   * Opens the store at `path` (created if absent; ":memory:" for a throwaway store).
   * Throws SqliteOpenError, leaving the file untouched, if the file is not a SQLite
   * database, is damaged, belongs to another application, has a newer schema, or is
   * open in another process.
   */
  static open(path: string, opts: SqliteStoreOptions = {}): SqliteStore {
    const resolved = resolveOptions(opts);
    const { db, release } = openDatabase(path, { durable: resolved.durable });
    try {
      return new SqliteStore(path, db, release, resolved);
    } catch (error) {
      db.close();
      release();
      throw error;
    }
  }

  /** What the store has done since it was opened. */
  stats(): SqliteStoreStats {
    return { ...this.#stats };
  }

  async get(key: string, opts: GetOptions = {}): Promise<KeyValue | null> {
    this.#checkOpen();
    checkKey(key);
    const revision = this.#readRevision(opts.revision);
    return unavailableOnFailure("read", () => {
      if (revision === this.#revision) {
        const row = this.#sql.getCurrent.get(key);
        return row && row.value !== null ? toKeyValue(row, row.value) : null;
      }
      return this.#versionAt(key, this.#sql.newestRevisionOf.get(key), revision);
    });
  }

  async list(prefix: string, opts: ListOptions = {}): Promise<ListResult> {
    this.#checkOpen();
    return unavailableOnFailure("list", () => this.#list(prefix, opts));
  }

  #list(prefix: string, opts: ListOptions): ListResult {
    let revision: number;
    let after: string | null = null;
    if (opts.continue) {
      const pos = decodeContinue(opts.continue, prefix);
      revision = this.#readRevision(pos.revision);
      after = pos.lastKey;
    } else {
      revision = this.#readRevision(opts.revision);
    }
    const range = prefixRange(prefix);
    if (range === null) return { items: [], revision };
    const lower = after === null ? range.lower : keyAfter(after);
    const limit = opts.limit && opts.limit > 0 ? Math.floor(opts.limit) : 0;
    if (revision === this.#revision || this.#unchangedSince(revision, lower, range.upper)) {
      return this.#listCurrent(revision, lower, range.upper, limit);
    }
    return this.#listHistory(revision, lower, range.upper, limit);
  }

  create(key: string, value: string): Promise<number> {
    return this.#write("create", key, value, undefined);
  }

  update(key: string, value: string, expectedRevision: number): Promise<number> {
    return this.#write("update", key, value, expectedRevision);
  }

  delete(key: string, expectedRevision?: number): Promise<number> {
    return this.#write("delete", key, null, expectedRevision);
  }

  watch(prefix: string, fromRevision: number, opts: WatchOptions = {}): Watch {
    try {
      this.#checkOpen();
      checkRevision("fromRevision", fromRevision);
    } catch (error) {
      return BufferedWatch.failed(error, prefix);
    }
    const watch = new BufferedWatch({
      prefix,
      fromRevision: fromRevision === 0 ? this.#revision : fromRevision,
      liveFrom: this.#revision,
      bufferSize: Math.max(1, opts.bufferSize ?? this.#opts.watchBufferSize),
      source: {
        readHistory: (p, a, t, l) =>
          unavailableOnFailure("watch", () => this.#readChanges(p, a, t, l)),
      },
      detach: (w) => this.#watches.delete(w),
    });
    if (fromRevision !== 0 && fromRevision < this.#compacted) {
      watch.fail(new CompactedError(fromRevision, this.#compacted));
    } else {
      this.#watches.add(watch);
    }
    return watch;
  }

  async compact(revision: number): Promise<void> {
    this.#checkOpen();
    checkRevision("revision", revision);
    if (revision > this.#revision) throw new FutureRevisionError(revision, this.#revision);
    unavailableOnFailure("compaction", () => {
      if (revision > this.#compacted) this.#setCompacted(revision);
    });
    await this.#startCompaction();
  }

  async currentRevision(): Promise<number> {
    this.#checkOpen();
    return this.#revision;
  }

  async compactedRevision(): Promise<number> {
    this.#checkOpen();
    return this.#compacted;
  }

  /**
   * Commits writes already queued, ends every watch (buffered events are still handed
   * out), and closes the file. Idempotent.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    while (this.#queue.length > 0) this.#flush();
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    for (const watch of [...this.#watches]) watch.end();
    this.#watches.clear();
    this.#db.close();
    this.#release();
  }

  // ---- writes -------------------------------------------------------------------------

  async #write(
    kind: WriteKind,
    key: string,
    value: string | null,
    expectedRevision: number | undefined,
  ): Promise<number> {
    this.#checkOpen();
    checkKey(key);
    if (value !== null) checkValue(key, value);
    return new Promise<number>((resolve, reject) => {
      this.#queue.push({ kind, key, value, expectedRevision, resolve, reject });
      if (!this.#flushScheduled) {
        this.#flushScheduled = true;
        setImmediate(() => {
          this.#flushScheduled = false;
          if (!this.#closed) this.#flush();
        });
      }
    });
  }

  /** Commits one batch of queued writes in one transaction, then settles and publishes. */
  #flush(): void {
    const batch = this.#takeBatch();
    if (batch.length === 0) return;
    if (this.#queue.length > 0 && !this.#flushScheduled) {
      this.#flushScheduled = true;
      setImmediate(() => {
        this.#flushScheduled = false;
        if (!this.#closed) this.#flush();
      });
    }
    const now = Math.max(this.#opts.clock(), this.#lastWrittenAt);
    const startRevision = this.#revision;
    const outcomes: (number | StorageError)[] = [];
    const events: WatchEvent[] = [];
    try {
      this.#sql.begin.run();
      for (const write of batch) {
        try {
          outcomes.push(this.#apply(write, now, events));
        } catch (error) {
          if (!(error instanceof StorageError)) throw error;
          outcomes.push(error);
        }
      }
      this.#sql.commit.run();
    } catch (error) {
      if (this.#db.inTransaction) this.#sql.rollback.run();
      this.#revision = startRevision;
      const failure = new UnavailableError(`commit failed: ${(error as Error).message}`, {
        cause: error,
      });
      for (const write of batch) write.reject(failure);
      return;
    }
    this.#lastWrittenAt = now;
    this.#stats.commits++;
    this.#stats.writes += events.length;
    this.#stats.largestBatch = Math.max(this.#stats.largestBatch, events.length);
    this.#publish(events);
    for (let i = 0; i < batch.length; i++) {
      const outcome = outcomes[i];
      if (typeof outcome === "number") batch[i].resolve(outcome);
      else batch[i].reject(outcome);
    }
  }

  #takeBatch(): PendingWrite[] {
    let count = 0;
    let chars = 0;
    while (count < this.#queue.length && count < MAX_BATCH_WRITES) {
      chars += this.#queue[count].value?.length ?? 0;
      if (count > 0 && chars > MAX_BATCH_VALUE_CHARS) break;
      count++;
    }
    return this.#queue.splice(0, count);
  }

  /** Applies one write inside the open transaction; throws a StorageError if refused. */
  #apply(write: PendingWrite, now: number, events: WatchEvent[]): number {
    const { key } = write;
    const newest = this.#sql.getCurrent.get(key);
    const current = newest && newest.value !== null ? toKeyValue(newest, newest.value) : null;
    if (write.kind === "create") {
      if (current) throw new AlreadyExistsError(key, current);
      const revision = this.#revision + 1;
      this.#sql.insertHistory.run(
        revision,
        key,
        write.value,
        revision,
        newest?.revision ?? null,
        now,
      );
      this.#sql.upsertCurrent.run(key, revision, 1);
      this.#revision = revision;
      events.push({
        type: "create",
        key,
        revision,
        value: write.value,
        createRevision: revision,
        prev: null,
      });
      return revision;
    }
    if (!current) throw new NotFoundError(key);
    if (write.expectedRevision !== undefined && write.expectedRevision !== current.modRevision) {
      throw new ConflictError(key, write.expectedRevision, current);
    }
    const revision = this.#revision + 1;
    const createRevision = current.createRevision;
    this.#sql.insertHistory.run(
      revision,
      key,
      write.value,
      createRevision,
      current.modRevision,
      now,
    );
    this.#sql.upsertCurrent.run(key, revision, write.kind === "update" ? 1 : 0);
    this.#revision = revision;
    events.push({
      type: write.kind,
      key,
      revision,
      value: write.value,
      createRevision,
      prev: current,
    });
    return revision;
  }

  #publish(events: WatchEvent[]): void {
    if (this.#watches.size === 0 || events.length === 0) return;
    for (const watch of this.#watches) {
      const prefix = watch.prefix;
      for (const ev of events) {
        if (ev.key.startsWith(prefix)) watch.push(ev);
        if (!watch.active) break;
      }
    }
  }

  // ---- reads --------------------------------------------------------------------------

  /** The revision a read should use: current when absent or 0, else a checked past one. */
  #readRevision(requested: number | undefined): number {
    if (!requested) return this.#revision;
    checkRevision("revision", requested);
    if (requested > this.#revision) throw new FutureRevisionError(requested, this.#revision);
    if (requested < this.#compacted) throw new CompactedError(requested, this.#compacted);
    return requested;
  }

  #unchangedSince(revision: number, lower: string, upper: string): boolean {
    if (this.#revision - revision > UNCHANGED_CHECK_MAX_REVISIONS) return false;
    return this.#sql.changedSince.get(revision, lower, upper) === undefined;
  }

  #listCurrent(revision: number, lower: string, upper: string, limit: number): ListResult {
    const rows = this.#sql.listCurrent.all(lower, upper, limit > 0 ? limit + 1 : -1);
    const result: ListResult = { items: [], revision };
    if (limit > 0 && rows.length > limit) {
      rows.length = limit;
      const lastKey = rows[limit - 1].key;
      result.continue = encodeContinue({ revision, lastKey });
      result.remainingItemCount = this.#sql.countCurrent.get(keyAfter(lastKey), upper) ?? 0;
    }
    result.items = rows.map((row) => toKeyValue(row, row.value!));
    return result;
  }

  /**
   * A page as of a past revision: walks the keys with history in key order and each
   * one's rows back to the revision (never a scan or GROUP BY over all of history).
   */
  #listHistory(revision: number, lower: string, upper: string, limit: number): ListResult {
    const items: KeyValue[] = [];
    let from = lower;
    for (;;) {
      const keys = this.#sql.keysWithHistory.all(from, upper, HISTORY_KEYS_PER_READ);
      for (const { key, revision: newest } of keys) {
        const kv = this.#versionAt(key, newest, revision);
        if (kv) items.push(kv);
        if (limit > 0 && items.length > limit) break;
      }
      if (keys.length < HISTORY_KEYS_PER_READ || (limit > 0 && items.length > limit)) break;
      from = keyAfter(keys[keys.length - 1].key);
    }
    const result: ListResult = { items, revision };
    if (limit > 0 && items.length > limit) {
      items.length = limit;
      result.continue = encodeContinue({ revision, lastKey: items[limit - 1].key });
    }
    return result;
  }

  /**
   * `key` as it was at `revision` (>= the compacted revision), walking back from its
   * newest row. A row missing on the way was compacted: it was at or before the
   * compacted revision and not the newest then, or a delete, so the key was absent.
   */
  #versionAt(key: string, newest: number | undefined, revision: number): KeyValue | null {
    let row: HistoryRow | undefined =
      newest === undefined ? undefined : this.#sql.historyRow.get(newest);
    while (row !== undefined && row.revision > revision) {
      row = row.prev_row === null ? undefined : this.#sql.historyRow.get(row.prev_row);
    }
    if (row === undefined || row.value === null) return null;
    return {
      key,
      value: row.value,
      createRevision: row.create_revision,
      modRevision: row.revision,
    };
  }

  /** History for a catching-up watch; fails once `after` has been compacted. */
  #readChanges(prefix: string, after: number, through: number, limit: number): WatchEvent[] {
    if (this.#closed) return [];
    if (after < this.#compacted) throw new CompactedError(after, this.#compacted);
    const range = prefixRange(prefix);
    if (range === null) return [];
    return this.#sql.changes.all(after, through, range.lower, range.upper, limit).map(toEvent);
  }

  #writtenAt(revision: number): number | undefined {
    return this.#sql.writtenAt.get(revision);
  }

  #checkOpen(): void {
    if (this.#closed) throw new ClosedError();
  }

  // ---- compaction ---------------------------------------------------------------------

  /** Records durably that history before `revision` is gone (rows are deleted after). */
  #setCompacted(revision: number): void {
    this.#sql.setMeta.run(META_COMPACTED, revision);
    this.#compacted = revision;
  }

  /** Runs (or joins) the loop deleting superseded history up to the compacted revision. */
  #startCompaction(): Promise<void> {
    if (this.#compaction === null) {
      this.#compaction = this.#compactInBatches().finally(() => {
        this.#compaction = null;
      });
    }
    return this.#compaction;
  }

  async #compactInBatches(): Promise<void> {
    while (!this.#closed && this.#compactProgress < this.#compacted) {
      const after = this.#compactProgress;
      const through = Math.min(this.#compacted, after + this.#opts.compactionBatchSize);
      unavailableOnFailure("compaction", () =>
        this.#db.transaction(() => {
          this.#sql.deleteReplaced.run(after, through);
          this.#sql.forgetDeletedKeys.run({ after, through });
          this.#sql.deleteTombstones.run(after, through);
          this.#sql.setMeta.run(META_COMPACT_PROGRESS, through);
        })(),
      );
      this.#compactProgress = through;
      this.#stats.compactionBatches++;
      // Let queued writes commit between batches.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  /**
   * Background compaction: compacts through the newest revision that is both older than
   * the retention period and not among the newest minHistoryRevisions.
   */
  #compactByRetention(): void {
    if (this.#closed) return;
    try {
      const target = this.#retentionTarget();
      if (target > this.#compacted) this.#setCompacted(target);
    } catch (error) {
      this.#stats.lastCompactionError = String(error);
      return;
    }
    this.#compactInBackground();
  }

  /** Runs the compaction loop with nobody waiting; failures are kept in stats(). */
  #compactInBackground(): void {
    this.#startCompaction().catch((error: unknown) => {
      this.#stats.lastCompactionError = String(error);
    });
  }

  #retentionTarget(): number {
    const byCount = this.#revision - this.#opts.minHistoryRevisions;
    if (byCount <= this.#compacted) return this.#compacted;
    const cutoff = this.#opts.clock() - this.#opts.historyRetentionMs;
    // Every revision above the compacted one has a row, and written_at never decreases
    // with revision: binary search for the newest row written at or before the cutoff.
    let lo = this.#compacted;
    let hi = byCount;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      const at = this.#writtenAt(mid);
      if (at !== undefined && at <= cutoff) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }
}

/**
 * Runs a database step; a failure that is not a contract error (an I/O error, damage
 * found while reading) becomes UnavailableError carrying the cause.
 */
function unavailableOnFailure<T>(what: string, step: () => T): T {
  try {
    return step();
  } catch (error) {
    if (error instanceof StorageError) throw error;
    throw new UnavailableError(`${what} failed: ${(error as Error).message}`, { cause: error });
  }
}

function toKeyValue(row: CurrentRow, value: string): KeyValue {
  return {
    key: row.key,
    value,
    createRevision: row.create_revision,
    modRevision: row.revision,
  };
}

function toEvent(row: ChangeRow): WatchEvent {
  const type =
    row.value === null ? "delete" : row.create_revision === row.revision ? "create" : "update";
  const prev: KeyValue | null =
    type === "create" || row.prev_row === null || row.prev_value === null
      ? null
      : {
          key: row.key,
          value: row.prev_value,
          createRevision: row.prev_create_revision ?? row.create_revision,
          modRevision: row.prev_row,
        };
  return {
    type,
    key: row.key,
    revision: row.revision,
    value: row.value,
    createRevision: row.create_revision,
    prev,
  };
}
