/**
 * The embedded SQLite backend of the Store contract: the store (store.ts) and the
 * limits and options a caller may name. Its parts: opening and checking the file
 * (open.ts, lock.ts, sql-schema.ts), the writer (writer.ts, write-loop.ts, and the
 * writer thread: writer-thread*.ts, channel.ts, protocol.ts), reads (reader.ts,
 * statements.ts, prefix-range.ts) and watches (buffered-watch.ts, fifo.ts).
 */
export { LOCK_PARTIAL_GRACE_MS, lockFileOf } from "./lock.ts";
export {
  PAGE_CACHE_KIB,
  QUICK_CHECK_MAX_BYTES,
  READER_PAGE_CACHE_KIB,
  SqliteOpenError,
  type SqliteOpenFailure,
  WRITER_BUSY_TIMEOUT_MS,
  WRITER_PAGE_CACHE_KIB,
} from "./open.ts";
export {
  DEFAULT_COMPACTION_BATCH_SIZE,
  DEFAULT_COMPACTION_INTERVAL_MS,
  DEFAULT_HISTORY_RETENTION_MS,
  DEFAULT_MIN_HISTORY_REVISIONS,
  MAX_BATCH_WRITES,
  type SqliteStoreOptions,
} from "./options.ts";
export {
  MAX_SENDS_IN_FLIGHT,
  READ_BUSY_TIMEOUT_MS,
  REMAINING_COUNT_MAX_REVISIONS,
  SqliteStore,
  type SqliteStoreStats,
} from "./store.ts";
export { currentWriterThread, WRITER_THREAD_LINGER_MS } from "./writer-thread-client.ts";
