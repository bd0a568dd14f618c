/**
 * The embedded storage backend: the Store contract on one SQLite file in WAL mode.
 *
 * Writes are queued and committed together (group commit): every write that arrives
 * while a commit is under way joins the next transaction, each still gets its own
 * revision and its own compare-and-swap check, and each promise settles only after its
 * transaction has committed durably. The transactions (and their fsync) run on the
 * process's SQLite writer thread (sqlite/writer-thread.ts), so the event loop never
 * waits for the disk; compaction of old history runs there too, in small batches
 * between commits. With `writerThread: false`, and always for ":memory:", the same
 * transaction code (sqlite/writer.ts, sqlite/write-loop.ts) runs on the caller's thread.
 *
 * Reads (get, list, watch replay) run on the caller's thread, on the store's own
 * connection, at the newest revision the store has been told of (sqlite/reader.ts): a
 * write's revision is published, and its promise resolved, only after its commit, so a
 * read after a write sees it, and a list's revision is exactly the state it returns.
 * Watches are fed from the commit reports, in revision order, and replay older changes
 * from history.
 *
 * One process writes a store at a time: opening takes the store's lock file
 * (`<file>.lock`, see sqlite/lock.ts) and refuses a file locked by a live process. Do
 * not open, read or copy the database file from the process that has the store open
 * through anything but this store: closing any descriptor of the file drops the POSIX
 * locks SQLite holds on it (a second SqliteStore.open of it is refused for this reason).
 */
import nodePath from "node:path";
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
} from "../errors.ts";
import type {
  GetOptions,
  KeyValue,
  ListOptions,
  ListResult,
  Store,
  Watch,
  WatchEvent,
  WatchOptions,
} from "../store.ts";
import { checkKey, checkRevision, checkValue } from "../validate.ts";
import { BufferedWatch } from "./buffered-watch.ts";
import { InProcessChannel, type WriterChannel, type WriterEvents } from "./channel.ts";
import { Fifo } from "./fifo.ts";
import { openDatabase, READER_PAGE_CACHE_KIB } from "./open.ts";
import {
  type ResolvedSqliteStoreOptions,
  resolveOptions,
  type SqliteStoreOptions,
} from "./options.ts";
import { decodeContinue, encodeContinue, keyAfter, prefixRange } from "./prefix-range.ts";
import type { WriteKind, WriteOutcome, WriteRefused, WriteRequest } from "./protocol.ts";
import { SnapshotReader } from "./reader.ts";
import { ThreadChannel } from "./writer-thread-client.ts";

/**
 * A list page carries remainingItemCount when it is read at most this many revisions
 * before the newest (counting at an older revision walks every key changed since).
 */
export const REMAINING_COUNT_MAX_REVISIONS = 10_000;

/**
 * How long a read waits on a lock of the writer's connection (only transient ones
 * exist in WAL mode, such as a WAL reset) before failing with UnavailableError.
 */
export const READ_BUSY_TIMEOUT_MS = 1000;

/**
 * Sends of writes to the writer thread not yet fully reported, at most. With fewer out,
 * a write goes to the writer at once (at the end of the current microtask run), so its
 * commit overlaps whatever the event loop does next. Otherwise writes wait in the store
 * and go over together on the turn of the event loop after a report comes back (once
 * the reported writes are answered): group commit across the thread boundary, so slow
 * commits (fsync) make for fewer, larger transactions rather than a queue of small ones,
 * and the event loop pays for few messages under load.
 */
export const MAX_SENDS_IN_FLIGHT = 1;

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
  /** Whether transactions commit on the writer thread (false: on the caller's thread). */
  writerThread: boolean;
}

interface PendingWrite {
  request: WriteRequest;
  resolve: (revision: number) => void;
  reject: (error: unknown) => void;
}

