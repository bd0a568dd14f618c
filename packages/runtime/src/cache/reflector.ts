/**
 * The reflector keeps a local copy of a collection in step with the server: it
 * lists, then watches from the list's resourceVersion, and feeds both into a sink
 * (the informer). The rules, as Kubernetes clients follow them:
 *
 * - The first list asks for `resourceVersion=0` (any version; a Kubernetes server
 *   answers it from its watch cache), paged.
 * - The watch starts at the list's resourceVersion with bookmarks requested and a
 *   random `timeoutSeconds` between the configured bounds, so watches of many
 *   clients do not all end and restart together.
 * - A watch that ends, drops, or stays silent past the idle deadline (no events
 *   and no bookmarks) is resumed from the last resourceVersion seen: no re-list.
 * - 410 Gone/Expired (on the watch request or as an ERROR event) means the server
 *   no longer has the history from that version: re-list with a consistent read
 *   (no resourceVersion) and let the sink reconcile its copy against it.
 * - Other failures (and watches that end at once without delivering anything)
 *   back off exponentially with jitter, capped; the delay starts over only after a
 *   quiet period, so a list that works followed by a watch that fails still slows
 *   down. Watch failures resume the watch; unexpected answers re-list.
 */
import type { KubeObject, Status } from "@setpoint/api";
import type { Client, TypeRef } from "../client/client.ts";
import {
  ApiError,
  isGone,
  isServerError,
  isTooManyRequests,
  isTransient,
  sleep,
} from "../client/errors.ts";

/** Default first delay after a failure, in ms. */
export const DEFAULT_BACKOFF_INITIAL_MS = 800;
/** Longest delay between attempts, in ms. */
export const DEFAULT_BACKOFF_MAX_MS = 30_000;
/** Bounds of the random watch timeout, in seconds (the server ends the watch after it). */
export const DEFAULT_WATCH_TIMEOUT_MIN_SECONDS = 300;
export const DEFAULT_WATCH_TIMEOUT_MAX_SECONDS = 600;
/**
 * A watch that receives nothing (no event, no bookmark) for this long is presumed
 * dead and resumed. Kubernetes sends a bookmark to each watcher about once a minute.
 */
export const DEFAULT_WATCH_IDLE_DEADLINE_MS = 150_000;
/** The backoff starts over after this long without a failure, in ms. */
export const DEFAULT_BACKOFF_RESET_MS = 120_000;
/** Items per list page. */
export const DEFAULT_LIST_PAGE_SIZE = 500;
/** A watch that ends sooner than this without delivering anything counts as a failure. */
export const MIN_HEALTHY_WATCH_MS = 1_000;

/** Where a reflector delivers what it learns. */
export interface ReflectorSink<T extends KubeObject> {
  /** The result of a (re-)list: the complete collection at `resourceVersion`. */
  replace(items: T[], resourceVersion: string): void;
  /** One watch event. */
  apply(type: "ADDED" | "MODIFIED" | "DELETED", obj: T): void;
  /** The server's progress marker: everything up to `resourceVersion` was delivered. */
  bookmark(resourceVersion: string): void;
}

/** A structured log call, compatible with pino's `(fields, message)`. */
export interface RuntimeLogger {
  debug(fields: object, msg?: string): void;
  info(fields: object, msg?: string): void;
  warn(fields: object, msg?: string): void;
  error(fields: object, msg?: string): void;
}

/** A logger that drops everything. */
export const NOOP_LOGGER: RuntimeLogger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
};

export interface ReflectorOptions<T extends KubeObject> {
  namespace?: string | undefined;
  labelSelector?: string | undefined;
  fieldSelector?: string | undefined;
  /** List and watch metadata only (PartialObjectMetadata). */
  metadataOnly?: boolean | undefined;
  /** Applied to every object before it reaches the sink. */
  transform?: ((obj: KubeObject) => T) | undefined;
  pageSize?: number | undefined;
  watchTimeoutMinSeconds?: number | undefined;
  watchTimeoutMaxSeconds?: number | undefined;
  idleDeadlineMs?: number | undefined;
  backoffInitialMs?: number | undefined;
  backoffMaxMs?: number | undefined;
  backoffResetMs?: number | undefined;
  logger?: RuntimeLogger | undefined;
}

/** How the next list reads. */
type ListMode = "any" | "notOlderThan" | "consistent";

/** What the reflector is doing, for health checks. */
export interface ReflectorState {
  /** A watch is open and has not failed. */
  watching: boolean;
  /** Lists after the first one. */
  relists: number;
  /** Watches resumed after one ended, dropped or went silent. */
  rewatches: number;
  /** Watches given up because they stayed silent past the idle deadline. */
  idleRestarts: number;
  /** When something last arrived (list, event or bookmark), ms since the epoch; 0 never. */
  lastActivity: number;
  /** The newest resourceVersion seen. */
  resourceVersion: string;
  /** Consecutive failures. */
  failures: number;
  lastError?: string | undefined;
}

