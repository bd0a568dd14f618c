/**
 * The reconciler contract. A reconciler gets a key (`{namespace, name}`), never
 * an event: it reads desired and observed state (from the cache), acts
 * idempotently, and returns
 * - nothing: done, until something changes;
 * - `{ requeueAfter: ms }`: look again after that long (not a failure; 0: at
 *   once, behind the keys already waiting);
 * - or throws: retried with per-key exponential backoff, unless the error is a
 *   `TerminalError`, which is not retried and is surfaced as a Warning Event on
 *   the object, with action `TERMINAL_ERROR_ACTION` (and, through
 *   `setErrorCondition`, as a condition).
 */
import type { KubeObject } from "@setpoint/api";
import type { InformerCache } from "../cache/cache.ts";
import type { Logger } from "../log.ts";
import type { EventRecorder } from "../manager/events.ts";
import type { ReconcileClient } from "./writer.ts";

/** What to reconcile: an object's name, and its namespace (absent for cluster-scoped kinds). */
export interface Request {
  namespace?: string | undefined;
  name: string;
}

/** What a reconcile asks for next. */
export interface Result {
  /**
   * Reconcile this key again after this many milliseconds (no backoff, not a
   * failure); 0 runs it again at once, behind the keys already waiting.
   */
  requeueAfter?: number | undefined;
}

/**
 * The `action` of the Warning Event a TerminalError is recorded as (its reason
 * is the error's), so tools tell errors that are not retried from other warnings.
 */
export const TERMINAL_ERROR_ACTION = "TerminalError";

/**
 * The cache-backed reader a reconcile reads through (informers shared by the
 * manager). In a reconcile's context, a read of a kind the controller watches
 * that names no scope (`get`/`peek`'s `scope`, `list`'s `opts.scope`) reads
 * the informer of that watch, in the scope the controller watches the kind
 * with; other kinds read the cache's default scope of the kind.
 */
export type CacheReader = Pick<InformerCache, "get" | "list" | "peek">;

/**
 * Everything a reconcile gets besides its request.
 *
 * `signal`, `log`, `client` and `reconcileID` are made on first access (a
 * reconcile that only reads the cache makes none of them), so they are
 * accessors: pass the context itself, or name the parts, rather than copying
 * it with a spread (`{ ...ctx }` leaves them out).
 */
export interface ReconcileContext {
  /** Reads from the shared informer cache (fast, possibly slightly stale). */
  reader: CacheReader;
  /**
   * Writes (and uncached reads) through the API. Its writes are recorded so the
   * next reconcile of this key waits until the cache has seen them
   * (read-your-own-writes). Refuses writes once `signal` has aborted.
   */
  client: ReconcileClient;
  /** Bound to controller, key, namespace, name and reconcileID. */
  log: Logger;
  /** Records Events (deduplicated) as this controller. */
  recorder: EventRecorder;
  /** Aborts on the reconcile timeout, on loss of leadership, and when shutdown's grace runs out. */
  signal: AbortSignal;
  /** Unique per reconcile; also in every log line. */
  reconcileID: string;
  /** The controller's name. */
  controller: string;
}

/** A reconcile function. Returning nothing means done. */
export type Reconciler = (
  req: Request,
  ctx: ReconcileContext,
  // biome-ignore lint/suspicious/noConfusingVoidType: lets `async` functions that return nothing be reconcilers
) => Promise<Result | undefined | void>;

/**
 * An error that retrying will not fix (invalid spec, missing permission the
 * operator must grant...). The controller does not retry it; it records a
 * Warning Event with `reason` on the object. Fix the cause and the next change
 * to the object reconciles it again.
 */
export class TerminalError extends Error {
  override name = "TerminalError";
  /** A CamelCase reason for the Event and condition. */
  readonly reason: string;

  constructor(
    message: string,
    opts: { reason?: string | undefined; cause?: unknown | undefined } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.reason = opts.reason ?? "ReconcileError";
  }
}

/** Whether `e` is (or wraps, through `cause`) a TerminalError. */
export function isTerminalError(e: unknown): e is TerminalError {
  for (let x = e, depth = 0; x instanceof Error && depth < 10; x = x.cause, depth++) {
    if (x instanceof TerminalError) return true;
  }
  return false;
}

/** The request for an object. */
export function requestFor(obj: KubeObject): Request {
  const req: Request = { name: obj.metadata.name ?? "" };
  if (obj.metadata.namespace) req.namespace = obj.metadata.namespace;
  return req;
}

/** Parses a key ("namespace/name" or "name") back into a request. */
export function parseKey(key: string): Request {
  const slash = key.indexOf("/");
  return slash < 0 ? { name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
