/**
 * A watch as a stream of typed events. The API server writes one JSON object per
 * event ({"type": ..., "object": ...}), normally newline-terminated, over a chunked
 * HTTP response; chunk boundaries fall anywhere (inside a string, inside a UTF-8
 * character), so events are cut out of the byte stream by a small JSON scanner that
 * does not rely on newlines at all.
 */
import type { Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import type { KubeObject, Status } from "@setpoint/api";

/** One change seen by a watch. ERROR carries the server's Status (410 Expired: re-list). */
export type WatchEvent<T extends KubeObject = KubeObject> =
  | { type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK"; object: T }
  | { type: "ERROR"; object: Status };

/** The event types a watch may carry. */
export const WATCH_EVENT_TYPES = new Set(["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]);

/** Largest single event accepted, in UTF-16 code units (Kubernetes objects stay under ~1.5 MB). */
export const MAX_WATCH_EVENT_CHARS = 16 * 1024 * 1024;

/** Events buffered ahead of a slow consumer before the socket is paused. */
export const WATCH_BUFFER_HIGH_WATER = 1024;

/** The watch's byte stream is not a sequence of JSON watch events. */
export class WatchDecodeError extends Error {
  override name = "WatchDecodeError";
  readonly code = "WATCH_DECODE";
}

/** No bytes arrived for longer than the idle deadline: the connection is presumed dead. */
export class WatchIdleError extends Error {
  override name = "WatchIdleError";
  readonly code = "WATCH_IDLE";
}

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

function isWhitespace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/**
 * Cuts a text stream into top-level JSON objects, whatever the chunking and
 * whether or not objects are separated by newlines. Scanning resumes where the
 * previous chunk stopped, so each character is looked at once.
 */
export class JsonObjectSplitter {
  private buf = "";
  private pos = 0;
  private start = -1;
  private depth = 0;
  private inString = false;
  private escaped = false;
  private broken: WatchDecodeError | undefined;

  constructor(private readonly maxChars: number = MAX_WATCH_EVENT_CHARS) {}

  /**
   * Feeds text; returns the objects completed by it (parsed). Throws
   * WatchDecodeError on malformed input, unless objects completed before the fault:
   * then those are returned and the error is thrown by the next call.
   */
  push(text: string): unknown[] {
    if (this.broken) throw this.broken;
    const out: unknown[] = [];
    try {
      return this.scan(text, out);
    } catch (e) {
      if (!(e instanceof WatchDecodeError) || out.length === 0) throw e;
      this.broken = e;
      return out;
    }
  }

  /** The malformed input seen after the objects the last push returned, if any. */
  get fault(): WatchDecodeError | undefined {
    return this.broken;
  }

  private scan(text: string, out: unknown[]): unknown[] {
    this.buf += text;
    const buf = this.buf;
    let i = this.pos;
    if (this.start < 0) i = this.wholeLines(buf, i, out);
    for (; i < buf.length; i++) {
      const c = buf.charCodeAt(i);
      if (this.start < 0) {
        if (isWhitespace(c)) continue;
        if (c !== OPEN_BRACE) {
          throw new WatchDecodeError(
            `unexpected ${JSON.stringify(buf[i])} between watch events: ${JSON.stringify(buf.slice(i, i + 40))}`,
          );
        }
        this.start = i;
        this.depth = 1;
        continue;
      }
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === BACKSLASH) this.escaped = true;
        else if (c === QUOTE) this.inString = false;
        continue;
      }
      if (c === QUOTE) this.inString = true;
      else if (c === OPEN_BRACE || c === OPEN_BRACKET) this.depth++;
      else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        this.depth--;
        if (this.depth === 0) {
          const piece = buf.slice(this.start, i + 1);
          this.start = -1;
          try {
            out.push(JSON.parse(piece));
          } catch (e) {
            throw new WatchDecodeError(`malformed watch event: ${(e as Error).message}`);
          }
          // Between objects again: whole lines that follow take the fast path
          // (the loop's i++ moves to where the character scan must go on).
          i = this.wholeLines(buf, i + 1, out) - 1;
        }
      }
    }
    // Keep only the unfinished object (if any).
    if (this.start < 0) {
      this.buf = "";
      this.pos = 0;
    } else {
      this.buf = buf.slice(this.start);
      this.pos = this.buf.length;
      this.start = 0;
      if (this.buf.length > this.maxChars) {
        throw new WatchDecodeError(`a watch event exceeds ${this.maxChars} characters`);
      }
    }
    return out;
  }

  /**
   * The fast path for newline-delimited objects (what apiservers send): from
   * `i`, between objects, parses each complete line that holds one object
   * whole; returns where the character scan must go on (the first line that
   * is not such a line, or the unfinished last one), which sees anything else.
   */
  private wholeLines(buf: string, i: number, out: unknown[]): number {
    for (;;) {
      const nl = buf.indexOf("\n", i);
      if (nl < 0) return i;
      const line = buf.slice(i, nl).trim();
      if (line.length > 0) {
        if (line.charCodeAt(0) !== OPEN_BRACE || line.charCodeAt(line.length - 1) !== CLOSE_BRACE) {
          return i;
        }
        let v: unknown;
        try {
          v = JSON.parse(line);
        } catch {
          return i;
        }
        out.push(v);
      }
      i = nl + 1;
    }
  }

  /** Characters of an unfinished object held back. */
  get pending(): number {
    return this.start < 0 ? 0 : this.buf.length;
  }
}

/** Checks the envelope of one decoded event. */
export function toWatchEvent<T extends KubeObject>(v: unknown): WatchEvent<T> {
  const e = v as { type?: unknown | undefined; object?: unknown | undefined } | null;
  if (typeof e?.type !== "string" || !WATCH_EVENT_TYPES.has(e.type)) {
    throw new WatchDecodeError(`watch event with unknown type ${JSON.stringify(e?.type)}`);
  }
  if (typeof e.object !== "object" || e.object === null || Array.isArray(e.object)) {
    throw new WatchDecodeError(`watch event ${e.type} without an object`);
  }
  return v as WatchEvent<T>;
}

export interface WatchStreamOptions<T extends KubeObject> {
  /** Fail with WatchIdleError when no bytes arrive for this long (0 or unset: never). */
  idleTimeoutMs?: number | undefined;
  /** Applied to the object of every non-ERROR event (e.g. strip fields). */
  transform?: ((obj: KubeObject) => T) | undefined;
  /** Called once the server has answered 2xx and the stream is open. */
  onOpen?: (() => void) | undefined;
}

/**
 * A running watch: iterate it with `for await`. Iteration ends when the server
 * ends the watch (its timeout) or `close()` is called; it throws the ApiError of a
 * failed request, a network error, WatchDecodeError, or WatchIdleError. Breaking out
 * of the loop closes the watch.
 */
export class WatchStream<T extends KubeObject = KubeObject>
  implements AsyncIterable<WatchEvent<T>>
{
  private readonly abort = new AbortController();
  private readonly queue: WatchEvent<T>[] = [];
  private wake: (() => void) | undefined;
  private ended = false;
  private failure: unknown;
  private body: Readable | undefined;
  private paused = false;
  private idleTimer: NodeJS.Timeout | undefined;
  private readonly splitter = new JsonObjectSplitter();
  private readonly decoder = new StringDecoder("utf8");
  private received = 0;

  /**
   * @param open starts the request and resolves with the response body once the
   * server answered 2xx (rejects with the error otherwise); it must honour `signal`.
   */
  constructor(
    open: (signal: AbortSignal) => Promise<Readable>,
    private readonly opts: WatchStreamOptions<T> = {},
  ) {
    this.armIdle();
    open(this.abort.signal).then(
      (body) => this.attach(body),
      (e) => this.finish(e),
    );
  }

  /** Stops the watch; iteration ends without an error. Safe to call more than once. */
  close(): void {
    if (this.abort.signal.aborted) return;
    this.abort.abort();
    this.finish(undefined);
  }

  /** Whether the watch has ended (closed, finished, or failed). */
  get done(): boolean {
    return this.ended;
  }

  /** Events decoded so far. */
  get eventsReceived(): number {
    return this.received;
  }

  private armIdle(): void {
    const ms = this.opts.idleTimeoutMs;
    if (!ms || this.ended) return;
    if (this.idleTimer) this.idleTimer.refresh();
    else {
      this.idleTimer = setTimeout(() => {
        this.finish(new WatchIdleError(`watch received nothing for ${ms} ms`));
      }, ms);
      this.idleTimer.unref?.();
    }
  }

  private attach(body: Readable): void {
    if (this.ended) {
      body.destroy();
      return;
    }
    this.body = body;
    this.opts.onOpen?.();
    body.on("data", (chunk: Buffer) => this.onData(chunk));
    body.on("end", () => {
      const rest = this.decoder.end();
      if (rest) this.onText(rest);
      if (!this.ended && this.splitter.pending > 0) {
        this.finish(new WatchDecodeError("the watch ended in the middle of an event"));
      } else this.finish(undefined);
    });
    body.on("error", (e) => this.finish(e));
    body.on("close", () => {
      if (!this.ended) this.finish(prematureClose());
    });
  }

  private onData(chunk: Buffer): void {
    if (this.ended) return;
    this.armIdle();
    this.onText(this.decoder.write(chunk));
  }

  private onText(text: string): void {
    let values: unknown[];
    try {
      values = this.splitter.push(text);
    } catch (e) {
      this.finish(e);
      return;
    }
    // Events completed before a malformed piece are delivered; the fault ends the stream after them.
    const fault = this.splitter.fault;
    for (const v of values) {
      let ev: WatchEvent<T>;
      try {
        ev = toWatchEvent<T>(v);
        if (ev.type !== "ERROR" && this.opts.transform) {
          ev = { type: ev.type, object: this.opts.transform(ev.object) };
        }
      } catch (e) {
        this.finish(e);
        return;
      }
      this.received++;
      this.queue.push(ev);
    }
    if (fault !== undefined) {
      this.finish(fault);
      return;
    }
    if (this.queue.length >= WATCH_BUFFER_HIGH_WATER && this.body && !this.paused) {
      this.paused = true;
      this.body.pause();
    }
    this.signal();
  }

  private finish(err: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.failure = err;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    if (!this.abort.signal.aborted) this.abort.abort();
    this.body?.destroy();
    this.signal();
  }

  private signal(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<WatchEvent<T>> {
    try {
      for (;;) {
        const ev = this.queue.shift();
        if (ev) {
          if (this.paused && this.queue.length < WATCH_BUFFER_HIGH_WATER / 2) {
            this.paused = false;
            this.body?.resume();
          }
          yield ev;
          continue;
        }
        if (this.ended) {
          if (this.failure !== undefined) throw this.failure;
          return;
        }
        await new Promise<void>((r) => {
          this.wake = r;
        });
      }
    } finally {
      this.close();
    }
  }
}

function prematureClose(): Error {
  const e = new Error("the watch connection closed before the response ended") as Error & {
    code: string;
  };
  e.code = "ERR_STREAM_PREMATURE_CLOSE";
  return e;
}
