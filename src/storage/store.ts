/**
 * The storage contract: an MVCC key-value store with one global, monotonically
 * increasing revision. Both backends (sqlite/, etcd/) implement it and pass
 * the same conformance suite (test/storage/conformance.ts).
 *
 * - Every successful write bumps the global revision by exactly one and returns it.
 * - An item's `modRevision` is the revision of its last write, `createRevision`
 *   the revision that created it (the apiserver uses `modRevision` as the
 *   object's `metadata.resourceVersion`).
 * - Writes are compare-and-swap on `modRevision`.
 * - A watch replays every change after a revision in order, then streams live
 *   changes; a revision older than the last compaction fails with CompactedError.
 */

/** One stored key at one revision. */
export interface KeyValue {
  key: string;
  /** The stored value (the apiserver stores JSON text). */
  value: string;
  /** Revision of the write that created this key (stays fixed across updates). */
  createRevision: number;
  /** Revision of the last write to this key. */
  modRevision: number;
}

export interface GetOptions {
  /** Read the key as it was at this revision (fails with CompactedError if compacted). */
  revision?: number;
}

export interface ListOptions {
  /** At most this many items per page (0 or absent: no limit). */
  limit?: number;
  /** Token from a previous page: the next page is read at that page's revision. */
  continue?: string;
  /** Read at this past revision (ignored when `continue` is given). */
  revision?: number;
  /**
   * Whether to count the items remaining after the page (remainingItemCount);
   * default true. A reader that pages through everything does not need it.
   */
  countRemaining?: boolean;
}

export interface ListResult {
  items: KeyValue[];
  /** The revision this page (and every page continued from it) was read at. */
  revision: number;
  /** Present when more items remain; pass back as `continue`. */
  continue?: string;
  /** How many items remain after this page, when the backend knows it cheaply. */
  remainingItemCount?: number;
}

export type WatchEventType = "create" | "update" | "delete";

export interface WatchEvent {
  type: WatchEventType;
  key: string;
  /** The revision of this change. */
  revision: number;
  /** The value after the change; for deletes, null. */
  value: string | null;
  /** The key's createRevision (for deletes, the deleted item's). */
  createRevision: number;
  /** The item as it was just before this change (null for creates). */
  prev: KeyValue | null;
}

/**
 * A running watch. Iterate it to receive events in revision order. Iteration ends
 * when the watch is cancelled or the store is closed; it throws CompactedError if the
 * start revision was compacted, WatchOverflowError if the consumer fell too far behind,
 * and UnavailableError if the backend was lost. After an error, re-watch from the
 * last revision you processed.
 */
export interface Watch extends AsyncIterable<WatchEvent> {
  cancel(): void;
}

export interface WatchOptions {
  /**
   * Events buffered for a consumer that is not reading; past this the watch ends with
   * WatchOverflowError instead of holding back writers or other watchers.
   * Default: DEFAULT_WATCH_BUFFER.
   */
  bufferSize?: number;
}

export interface Store {
  /** Current value of `key`, or null if absent. */
  get(key: string, opts?: GetOptions): Promise<KeyValue | null>;
  /** Keys starting with `prefix`, in key order. */
  list(prefix: string, opts?: ListOptions): Promise<ListResult>;
  /** Creates `key`; AlreadyExistsError if present. Returns the new revision. */
  create(key: string, value: string): Promise<number>;
  /**
   * Replaces `key` if its modRevision equals `expectedRevision`. NotFoundError if
   * absent, ConflictError (carrying the current item) on mismatch. Returns the new revision.
   */
  update(key: string, value: string, expectedRevision: number): Promise<number>;
  /**
   * Deletes `key`, if given only when its modRevision equals `expectedRevision`.
   * NotFoundError if absent, ConflictError on mismatch. Returns the new revision.
   */
  delete(key: string, expectedRevision?: number): Promise<number>;
  /**
   * Every change under `prefix` with revision > `fromRevision`, then live changes.
   * `fromRevision` 0 means "from now".
   */
  watch(prefix: string, fromRevision: number, opts?: WatchOptions): Watch;
  /** Forgets history at or before `revision` (current values are kept). */
  compact(revision: number): Promise<void>;
  /** The newest revision of the whole store. */
  currentRevision(): Promise<number>;
  /** The newest compacted revision (0 if never compacted). */
  compactedRevision(): Promise<number>;
  /** Stops watches and releases resources; later calls fail with ClosedError. */
  close(): Promise<void>;
}

/** Largest value accepted, in bytes (etcd's default request limit). */
export const MAX_VALUE_BYTES = 1.5 * 1024 * 1024;
/** Longest key accepted, in bytes. */
export const MAX_KEY_BYTES = 1024;
/** Events buffered per watcher before it is cut off. */
export const DEFAULT_WATCH_BUFFER = 10_000;