interface CompactionWaiter {
  target: number;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class SqliteStore implements Store {
  /** The database file (or ":memory:"). */
  readonly path: string;
  readonly #db: Database.Database;
  readonly #release: () => void;
  readonly #reader: SnapshotReader;
  readonly #opts: ResolvedSqliteStoreOptions;
  readonly #channel: WriterChannel;
  /** The newest revision whose commit has been reported: what reads see. */
  #revision: number;
  #compacted: number;
  #compactProgress: number;
  /** Writes handed to the store and not settled yet, oldest first. */
  readonly #pending = new Fifo<PendingWrite>();
  /** Writes not yet handed to the writer. */
  #outbox: WriteRequest[] = [];
  #sendScheduled = false;
  /** Sizes (in writes) of the sends not fully reported yet, oldest first. */
  readonly #inFlight = new Fifo<number>();
  /** Writes of the oldest send in flight already reported. */
  #inFlightReported = 0;
  #compactionWaiters: CompactionWaiter[] = [];
  readonly #watches = new Set<BufferedWatch>();
  #timer: NodeJS.Timeout | null = null;
  #closed = false;
  #closing: Promise<void> | null = null;
  #dbClosed = false;
  /** Set once the writer is gone: every write fails with it. */
  #lost: UnavailableError | null = null;
  #busy = false;
  readonly #stats: SqliteStoreStats;

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
    this.#reader = new SnapshotReader(db);
    const marks = this.#reader.marks();
    this.#revision = marks.revision;
    this.#compacted = marks.compacted;
    this.#compactProgress = marks.compactProgress;
    const events: WriterEvents = {
      committed: (outcomes) => this.#onCommitted(outcomes),
      commitFailed: (writes, message) => this.#onCommitFailed(writes, message),
      compacted: (progress, batches) => this.#onCompacted(progress, batches),
      compactionFailed: (message) => this.#onCompactionFailed(message),
      lost: (error) => this.#onLost(error),
    };
    const memory = path === ":memory:" || path === "";
    if (opts.writerThread && !memory) {
      db.pragma("query_only = ON");
      db.pragma(`cache_size = -${READER_PAGE_CACHE_KIB}`);
      db.pragma(`busy_timeout = ${READ_BUSY_TIMEOUT_MS}`);
      this.#channel = new ThreadChannel(events, {
        // Absolute: the process's working directory may change before the thread opens it.
        path: nodePath.resolve(path),
        durable: opts.durable,
        compactionBatchSize: opts.compactionBatchSize,
      });
    } else {
      this.#channel = new InProcessChannel(db, events, opts.compactionBatchSize);
    }
    this.#stats = {
      commits: 0,
      writes: 0,
      largestBatch: 0,
      compactionBatches: 0,
      lastCompactionError: null,
      writerThread: this.#channel.threaded,
    };
    if (opts.compactionIntervalMs > 0) {
      this.#timer = setInterval(() => this.#compactByRetention(), opts.compactionIntervalMs);
      this.#timer.unref();
    }
  }

  /**
   * Opens the store at `path` (created if absent; ":memory:" for a throwaway store).
   * Throws SqliteOpenError, leaving the file untouched, if the file is not a SQLite
   * database, is damaged, belongs to another application, has a newer schema, or is
   * open in this or another process.
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
    return unavailableOnFailure("read", () => this.#reader.get(key, revision));
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
    const page = this.#reader.list(lower, range.upper, revision, limit);
    const result: ListResult = { items: page.items, revision };
    if (page.more) {
      const lastKey = page.items[page.items.length - 1].key;
      result.continue = encodeContinue({ revision, lastKey });
      if (
        opts.countRemaining !== false &&
        this.#revision - revision <= REMAINING_COUNT_MAX_REVISIONS
      ) {
        result.remainingItemCount = this.#reader.count(keyAfter(lastKey), range.upper, revision);
      }
    }
    return result;
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
      if (this.#lost) throw this.#lost;
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
    if (this.#lost) throw this.#lost;
    if (revision > this.#compacted) this.#compacted = revision;
    const target = this.#compacted;
    if (this.#compactProgress >= target) return;
    await new Promise<void>((resolve, reject) => {
      this.#compactionWaiters.push({ target, resolve, reject });
      this.#updateBusy();
      this.#channel.compact(target);
    });
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
   * Commits writes already made, ends every watch (buffered events are still handed
   * out), stops the writer and closes the file. Later calls fail with ClosedError.
   * Idempotent: every call resolves when the store is closed.
   */
  close(): Promise<void> {
    if (this.#closing === null) {
      this.#closed = true;
      this.#closing = this.#shutDown();
    }
    return this.#closing;
  }

  async #shutDown(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#updateBusy();
    this.#sendOutbox(true);
    await this.#channel.close();
    // Every write handed over has been reported, unless the writer was lost (then they
    // failed already); compaction left over resumes when the store is next opened.
    for (const waiter of this.#compactionWaiters.splice(0)) waiter.resolve();
    for (const watch of [...this.#watches]) watch.end();
    this.#watches.clear();
    this.#dbClosed = true;
    this.#db.close();
    this.#release();
    this.#updateBusy();
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
    if (this.#lost) throw this.#lost;
    return new Promise<number>((resolve, reject) => {
      const request: WriteRequest = { kind, key, value, expected: expectedRevision ?? null };
      this.#pending.push({ request, resolve, reject });
      this.#outbox.push(request);
      this.#scheduleSend();
      this.#updateBusy();
    });
  }

  /**
   * Arranges for the outbox to be sent. On the writer thread: at the end of the current
   * microtask run, unless MAX_SENDS_IN_FLIGHT sends are out (then the turn after a report
   * sends it, see #reported). On
   * the caller's thread, where a send is a commit: on the next turn of the event loop,
   * so that every write arriving in this turn joins one transaction.
   */
  #scheduleSend(): void {
    if (this.#sendScheduled) return;
    const send = () => {
      this.#sendScheduled = false;
      this.#sendOutbox();
    };
    if (!this.#channel.threaded) {
      this.#sendScheduled = true;
      setImmediate(send);
    } else if (this.#inFlight.length < MAX_SENDS_IN_FLIGHT) {
      this.#sendScheduled = true;
      queueMicrotask(send);
    }
  }

  /** Hands the writes made so far to the writer, as one send, unless enough are in flight. */
  #sendOutbox(force = false): void {
    if (this.#outbox.length === 0 || this.#lost) return;
    if (!force && this.#inFlight.length >= MAX_SENDS_IN_FLIGHT) return;
    const writes = this.#outbox;
    this.#outbox = [];
    this.#inFlight.push(writes.length);
    this.#channel.send(writes, this.#opts.clock());
  }

  /**
   * `count` more writes were reported: retire the sends they complete, and send what
   * waits on the next turn of the event loop, not at once. Sent at once, the message
   * wakes the writer thread while this thread still has the reported writes to answer
   * (on a busy machine the two may then compete for a core); sent after them, it also
   * carries the writes that arrived meanwhile (fewer, larger sends).
   */
  #reported(count: number): void {
    this.#inFlightReported += count;
    for (;;) {
      const oldest = this.#inFlight.peek();
      if (oldest === undefined || this.#inFlightReported < oldest) break;
      this.#inFlightReported -= oldest;
      this.#inFlight.shift();
    }
    if (this.#outbox.length > 0 && !this.#sendScheduled) {
      this.#sendScheduled = true;
      setImmediate(() => {
        this.#sendScheduled = false;
        this.#sendOutbox();
      });
    }
  }

  /**
   * A transaction committed: arrange for what waits to go to the writer (on the next
   * turn), then publish the transaction's changes and settle its writes.
   */
  #onCommitted(outcomes: WriteOutcome[]): void {
    this.#reported(outcomes.length);
    const settled = this.#pending.take(outcomes.length);
    const events: WatchEvent[] = [];
    for (let i = 0; i < outcomes.length; i++) {
      const outcome = outcomes[i];
      if ("refused" in outcome) continue;
      const { request } = settled[i];
      events.push({
        type: request.kind,
        key: request.key,
        revision: outcome.revision,
        value: request.value,
        createRevision: outcome.createRevision,
        prev: outcome.prev,
      });
      this.#revision = outcome.revision;
    }
    this.#stats.commits++;
    this.#stats.writes += events.length;
    this.#stats.largestBatch = Math.max(this.#stats.largestBatch, events.length);
    this.#publish(events);
    for (let i = 0; i < outcomes.length; i++) {
      const outcome = outcomes[i];
      if ("refused" in outcome) settled[i].reject(refusal(settled[i].request, outcome));
      else settled[i].resolve(outcome.revision);
    }
    this.#updateBusy();
  }

  #onCommitFailed(writes: number, message: string): void {
    this.#reported(writes);
    const failure = new UnavailableError(message);
    for (const write of this.#pending.take(writes)) write.reject(failure);
    this.#updateBusy();
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

  /** The writer is gone: pending and later writes fail, and so do watches. */
  #onLost(cause: Error): void {
    if (this.#lost) return;
    const error = new UnavailableError(`the SQLite writer stopped: ${cause.message}`, { cause });
    this.#lost = error;
    this.#outbox = [];
    for (const write of this.#pending.take(this.#pending.length)) write.reject(error);
    for (const waiter of this.#compactionWaiters.splice(0)) waiter.reject(error);
    if (!this.#closed) {
      for (const watch of [...this.#watches]) watch.fail(error);
      this.#watches.clear();
    }
    this.#updateBusy();
  }

  /** Tells the channel whether anything waits on the writer (keeping the process alive). */
  #updateBusy(): void {
    const busy =
      !this.#lost &&
      !this.#dbClosed &&
      (this.#pending.length > 0 || this.#compactionWaiters.length > 0 || this.#closed);
    if (busy === this.#busy) return;
    this.#busy = busy;
    this.#channel.setBusy(busy);
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

  /** History for a catching-up watch; fails once `after` has been compacted. */
  #readChanges(prefix: string, after: number, through: number, limit: number): WatchEvent[] {
    if (this.#dbClosed) return [];
    if (after < this.#compacted) throw new CompactedError(after, this.#compacted);
    const range = prefixRange(prefix);
    if (range === null) return [];
    return this.#reader.changes(range.lower, range.upper, after, through, limit);
  }

  #checkOpen(): void {
    if (this.#closed) throw new ClosedError();
  }

  // ---- compaction ---------------------------------------------------------------------

  #onCompacted(progress: number, batches: number): void {
    this.#compactProgress = Math.max(this.#compactProgress, progress);
    this.#stats.compactionBatches += batches;
    if (this.#compactionWaiters.length === 0) return;
    const waiting: CompactionWaiter[] = [];
    for (const waiter of this.#compactionWaiters) {
      if (waiter.target <= this.#compactProgress) waiter.resolve();
      else waiting.push(waiter);
    }
    this.#compactionWaiters = waiting;
    this.#updateBusy();
  }

  #onCompactionFailed(message: string): void {
    this.#stats.lastCompactionError = message;
    const error = new UnavailableError(message);
    for (const waiter of this.#compactionWaiters.splice(0)) waiter.reject(error);
    this.#updateBusy();
  }

  /**
   * Background compaction: compacts through the newest revision that is both older than
   * the retention period and not among the newest minHistoryRevisions.
   */
  #compactByRetention(): void {
    if (this.#closed || this.#lost) return;
    let target: number;
    try {
      target = this.#retentionTarget();
    } catch (error) {
      this.#stats.lastCompactionError = String(error);
      return;
    }
    if (target <= this.#compacted) return;
    this.#compacted = target;
    this.#channel.compact(target);
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
      const at = this.#reader.writtenAt(mid);
      if (at !== undefined && at <= cutoff) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }
}

/** The contract error for a write the writer refused. */
function refusal(request: WriteRequest, outcome: WriteRefused): StorageError {
  switch (outcome.refused) {
    case "exists":
      return new AlreadyExistsError(request.key, outcome.current);
    case "missing":
      return new NotFoundError(request.key);
    case "conflict":
      return new ConflictError(request.key, request.expected ?? 0, outcome.current!);
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
