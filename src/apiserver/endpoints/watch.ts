/**
 * Streaming watch responses: `Transfer-Encoding: chunked` JSON lines of
 * `{"type":..., "object":...}`, or for protobuf clients of the built-in kinds
 * length-prefixed meta/v1 WatchEvent frames (`...protobuf;stream=watch`), headers
 * flushed at once. A watch is fed by its
 * type's watch cache; it starts
 *
 * - at "now" with the current state as ADDED events (resourceVersion unset or "0"),
 * - exactly after resourceVersion N (events from the cache's window; an ERROR
 *   event with a 410 Expired Status when N is older than the window),
 * - with sendInitialEvents=true: the state not older than N as ADDED events, then
 *   a BOOKMARK annotated `k8s.io/initial-events-end: "true"`.
 *
 * Initial ADDED events are streamed a chunk at a time with backpressure (see
 * streaming/): the cache's state, or, when the cache has not reached N yet, the
 * state read from storage a page at a time, all pages at one revision.
 *
 * Watches are selector-aware (an object that stops matching is sent as DELETED,
 * one that starts matching as ADDED), send periodic BOOKMARKs when asked, end
 * after timeoutSeconds, and are cut off (their response ended) when the client
 * stops reading and more than a bounded amount of output is waiting.
 */
import type { KubeObject } from "@setpoint/api";
import { errors, type Status } from "@setpoint/api";
import { storageVersion } from "../../registry/types.ts";
import {
  type CacheEntry,
  type CacheEvent,
  type CacheWatcher,
  type EventSide,
  type EventType,
  entryMatches,
  listsRaw,
  type ObjectFilter,
  type SharedChunks,
} from "../store/index.ts";
import { tooLargeResourceVersion } from "../store/store-errors.ts";
import {
  bytesChunks,
  chunkedFrame,
  ResponseStream,
  textChunks,
  writeChunk,
} from "../streaming/index.ts";
import { convertToVersion, metadataText, parseResourceVersion } from "../wire/codec.ts";
import { encodeProtobufWatchEvent } from "../wire/protobuf/index.ts";
import { partialMetadata, type Renderer, tableOf } from "../wire/render.ts";
import { setWarnings } from "../wire/response.ts";
import type { RequestScope } from "./context.ts";
import { filterFor } from "./list.ts";
import type { ListOptions } from "./list-options.ts";
import { firstPageLimit, type ListPage, streamOptions } from "./list-stream.ts";

/** The annotation that marks the bookmark ending a watch's initial events. */
export const INITIAL_EVENTS_END_ANNOTATION = "k8s.io/initial-events-end";

/**
 * How long a watch with sendInitialEvents and resourceVersion N waits for the cache
 * to apply N before reading its initial state from storage instead, in ms.
 */
export const WATCH_FRESHNESS_WAIT_MS = 100;

const EVENT_TYPES: readonly EventType[] = ["ADDED", "MODIFIED", "DELETED"];

/** Watch lines are written one after another, with nothing around them. */
const LINES = { head: "", tail: "", separator: "", before: "", after: "" };

/**
 * Renders watch event objects in one representation, caching per event. A line
 * is a JSON line, or in protobuf a length-prefixed WatchEvent frame held as a
 * latin1 string (one character per byte), written with that encoding.
 */
class EventRenderer {
  readonly raw: boolean;
  /**
   * JSON PartialObjectMetadata: the head of an event's object up to its
   * metadata, which is the metadata's text in the event's JSON (see #partialLine).
   */
  readonly #partialHead: string | undefined;
  readonly table: boolean;
  readonly protobuf: boolean;
  /** How lines are turned into bytes. */
  readonly encoding: BufferEncoding;
  readonly key: string;
  /** The event cache keys of this representation, by (type, side, without table headers). */
  readonly #lineKeys: string[] = [];

  constructor(readonly r: Renderer) {
    this.protobuf = r.output.mediaType === "application/vnd.kubernetes.protobuf";
    this.encoding = this.protobuf ? "latin1" : "utf8";
    this.raw =
      !this.protobuf && r.output.kind === "object" && r.version.name === storageVersion(r.def).name;
    this.table = r.output.kind === "table";
    this.#partialHead =
      !this.protobuf && r.output.kind === "partial"
        ? `"object":${JSON.stringify(partialMetadata({ metadata: {} } as KubeObject, r.output.metaVersion ?? "v1")).slice(0, -3)}`
        : undefined;
    this.key = `${this.protobuf ? "pb:" : ""}${r.output.kind}:${r.output.metaVersion ?? ""}:${r.version.name}:${r.includeObject}`;
    for (const type of EVENT_TYPES) {
      for (const side of ["cur", "prev"]) {
        for (const nh of ["", "nh"]) this.#lineKeys.push(`${this.key}:${nh}|${type}|${side}`);
      }
    }
  }

