import type { KeyValue } from "./store.ts";

/** Base class of every error the storage layer throws on purpose. */
export class StorageError extends Error {
  override name = "StorageError";
}

export class AlreadyExistsError extends StorageError {
  override name = "AlreadyExistsError";
  constructor(
    readonly key: string,
    readonly current: KeyValue | null = null,
  ) {
    super(`key already exists: ${key}`);
  }
}

export class NotFoundError extends StorageError {
  override name = "NotFoundError";
  constructor(readonly key: string) {
    super(`key not found: ${key}`);
  }
}

/** A compare-and-swap lost: `current` is what the store holds now. */
export class ConflictError extends StorageError {
  override name = "ConflictError";
  constructor(
    readonly key: string,
    readonly expectedRevision: number,
    readonly current: KeyValue,
  ) {
    super(
      `revision mismatch on ${key}: expected ${expectedRevision}, current ${current.modRevision}`,
    );
  }
  get currentRevision(): number {
    return this.current.modRevision;
  }
}

/** The requested revision's history has been compacted away. */
export class CompactedError extends StorageError {
  override name = "CompactedError";
  constructor(
    readonly requestedRevision: number,
    readonly compactedRevision: number,
  ) {
    super(
      `revision ${requestedRevision} has been compacted (compacted through ${compactedRevision})`,
    );
  }
}

/** The revision asked for is newer than the store's current revision. */
export class FutureRevisionError extends StorageError {
  override name = "FutureRevisionError";
  constructor(
    readonly requestedRevision: number,
    readonly currentRevision: number,
  ) {
    super(`revision ${requestedRevision} is newer than the current revision ${currentRevision}`);
  }
}

export class TooLargeError extends StorageError {
  override name = "TooLargeError";
  constructor(
    readonly what: "key" | "value",
    readonly size: number,
    readonly limit: number,
  ) {
    super(`${what} is ${size} bytes, over the limit of ${limit} bytes`);
  }
}

/** The key is empty, malformed, or the request otherwise cannot be valid. */
export class InvalidKeyError extends StorageError {
  override name = "InvalidKeyError";
  constructor(
    readonly key: string,
    reason: string,
  ) {
    super(`invalid key ${JSON.stringify(key)}: ${reason}`);
  }
}

/** The backend cannot be reached or failed; the operation may be retried. */
export class UnavailableError extends StorageError {
  override name = "UnavailableError";
}

/**
 * The backend is out of space (etcd's NOSPACE alarm: "mvcc: database space exceeded"):
 * writes fail until an operator compacts, defragments and disarms it; may be retried.
 */
export class NoSpaceError extends UnavailableError {
  override name = "NoSpaceError";
}

/** The store was closed. */
export class ClosedError extends UnavailableError {
  override name = "ClosedError";
  constructor() {
    super("store is closed");
  }
}

/** A watcher fell too far behind and was cut off; re-watch from its last revision. */
export class WatchOverflowError extends StorageError {
  override name = "WatchOverflowError";
  constructor(
    readonly lastDeliveredRevision: number,
    readonly bufferSize: number,
  ) {
    super(
      `watcher fell more than ${bufferSize} events behind and was cut off after revision ${lastDeliveredRevision}; re-watch from there`,
    );
  }
}