/** A uniformly random integer in [min, max]. */
function randomBetween(min: number, max: number): number {
  return min + Math.floor(Math.random() * (Math.max(min, max) - min + 1));
}

export class Reflector<T extends KubeObject> {
  readonly state: ReflectorState = {
    watching: false,
    relists: 0,
    rewatches: 0,
    idleRestarts: 0,
    lastActivity: 0,
    resourceVersion: "",
    failures: 0,
  };
  private readonly log: RuntimeLogger;
  private listed = false;
  private expiredInARow = 0;
  private backoffLevel = 0;
  private lastBackoffAt = 0;

  constructor(
    private readonly client: Client,
    readonly type: TypeRef,
    private readonly sink: ReflectorSink<T>,
    private readonly opts: ReflectorOptions<T> = {},
  ) {
    this.log = opts.logger ?? NOOP_LOGGER;
  }

  /** Runs until `signal` aborts. Never throws. */
  async run(signal: AbortSignal): Promise<void> {
    let mode: ListMode = "any";
    let needList = true;
    while (!signal.aborted) {
      let phase: "list" | "watch" = needList ? "list" : "watch";
      try {
        if (needList) {
          await this.list(mode, signal);
          needList = false;
          phase = "watch";
        }
        const outcome = await this.watch(signal);
        if (outcome === "expired") {
          needList = true;
          mode = "consistent";
          // A server that expires every fresh watch at once must not make us spin.
          if (++this.expiredInARow > 1) {
            if (!(await this.pause(new Error("the watch expired again"), signal))) break;
          }
          continue;
        }
        this.expiredInARow = 0;
      } catch (e) {
        if (signal.aborted) break;
        this.state.failures++;
        this.state.lastError = e instanceof Error ? e.message : String(e);
        if (isGone(e)) {
          // History gone (on the watch, or a continue token mid-list): consistent re-list.
          needList = true;
          mode = "consistent";
        } else if (phase === "list") {
          if (isResourceVersionTooLarge(e)) mode = "consistent";
        } else if (!isTransient(e) && !isWatchDrop(e)) {
          // An unexpected answer to the watch: start over from a list no older than ours.
          needList = true;
          mode = "notOlderThan";
        }
        const level = isTransient(e) || isWatchDrop(e) || isGone(e) ? "info" : "warn";
        this.log[level](
          { kind: this.type.kind, phase, failures: this.state.failures, err: this.state.lastError },
          `${this.type.kind} ${phase} failed; retrying`,
        );
        if (!(await this.pause(e, signal))) break;
      }
    }
    this.state.watching = false;
  }