  /** The body sent for `obj` (for objects not from a cache event). */
  #body(obj: KubeObject, noHeaders: boolean): unknown {
    const versioned = convertToVersion(obj, this.r.def, this.r.version.name);
    switch (this.r.output.kind) {
      case "partial":
        return partialMetadata(versioned, this.r.output.metaVersion ?? "v1");
      case "table":
        return tableOf(this.r, [versioned], undefined, noHeaders);
      default:
        return versioned;
    }
  }

  /** The line of an event of `type` about `obj` (a stored object, or a bookmark's or Status). */
  line(type: string, obj: KubeObject, noHeaders: boolean, rendered = false): string {
    const body = rendered ? obj : this.#body(obj, noHeaders);
    if (this.protobuf) {
      const frame = encodeProtobufWatchEvent(type, body);
      if (!frame) throw new Error(`no protobuf encoding of ${String(obj.kind)}`);
      return frame.toString("latin1");
    }
    return `${JSON.stringify({ type, object: body })}\n`;
  }

  /** The line for an entry of the cache's current state. */
  entryLine(type: EventType, e: CacheEntry, noHeaders: boolean): string {
    if (this.raw) return `{"type":"${type}","object":${e.json}}\n`;
    return this.line(type, JSON.parse(e.json) as KubeObject, noHeaders);
  }

  /**
   * The JSON line of a PartialObjectMetadata event about an event's new state:
   * the metadata's text in the event's JSON as it is, not parsed with the rest of
   * the object and serialized again (the same JSON). Undefined for other
   * representations, and for JSON not laid out as storage writes it.
   */
  #partialLine(type: EventType, ev: CacheEvent): string | undefined {
    if (this.#partialHead === undefined) return undefined;
    const metadata = metadataText(ev.json("cur"));
    if (metadata === undefined) return undefined;
    return `{"type":"${type}",${this.#partialHead}${metadata}}}\n`;
  }

  /** The line for one side of a cache event (computed once per event and representation). */
  eventLine(ev: CacheEvent, type: EventType, side: EventSide, noHeaders: boolean): string {
    const index =
      (type === "ADDED" ? 0 : type === "MODIFIED" ? 4 : 8) +
      (side === "cur" ? 0 : 2) +
      (this.table && noHeaders ? 1 : 0);
    const key = this.#lineKeys[index];
    let line = ev.cachedRendering(key);
    if (line === undefined) {
      line = this.raw
        ? `{"type":"${type}","object":${ev.json(side)}}\n`
        : ((side === "cur" ? this.#partialLine(type, ev) : undefined) ??
          this.line(type, side === "cur" ? ev.curObject() : ev.prevObject(), noHeaders));
      ev.keepRendering(key, line);
    }
    return line;
  }
}

/** What a watcher with filter `f` is sent for an event: its type and side, or null. */
function selectEvent(f: ObjectFilter, ev: CacheEvent): { type: EventType; side: EventSide } | null {
  if (ev.type === "ADDED") return entryMatches(f, ev.cur!) ? ADDED_CUR : null;
  if (ev.type === "DELETED") return entryMatches(f, ev.prev!) ? DELETED_PREV : null;
  const now = entryMatches(f, ev.cur!);
  const before = ev.prev !== null && entryMatches(f, ev.prev);
  if (now && before) return MODIFIED_CUR;
  if (now) return ADDED_CUR;
  if (before) return DELETED_PREV;
  return null;
}

const ADDED_CUR = { type: "ADDED", side: "cur" } as const;
const MODIFIED_CUR = { type: "MODIFIED", side: "cur" } as const;
const DELETED_PREV = { type: "DELETED", side: "prev" } as const;

/**
 * The key under which watchers share their output in a flush: equal for watchers
 * sent exactly the same lines for the same events (same representation, same
 * selection); undefined for Table output, whose first object carries the column
 * headers and later ones do not, per watcher.
 */
