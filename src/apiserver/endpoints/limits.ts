/**
 * Every bound the REST handler enforces, named in one place. `createApiHandler`
 * takes a partial override (tests shrink the windows and intervals).
 */
export interface ApiLimits {
  /** Largest request body accepted, in bytes; larger bodies get 413 (Kubernetes: 3 MiB). */
  maxBodyBytes: number;
  /** How often an idle watch that asked for bookmarks gets a BOOKMARK event, in ms. */
  bookmarkIntervalMs: number;
  /** Recent events each watch cache keeps to start watches from a past resourceVersion. */
  watchCacheWindow: number;
  /**
   * Bytes a watcher may leave unread in its response before it is cut off (its
   * response ends; the client re-watches from its last resourceVersion).
   */
  slowWatcherBytes: number;
  /** Time a cut-off or closing watcher gets to drain before its socket is destroyed, in ms. */
  watchDrainMs: number;
  /**
   * Default lifetime of a watch without `timeoutSeconds`, in seconds; each watch
   * gets a random lifetime between this and twice this, as Kubernetes does, so
   * clients do not all reconnect at once.
   */
  watchTimeoutSeconds: number;
  /** Largest `timeoutSeconds` honoured on a watch, in seconds. */
  maxWatchTimeoutSeconds: number;
  /** Items read from storage per page while scanning (lists, deletecollection, priming). */
  storagePageSize: number;
  /** Times an unconditional update or patch is retried after losing a compare-and-swap. */
  maxConflictRetries: number;
  /** Delay before a watch cache re-opens its storage watch after an error, in ms. */
  watchRestartDelayMs: number;
  /**
   * Bytes produced at a time for a streamed response (a list, a watch's initial
   * events): the next chunk is made only once the client took this one.
   */
  streamChunkBytes: number;
  /**
   * Bytes of streamed responses produced and not yet handed to the kernel, over
   * all requests; beyond, streams wait their turn.
   */
  streamBudgetBytes: number;
  /**
   * How long a client may take nothing of a streamed response (a list, a watch's
   * initial events) before it is cut off, in ms.
   */
  streamStallMs: number;
}

/** 3 MiB: Kubernetes' request body limit. */
export const MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024;

export const DEFAULT_API_LIMITS: Readonly<ApiLimits> = Object.freeze({
  maxBodyBytes: MAX_REQUEST_BODY_BYTES,
  bookmarkIntervalMs: 60_000,
  watchCacheWindow: 10_000,
  slowWatcherBytes: 16 * 1024 * 1024,
  watchDrainMs: 10_000,
  watchTimeoutSeconds: 1800,
  maxWatchTimeoutSeconds: 24 * 3600,
  storagePageSize: 1000,
  maxConflictRetries: 5,
  watchRestartDelayMs: 200,
  streamChunkBytes: 1024 * 1024,
  streamBudgetBytes: 64 * 1024 * 1024,
  streamStallMs: 30_000,
});

/** The defaults with `overrides` applied. */
export function resolveLimits(overrides: Partial<ApiLimits> | undefined): ApiLimits {
  return { ...DEFAULT_API_LIMITS, ...(overrides ?? {}) };
}
