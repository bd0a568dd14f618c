import { DEFAULT_WATCH_BUFFER } from "../store.ts";

/** Default age of history kept for watches and past reads: 5 minutes. */
export const DEFAULT_HISTORY_RETENTION_MS = 5 * 60 * 1000;
/** History is never compacted below this many newest revisions. */
export const DEFAULT_MIN_HISTORY_REVISIONS = 1000;
/** How often background compaction looks for history past retention. */
export const DEFAULT_COMPACTION_INTERVAL_MS = 10_000;
/** Revisions examined per compaction transaction, so writers are never held up long. */
export const DEFAULT_COMPACTION_BATCH_SIZE = 500;
/** Most writes committed in one group-commit transaction. */
export const MAX_BATCH_WRITES = 2000;
/** Most value bytes (approximately, in UTF-16 units) committed in one transaction. */
export const MAX_BATCH_VALUE_CHARS = 32 * 1024 * 1024;

/** Options of SqliteStore.open; every field has a documented default. */
export interface SqliteStoreOptions {
  /**
   * true (default): WAL with synchronous=FULL, every acknowledged write survives kill -9
   * and power loss. false: WAL with synchronous=NORMAL, acknowledged writes survive a
   * process crash but the last ones may be lost if the machine loses power.
   */
  durable?: boolean;
  /**
   * true (default): write transactions, their fsync and background compaction run on
   * the process's SQLite writer thread, off the event loop; reads stay on the caller's
   * thread, on a connection of their own. false: everything runs on the caller's
   * thread, on one connection, and every commit blocks the event loop for its fsync
   * (kept as the baseline the benchmark compares with). A ":memory:" store always
   * works this way: an in-memory database cannot be shared by two connections.
   */
  writerThread?: boolean;
  /** History younger than this is kept (default DEFAULT_HISTORY_RETENTION_MS). */
  historyRetentionMs?: number;
  /** The newest this-many revisions are always kept (default DEFAULT_MIN_HISTORY_REVISIONS). */
  minHistoryRevisions?: number;
  /**
   * How often background compaction runs (default DEFAULT_COMPACTION_INTERVAL_MS);
   * 0 disables it (explicit compact() still works).
   */
  compactionIntervalMs?: number;
  /** Revisions per compaction transaction (default DEFAULT_COMPACTION_BATCH_SIZE). */
  compactionBatchSize?: number;
  /** Default per-watch buffer (default DEFAULT_WATCH_BUFFER); see WatchOptions.bufferSize. */
  watchBufferSize?: number;
  /** Clock for history timestamps and retention, in ms (default Date.now; tests set it). */
  clock?: () => number;
}

export type ResolvedSqliteStoreOptions = Required<SqliteStoreOptions>;

export function resolveOptions(opts: SqliteStoreOptions): ResolvedSqliteStoreOptions {
  return {
    durable: opts.durable ?? true,
    writerThread: opts.writerThread ?? true,
    historyRetentionMs: nonNegative(opts.historyRetentionMs, DEFAULT_HISTORY_RETENTION_MS),
    minHistoryRevisions: nonNegative(opts.minHistoryRevisions, DEFAULT_MIN_HISTORY_REVISIONS),
    compactionIntervalMs: nonNegative(opts.compactionIntervalMs, DEFAULT_COMPACTION_INTERVAL_MS),
    compactionBatchSize: Math.max(1, opts.compactionBatchSize ?? DEFAULT_COMPACTION_BATCH_SIZE),
    watchBufferSize: Math.max(1, opts.watchBufferSize ?? DEFAULT_WATCH_BUFFER),
    clock: opts.clock ?? Date.now,
  };
}

function nonNegative(value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`invalid option value ${value}`);
  return value;
}