function shareKeyOf(renderer: EventRenderer, filter: ObjectFilter): string | undefined {
  if (renderer.table) return undefined;
  return `${renderer.key}|${JSON.stringify([filter.namespace ?? null, filter.labels, filter.fields])}`;
}

/** One client watch, writing to its HTTP response. */
class HttpWatcher implements CacheWatcher {
  startRev: number;
  #pending: string[] = [];
  #headersSent = false;
  #closed = false;
  #timers: NodeJS.Timeout[] = [];
  #lastRev: number;
  #firstObjectSent = false;
  #onClose: (() => void)[] = [];
  /**
   * Set while the initial events are streamed: live events wait in #pending (and
   * count against the slow-watcher bound) until they are all out.
   */
  #initial = false;
  /** Bytes of the lines in #pending (counted while the initial events stream). */
  #pendingBytes = 0;

  constructor(
    readonly scope: RequestScope,
    readonly renderer: EventRenderer,
    readonly filter: ObjectFilter,
    readonly bookmarks: boolean,
    startRev: number,
    readonly cacheRev: () => number,
  ) {
    this.startRev = startRev;
    this.#lastRev = startRev;
    this.shareKey = shareKeyOf(renderer, filter);
  }

  /** The key of the output this watcher shares with others alike (see shareKeyOf). */
  readonly shareKey: string | undefined;

  get closed(): boolean {
    return this.#closed;
  }

  /** Runs `fn` once when the watch ends. */
  onClose(fn: () => void): void {
    this.#onClose.push(fn);
  }

  /** Sends the response headers and flushes them at once. */
  begin(): void {
    const res = this.scope.res;
    res.statusCode = 200;
    res.setHeader(
      "Content-Type",
      this.renderer.protobuf ? this.renderer.r.output.contentType : "application/json",
    );
    res.setHeader("Transfer-Encoding", "chunked");
    res.setHeader("Cache-Control", "no-cache, private");
    // Warnings reach the client with the headers of the stream.
    setWarnings(res, this.scope.warnings);
    res.flushHeaders();
    this.#headersSent = true;
  }