  /** Sleeps the backoff for error `e`; false when aborted meanwhile. */
  private async pause(e: unknown, signal: AbortSignal): Promise<boolean> {
    try {
      await sleep(this.backoffMs(e), signal);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Capped exponential backoff with "equal jitter" (half fixed, half random). The
   * level grows with each failure and falls back to the start only after a quiet
   * period, so a cycle of "list works, watch fails at once" still slows down.
   */
  private backoffMs(e: unknown): number {
    const initial = this.opts.backoffInitialMs ?? DEFAULT_BACKOFF_INITIAL_MS;
    const max = this.opts.backoffMaxMs ?? DEFAULT_BACKOFF_MAX_MS;
    const now = Date.now();
    if (now - this.lastBackoffAt > (this.opts.backoffResetMs ?? DEFAULT_BACKOFF_RESET_MS)) {
      this.backoffLevel = 0;
    }
    this.lastBackoffAt = now;
    const exp = Math.min(max, initial * 2 ** Math.min(30, this.backoffLevel++));
    let delay = exp / 2 + Math.random() * (exp / 2);
    const retryAfter = (e as ApiError | undefined)?.status?.details?.retryAfterSeconds;
    if (isTooManyRequests(e) && typeof retryAfter === "number") {
      delay = Math.max(delay, Math.min(max, retryAfter * 1000));
    }
    return delay;
  }

  private async list(mode: ListMode, signal: AbortSignal): Promise<void> {
    const rv = this.state.resourceVersion;
    const listOpts = {
      namespace: this.opts.namespace,
      labelSelector: this.opts.labelSelector,
      fieldSelector: this.opts.fieldSelector,
      metadataOnly: this.opts.metadataOnly,
      limit: this.opts.pageSize ?? DEFAULT_LIST_PAGE_SIZE,
      signal,
      ...(mode === "any"
        ? { resourceVersion: "0" }
        : mode === "notOlderThan" && rv
          ? { resourceVersion: rv, resourceVersionMatch: "NotOlderThan" as const }
          : {}),
    };
    const list = await this.client.listAll<KubeObject>(this.type, listOpts);
    const transform = this.opts.transform;
    const items = transform ? list.items.map(transform) : (list.items as T[]);
    const listRv = list.metadata.resourceVersion ?? "";
    if (this.listed) this.state.relists++;
    this.listed = true;
    this.sink.replace(items, listRv);
    this.state.resourceVersion = listRv;
    this.state.lastActivity = Date.now();
    this.state.failures = 0;
    this.log.debug(
      { kind: this.type.kind, mode, items: items.length, resourceVersion: listRv },
      `${this.type.kind} listed`,
    );
  }

  /**
   * One watch, to its end: "expired" on 410, "ended" when the server ended it in the
   * normal way. Throws when it fails, or when it ended at once without delivering
   * anything (WatchEndedEarlyError), so that such a server is backed off from.
   */
  private async watch(signal: AbortSignal): Promise<"expired" | "ended"> {
    const min = this.opts.watchTimeoutMinSeconds ?? DEFAULT_WATCH_TIMEOUT_MIN_SECONDS;
    const max = this.opts.watchTimeoutMaxSeconds ?? DEFAULT_WATCH_TIMEOUT_MAX_SECONDS;
    const started = Date.now();
    let delivered = 0;
    const stream = this.client.watch<KubeObject>(this.type, {
      namespace: this.opts.namespace,
      labelSelector: this.opts.labelSelector,
      fieldSelector: this.opts.fieldSelector,
      metadataOnly: this.opts.metadataOnly,
      resourceVersion: this.state.resourceVersion,
      allowWatchBookmarks: true,
      timeoutSeconds: randomBetween(min, max),
      idleTimeoutMs: this.opts.idleDeadlineMs ?? DEFAULT_WATCH_IDLE_DEADLINE_MS,
      onOpen: () => {
        this.state.watching = true;
      },
      signal,
    });
    const transform = this.opts.transform;
    try {
      for await (const ev of stream) {
        this.state.lastActivity = Date.now();
        if (ev.type === "ERROR") {
          if (isGoneStatus(ev.object)) return "expired";
          throw new ApiError(ev.object, `watch ${this.type.kind}`);
        }
        if (delivered++ === 0) {
          this.state.failures = 0;
          this.expiredInARow = 0;
        }
        const rv = ev.object.metadata?.resourceVersion ?? "";
        if (ev.type === "BOOKMARK") {
          if (rv) {
            this.state.resourceVersion = rv;
            this.sink.bookmark(rv);
          }
          continue;
        }
        this.sink.apply(ev.type, transform ? transform(ev.object) : (ev.object as T));
        if (rv) this.state.resourceVersion = rv;
      }
    } catch (e) {
      if ((e as { code?: string | undefined }).code === "WATCH_IDLE") this.state.idleRestarts++;
      throw e;
    } finally {
      this.state.watching = false;
      stream.close();
      if (!signal.aborted) this.state.rewatches++;
    }
    if (delivered === 0 && Date.now() - started < MIN_HEALTHY_WATCH_MS && !signal.aborted) {
      throw new WatchEndedEarlyError(
        `the ${this.type.kind} watch ended after ${Date.now() - started} ms without delivering anything`,
      );
    }
    if (delivered > 0) this.state.failures = 0;
    return "ended";
  }
}

/** A watch the server ended at once, without an event: a failure, backed off like one. */
export class WatchEndedEarlyError extends Error {
  override name = "WatchEndedEarlyError";
  readonly code = "WATCH_ENDED_EARLY";
}

function isGoneStatus(s: Status): boolean {
  return s.code === 410 || s.reason === "Expired" || s.reason === "Gone";
}

/** A connection-level end of a watch (drop, idle deadline, bad framing): resume, no re-list. */
function isWatchDrop(e: unknown): boolean {
  const code = (e as { code?: unknown | undefined } | null)?.code;
  return (
    code === "WATCH_IDLE" ||
    code === "WATCH_ENDED_EARLY" ||
    code === "WATCH_DECODE" ||
    code === "ECONNRESET" ||
    code === "ERR_STREAM_PREMATURE_CLOSE" ||
    code === "UND_ERR_SOCKET"
  );
}

/** Kubernetes answers a read newer than its cache with 504 and cause ResourceVersionTooLarge. */
function isResourceVersionTooLarge(e: unknown): boolean {
  if (!(e instanceof ApiError)) return false;
  if (e.status.details?.causes?.some((c) => c.reason === "ResourceVersionTooLarge")) return true;
  return isServerError(e) && /too large resource version/i.test(e.message);
}
