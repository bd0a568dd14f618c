/**
 * One response written in chunks with backpressure: room for each chunk is
 * reserved in the global output budget before it is produced and given back once
 * the chunk was handed to the kernel; after a write the next chunk is produced
 * only when the socket drained (the client took what was sent) or, when the write
 * was taken at once, after a turn of the event loop, so other requests are served
 * between chunks. A client that takes nothing for `stallMs` while a chunk waits
 * is stalled: `onStall` runs (by default the response is destroyed).
 */
import type { ServerResponse } from "node:http";
import { setImmediate as nextTurn } from "node:timers/promises";
import type { OutputBudget } from "./output-budget.ts";

/** How a response is streamed. */
export interface StreamOptions {
  budget: OutputBudget;
  /** Bytes produced per chunk (a chunk ends after the item that reaches it). */
  chunkBytes: number;
  /** How long a client may take nothing before it counts as stalled, in ms. */
  stallMs: number;
  /** What a stall does (default: the response is destroyed). */
  onStall?: () => void;
}

/** Thrown by producers' callers when the response is gone. */
export class StreamStalledError extends Error {
  constructor() {
    super("the client stopped reading");
    this.name = "StreamStalledError";
  }
}

function byteLength(chunk: string | Buffer): number {
  return typeof chunk === "string" ? Buffer.byteLength(chunk) : chunk.length;
}

export class ResponseStream {
  /** Bytes of the budget this stream holds (reserved or written and not yet flushed). */
  #held = 0;
  /** Room reserved for the chunk being produced. */
  #reserved = 0;
  #closed = false;
  #stalled = false;

  constructor(
    readonly res: ServerResponse,
    readonly opts: StreamOptions,
  ) {
    if (res.destroyed) this.#closed = true;
    else res.once("close", () => this.#close());
  }

  /** Whether the response is gone (closed, destroyed or stalled). */
  get closed(): boolean {
    return this.#closed || this.#stalled || this.res.writableEnded;
  }

  /** Whether the client was found not reading. */
  get stalled(): boolean {
    return this.#stalled;
  }

  /** Bytes of the budget held by this stream. */
  get held(): number {
    return this.#held;
  }

  #close(): void {
    this.#closed = true;
    if (this.#held > 0) this.opts.budget.release(this.#held);
    this.#held = 0;
    this.#reserved = 0;
  }

  /** Waits for room for one chunk in the budget; false when the response is gone meanwhile. */
  async reserve(): Promise<boolean> {
    const bytes = this.opts.chunkBytes;
    const wait = this.opts.budget.reserve(bytes);
    if (wait) await wait;
    if (this.#closed) {
      this.opts.budget.release(bytes);
      return false;
    }
    this.#held += bytes;
    this.#reserved += bytes;
    return !this.#stalled;
  }

  /** Gives back the room reserved and not used (the producer had nothing more). */
  unreserve(): void {
    if (this.#reserved === 0) return;
    this.opts.budget.release(this.#reserved);
    this.#held -= this.#reserved;
    this.#reserved = 0;
  }

  /**
   * Writes a chunk produced in the room reserved; resolves when the next may be
   * produced, with false when the response is gone (closed or stalled).
   */
  async write(chunk: string | Buffer): Promise<boolean> {
    if (this.closed) {
      this.unreserve();
      return false;
    }
    const bytes = byteLength(chunk);
    const budget = this.opts.budget;
    if (bytes > this.#reserved) budget.grow(bytes - this.#reserved);
    else if (bytes < this.#reserved) budget.release(this.#reserved - bytes);
    this.#held += bytes - this.#reserved;
    this.#reserved = 0;
    const taken = this.res.write(chunk, () => this.#flushed(bytes));
    if (!taken) await this.#drained();
    // A write the kernel took at once reports its drain on the next tick, before any
    // I/O: the turn of the event loop is taken in any case, so other requests are served.
    await nextTurn();
    return !this.closed;
  }

  /** A chunk reached the kernel (or failed with the socket): its room goes back. */
  #flushed(bytes: number): void {
    if (this.#closed) return;
    this.#held -= bytes;
    this.opts.budget.release(bytes);
  }

  /**
   * Resolves when the socket drained or the response closed. A client that took
   * nothing for the stall time is stalled; whether it took anything is checked
   * after the event loop's I/O (a drain waiting behind a busy loop counts), and
   * one that took something meanwhile gets another stall time.
   */
  #drained(): Promise<void> {
    const res = this.res;
    return new Promise<void>((resolve) => {
      let finished = false;
      // What waits in the socket's buffer: the client took something when it shrank.
      let waiting = res.writableLength;
      const done = () => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        res.off("drain", done);
        res.off("close", done);
        resolve();
      };
      const check = () => {
        if (finished) return;
        const now = res.writableLength;
        if (now < waiting) {
          waiting = now;
          timer = arm();
          return;
        }
        this.#stalled = true;
        done();
        if (this.opts.onStall) this.opts.onStall();
        else res.destroy();
      };
      const arm = () => {
        const t = setTimeout(() => setImmediate(check), this.opts.stallMs);
        t.unref();
        return t;
      };
      let timer = arm();
      res.once("drain", done);
      res.once("close", done);
    });
  }

  /**
   * Writes what `produce` makes, chunk after chunk, until it returns null; each
   * call gets the bytes to aim for. Resolves with false when the response went
   * away first.
   */
  async pump(
    produce: (room: number) => string | Buffer | null | Promise<string | Buffer | null>,
  ): Promise<boolean> {
    for (;;) {
      if (!(await this.reserve())) return false;
      const turn = this.opts.budget.slicer.take();
      if (turn) await turn;
      if (this.closed) {
        this.unreserve();
        return false;
      }
      const chunk = await produce(this.opts.chunkBytes);
      if (chunk === null) {
        this.unreserve();
        return true;
      }
      if (!(await this.write(chunk))) return false;
    }
  }
}