  #noHeaders(): boolean {
    const first = !this.#firstObjectSent;
    this.#firstObjectSent = true;
    return !first;
  }

  /** Queues a BOOKMARK at `rev` (annotated when it ends the initial events). */
  sendBookmark(rev: number, initialEventsEnd = false): void {
    this.#pending.push(this.#bookmarkLine(rev, initialEventsEnd));
  }

  #bookmarkLine(rev: number, initialEventsEnd: boolean): string {
    const r = this.renderer.r;
    const metadata: Record<string, unknown> = { resourceVersion: String(rev) };
    if (initialEventsEnd) metadata.annotations = { [INITIAL_EVENTS_END_ANNOTATION]: "true" };
    const obj = {
      kind: r.def.names.kind,
      apiVersion: r.def.group ? `${r.def.group}/${r.version.name}` : r.version.name,
      metadata,
    };
    return this.renderer.line("BOOKMARK", obj, false, true);
  }

  /** Writes an ERROR event and ends the watch. */
  fail(status: Status): void {
    const obj = { ...status, kind: "Status", apiVersion: "v1", metadata: status.metadata ?? {} };
    this.#pending.push(this.renderer.line("ERROR", obj as unknown as KubeObject, false, true));
    this.close();
  }

  deliver(ev: CacheEvent): void {
    if (this.#closed) return;
    try {
      if (ev.rev > this.#lastRev) this.#lastRev = ev.rev;
      const sel = selectEvent(this.filter, ev);
      if (sel === null) return;
      const table = this.renderer.table;
      const line = this.renderer.eventLine(
        ev,
        sel.type,
        sel.side,
        table ? this.#noHeaders() : false,
      );
      this.#pending.push(line);
      if (this.#initial) this.#queued(line.length);
    } catch (err) {
      this.scope.ctx.logger?.error({ err }, "watch event could not be rendered");
      this.fail(errors.internal("watch event could not be rendered").status);
    }
  }

  deliverBatch(events: readonly CacheEvent[], shared: SharedChunks): void {
    if (this.#closed) return;
    let from = 0;
    while (from < events.length && events[from].rev <= this.startRev) from++;
    if (this.#initial) {
      for (let i = from; i < events.length; i++) this.deliver(events[i]);
      return;
    }
    if (from === events.length) {
      this.flush();
      return;
    }
    const shareKey = this.shareKey;
    if (shareKey !== undefined && this.#pending.length === 0 && this.#headersSent) {
      // Watchers alike share one chunk: lines joined, encoded and framed once per flush.
      const frame = shared.get(from === 0 ? shareKey : `${shareKey}|${from}`, () => {
        const text = this.#linesOf(events, from);
        return text === null ? null : chunkedFrame(text, this.renderer.encoding);
      });
      if (frame !== undefined) {
        const last = events[events.length - 1].rev;
        if (last > this.#lastRev) this.#lastRev = last;
        if (frame !== null) this.#write(frame, true);
        return;
      }
    }
    for (let i = from; i < events.length; i++) this.deliver(events[i]);
    this.flush();
  }

  /** The text sent for `events[from..]` (null when none is selected); throws if one cannot be rendered. */
  #linesOf(events: readonly CacheEvent[], from: number): string | null {
    const lines: string[] = [];
    for (let i = from; i < events.length; i++) {
      const sel = selectEvent(this.filter, events[i]);
      if (sel !== null) lines.push(this.renderer.eventLine(events[i], sel.type, sel.side, false));
    }
    if (lines.length === 0) return null;
    return lines.length === 1 ? lines[0] : lines.join("");
  }

  /**
   * Counts a line queued while the initial events stream: a watcher whose queue
   * grows past the slow-watcher bound is cut off, as one that stops reading live
   * events is.
   */
  #queued(bytes: number): void {
    this.#pendingBytes += bytes;
    const limit = this.scope.ctx.limits.slowWatcherBytes;
    if (this.#pendingBytes + this.scope.res.writableLength > limit) {
      this.scope.ctx.logger?.warn(
        { queued: this.#pendingBytes, resource: this.scope.def.names.plural },
        "watch client is not taking its initial events; ending its watch",
      );
      this.close(true);
    }
  }

  /**
   * Streams the initial events: the ADDED lines of `entries` (the cache's state
   * at startRev, already selected), chunk by chunk with backpressure (see
   * streaming/), then (with `endBookmark`) the bookmark ending them; live events
   * that arrived meanwhile follow. A client that takes nothing for the stall time
   * is cut off.
   */
  async streamInitial(entries: readonly CacheEntry[], endBookmark: boolean): Promise<void> {
    this.#initial = true;
    let produce: (room: number) => string | Buffer | null | Promise<string | Buffer | null>;
    if (this.renderer.raw) {
      produce = bytesChunks(entries, {
        ...LINES,
        before: '{"type":"ADDED","object":',
        after: "}\n",
      });
    } else {
      let at = 0;
      produce = textChunks((room) => {
        if (at >= entries.length) return null;
        const lines: string[] = [];
        let bytes = 0;
        while (at < entries.length && (lines.length === 0 || bytes < room)) {
          const line = this.renderer.entryLine("ADDED", entries[at++], this.#noHeaders());
          lines.push(line);
          bytes += line.length;
        }
        return lines;
      }, LINES);
    }
    for (const e of entries) if (e.rev > this.#lastRev) this.#lastRev = e.rev;
    await this.#pumpInitial(produce, endBookmark ? this.startRev : undefined);
  }

  /**
   * Streams initial events read from storage page by page, as streamInitial does
   * the cache's: `first` is the first page (read before the response began),
   * `next` reads the page after a continue token, of at most `limit` objects, at
   * the first page's revision `rev`; then the bookmark at `rev` ending them.
   */
  async streamInitialPages(
    first: ListPage,
    next: (token: string, limit: number) => Promise<ListPage>,
    rev: number,
    replayed: readonly CacheEvent[],
  ): Promise<void> {
    this.#initial = true;
    for (const ev of replayed) this.deliver(ev);
    const lines = (page: ListPage): string[] =>
      page.json
        ? page.json.map((json) => `{"type":"ADDED","object":${json}}\n`)
        : page.items.map((obj) => this.renderer.line("ADDED", obj, this.#noHeaders()));
    let pending: string[] | null = lines(first);
    let bytes = 0;
    for (const line of pending) bytes += line.length;
    const average = Math.max(1, bytes / Math.max(1, pending.length));
    let token = first.continue;
    if (rev > this.#lastRev) this.#lastRev = rev;
    const produce = textChunks(async (room) => {
      if (pending !== null) {
        const out = pending;
        pending = null;
        return out;
      }
      if (token === undefined) return null;
      const limit = Math.min(
        this.scope.ctx.limits.storagePageSize,
        Math.max(1, Math.ceil(room / average)),
      );
      const page = await next(token, limit);
      token = page.continue;
      return lines(page);
    }, LINES);
    try {
      await this.#pumpInitial(produce, rev);
    } catch (err) {
      // Storage failed part way (its revision compacted, say): the state sent is not whole.
      this.scope.ctx.logger?.warn(
        { err },
        "a watch's initial events failed part way; its watch is cut",
      );
      this.close(true);
      this.scope.res.destroy();
    }
  }

  /**
   * Writes what `produce` makes, with backpressure, while live events wait in
   * #pending; then the bookmark at `bookmarkRev` (when given) and what waited.
   */
  async #pumpInitial(
    produce: (room: number) => string | Buffer | null | Promise<string | Buffer | null>,
    bookmarkRev: number | undefined,
  ): Promise<void> {
    this.#initial = true;
    const stream = new ResponseStream(
      this.scope.res,
      streamOptions(this.scope, () => {
        this.scope.ctx.logger?.warn(
          { resource: this.scope.def.names.plural },
          "watch client stopped taking its initial events; ending its watch",
        );
        this.close(true);
        this.scope.res.destroy();
      }),
    );
    if (this.renderer.protobuf) {
      // Protobuf frames are kept as latin1 strings: sent as the bytes they stand for.
      const text = produce;
      produce = async (room) => {
        const chunk = await text(room);
        return typeof chunk === "string" ? Buffer.from(chunk, "latin1") : chunk;
      };
    }
    const complete = await stream.pump(produce);
    if (!complete || this.#closed) return;
    this.#initial = false;
    this.#pendingBytes = 0;
    if (bookmarkRev !== undefined) this.#pending.unshift(this.#bookmarkLine(bookmarkRev, true));
    this.flush();
  }

  flush(): void {
    if (this.#initial || this.#pending.length === 0 || !this.#headersSent) return;
    const chunk = this.#pending.length === 1 ? this.#pending[0] : this.#pending.join("");
    this.#pending = [];
    this.#write(chunk);
  }

  /**
   * Writes a chunk of output (`framed`: a frame made by chunkedFrame), unless the
   * client stopped reading (then the watch is cut off).
   */
  #write(chunk: string | Buffer, framed = false): void {
    const res = this.scope.res;
    if (res.writableEnded || res.destroyed) {
      this.#pending = [];
      return;
    }
    if (!this.#closed && res.writableLength > this.scope.ctx.limits.slowWatcherBytes) {
      // What was written before is still not taken: the client is not reading.
      this.scope.ctx.logger?.warn(
        { buffered: res.writableLength, resource: this.scope.def.names.plural },
        "watch client is not reading; ending its watch",
      );
      this.#pending = [];
      this.close(true);
      return;
    }
    if (typeof chunk === "string") res.write(chunk, this.renderer.encoding);
    else if (framed) writeChunk(res, chunk);
    else res.write(chunk);
  }

  /** Starts the bookmark and timeout timers. */
  startTimers(timeoutMs: number): void {
    if (this.bookmarks) {
      const t = setInterval(() => {
        if (this.#initial) return;
        this.sendBookmark(Math.max(this.#lastRev, this.cacheRev(), this.startRev));
        this.flush();
      }, this.scope.ctx.limits.bookmarkIntervalMs);
      t.unref();
      this.#timers.push(t);
    }
    const t = setTimeout(() => this.close(), timeoutMs);
    t.unref();
    this.#timers.push(t);
  }

  terminate(): void {
    this.close();
  }

  /**
   * Ends the watch: pending events are written and the response is ended properly.
   * A client that does not take what is buffered within the drain time loses its
   * connection; one cut off for not reading (`cutOff`) loses it after that time in
   * any case, so its buffers are freed.
   */
  close(cutOff = false): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers = [];
    const res = this.scope.res;
    if (!res.writableEnded && !res.destroyed) {
      if (!this.#headersSent) this.begin();
      // Events after a partly sent initial state would describe a state the client never saw.
      const rest = this.#initial ? "" : this.#pending.join("");
      this.#pending = [];
      this.#pendingBytes = 0;
      res.end(rest, this.renderer.encoding);
      if (cutOff || res.writableLength > 0) {
        const t = setTimeout(() => {
          if (cutOff || !res.writableFinished) res.destroy();
        }, this.scope.ctx.limits.watchDrainMs);
        t.unref();
        if (!cutOff) res.once("finish", () => clearTimeout(t));
        res.once("close", () => clearTimeout(t));
      }
    }
    for (const fn of this.#onClose.splice(0)) fn();
  }
}

function timeoutMs(scope: RequestScope, opts: ListOptions): number {
  const { watchTimeoutSeconds, maxWatchTimeoutSeconds } = scope.ctx.limits;
  if (opts.timeoutSeconds !== undefined) {
    return Math.min(opts.timeoutSeconds, maxWatchTimeoutSeconds) * 1000;
  }
  return Math.floor(watchTimeoutSeconds * (1 + Math.random()) * 1000);
}

/** Serves a watch request. */
export async function serveWatch(scope: RequestScope, opts: ListOptions): Promise<void> {
  const { ctx } = scope;
  if (ctx.watches.closed) throw errors.unavailable("the server is shutting down");
  const r = scope.renderer;
  const filter = filterFor(scope, opts);
  if (scope.name !== undefined) {
    filter.fields = {
      requirements: [
        ...filter.fields.requirements,
        { field: "metadata.name", operator: "Equals", value: scope.name },
      ],
    };
  }
  const cache = await scope.store.watchCache();
  const requested = parseResourceVersion(opts.resourceVersion === "0" ? "" : opts.resourceVersion);
  const renderer = new EventRenderer(r);
  const watcher = new HttpWatcher(
    scope,
    renderer,
    filter,
    opts.allowWatchBookmarks,
    0,
    () => cache.deliveredRev,
  );
  const prefix = scope.store.prefix;

  const initial = opts.sendInitialEvents ?? requested === undefined;
  if (opts.sendInitialEvents === true && requested !== undefined && requested > cache.rev) {
    // Not older than N, and the cache has not applied N yet: give it a moment.
    const caught = await cache.waitFor(requested, WATCH_FRESHNESS_WAIT_MS);
    if (!caught) {
      const current = await scope.store.currentRevision();
      if (requested > current) throw tooLargeResourceVersion(requested, current);
      // N belongs to other keys: read the initial state from storage a page at a
      // time (all at the first page's revision), then follow the cache.
      const raw = renderer.raw && listsRaw(scope.store, filter);
      const list = { ...opts, resourceVersion: "", continue: undefined };
      const first = await scope.store.list(
        { ...list, limit: firstPageLimit(scope) },
        filter,
        raw,
        false,
      );
      const rev = first.revision;
      watcher.begin();
      // Live events after `rev` wait for the initial ones (those the cache holds
      // already are replayed first, the rest are delivered as the cache applies them).
      const replay = cache.replaySince(rev);
      watcher.startRev = Math.max(rev, cache.rev);
      register(scope, cache, watcher, opts);
      await watcher.streamInitialPages(
        first,
        (token, limit) => scope.store.list({ ...list, limit, continue: token }, filter, raw, false),
        rev,
        replay.ok ? replay.events : [],
      );
      return;
    }
  }

  if (initial) {
    watcher.begin();
    const entries = cache.entries(prefix).filter((e) => entryMatches(filter, e));
    watcher.startRev = cache.rev;
    // Registered first: live events after the state's revision wait for the initial ones.
    register(scope, cache, watcher, opts);
    await watcher.streamInitial(entries, opts.sendInitialEvents === true);
    return;
  }

  const from = requested ?? cache.rev;
  const replay = cache.replaySince(from);
  watcher.begin();
  if (!replay.ok) {
    watcher.fail(errors.expired(`too old resource version: ${from} (${replay.oldest})`).status);
    return;
  }
  for (const ev of replay.events) watcher.deliver(ev);
  watcher.startRev = Math.max(from, cache.rev);
  register(scope, cache, watcher, opts);
  watcher.flush();
}

function register(
  scope: RequestScope,
  cache: { addWatcher(w: CacheWatcher): void; removeWatcher(w: CacheWatcher): void },
  watcher: HttpWatcher,
  opts: ListOptions,
): void {
  const { ctx, req, res } = scope;
  cache.addWatcher(watcher);
  ctx.watches.add(watcher);
  watcher.onClose(() => {
    cache.removeWatcher(watcher);
    ctx.watches.delete(watcher);
  });
  const end = () => watcher.close();
  req.once("close", end);
  res.once("close", end);
  watcher.startTimers(timeoutMs(scope, opts));
}
