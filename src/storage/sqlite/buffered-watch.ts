import { WatchOverflowError } from "../errors.ts";
import type { Watch, WatchEvent } from "../store.ts";
import { Fifo } from "./fifo.ts";

/** History events replayed per read while a watch catches up. */
export const REPLAY_CHUNK_EVENTS = 512;

/** Reads history for a catching-up watch. */
export interface ReplaySource {
  /**
   * Events under `prefix` with `after < revision <= through`, in revision order, at most
   * `limit`. Throws CompactedError once `after` has been compacted away.
   */
  readHistory(prefix: string, after: number, through: number, limit: number): WatchEvent[];
}

export interface BufferedWatchOptions {
  prefix: string;
  /** Events after this revision are delivered. */
  fromRevision: number;
  /** The store's committed revision when the watch started: later events arrive live. */
  liveFrom: number;
  bufferSize: number;
  source: ReplaySource;
  /** Called once when the watch stops taking live events. */
  detach: (watch: BufferedWatch) => void;
}

type Waiter = {
  resolve: (r: IteratorResult<WatchEvent>) => void;
  reject: (e: unknown) => void;
};

const DONE: IteratorResult<WatchEvent> = { done: true, value: undefined };

/**
 * A watch fed in process: it replays history after `fromRevision` lazily, chunk by chunk,
 * while live events committed after `liveFrom` queue behind it, so the switch from
 * replay to live has no gap and no duplicate. Live events buffered beyond `bufferSize`
 * cut the watch off with WatchOverflowError; writers never wait for a consumer.
 */
export class BufferedWatch implements Watch {
  readonly prefix: string;
  readonly #liveFrom: number;
  readonly #bufferSize: number;
  readonly #source: ReplaySource;
  readonly #detach: (watch: BufferedWatch) => void;
  #replayAfter: number;
  #replayThrough: number;
  readonly #replay = new Fifo<WatchEvent>();
  readonly #live = new Fifo<WatchEvent>();
  #waiter: Waiter | null = null;
  #error: unknown = null;
  /** open: taking events; draining: store closed, hand out what is buffered; done. */
  #state: "open" | "draining" | "done" = "open";
  #attached = true;
  #lastDelivered: number;

  constructor(opts: BufferedWatchOptions) {
    this.prefix = opts.prefix;
    this.#liveFrom = Math.max(opts.fromRevision, opts.liveFrom);
    this.#bufferSize = opts.bufferSize;
    this.#source = opts.source;
    this.#detach = opts.detach;
    this.#replayAfter = opts.fromRevision;
    this.#replayThrough = opts.liveFrom;
    this.#lastDelivered = opts.fromRevision;
  }

  /** A watch that fails with `error` on first read (for example on a closed store). */
  static failed(error: unknown, prefix: string): BufferedWatch {
    const w = new BufferedWatch({
      prefix,
      fromRevision: 0,
      liveFrom: 0,
      bufferSize: 0,
      source: { readHistory: () => [] },
      detach: () => {},
    });
    w.#attached = false;
    w.#error = error;
    return w;
  }

  /** Revision of the last event handed to the consumer (or the start revision). */
  get lastDeliveredRevision(): number {
    return this.#lastDelivered;
  }

  /** Whether the watch still takes live events. */
  get active(): boolean {
    return this.#attached;
  }

  /** Offers a committed event whose key is under this watch's prefix. */
  push(ev: WatchEvent): void {
    if (this.#state !== "open" || ev.revision <= this.#liveFrom) return;
    const waiter = this.#waiter;
    if (waiter !== null && this.#live.length === 0 && !this.#replaying()) {
      this.#waiter = null;
      this.#lastDelivered = ev.revision;
      waiter.resolve({ value: ev, done: false });
      return;
    }
    this.#live.push(ev);
    if (this.#live.length > this.#bufferSize) {
      this.fail(new WatchOverflowError(this.#lastDelivered, this.#bufferSize));
    }
  }

  /** Ends the watch with `error` (dropping what is buffered). */
  fail(error: unknown): void {
    if (this.#state === "done") return;
    this.#error = error;
    this.#stop("done");
  }

  /** The store closed: buffered events are still handed out, then iteration ends. */
  end(): void {
    if (this.#state !== "open") return;
    this.#replayAfter = this.#replayThrough;
    this.#stop("draining");
  }

  cancel(): void {
    if (this.#state === "done") return;
    this.#error = null;
    this.#stop("done");
  }

  next(): Promise<IteratorResult<WatchEvent>> {
    if (this.#error === null) {
      const ev = this.#take();
      if (ev !== undefined) {
        this.#lastDelivered = ev.revision;
        return Promise.resolve({ value: ev, done: false });
      }
    }
    if (this.#error !== null) {
      const error = this.#error;
      this.#error = null;
      this.#stop("done");
      return Promise.reject(error);
    }
    if (this.#state !== "open") return Promise.resolve(DONE);
    if (this.#waiter !== null) {
      return Promise.reject(new Error("watch is already being read by another consumer"));
    }
    return new Promise((resolve, reject) => {
      this.#waiter = { resolve, reject };
    });
  }

  [Symbol.asyncIterator](): AsyncIterator<WatchEvent> {
    return {
      next: () => this.next(),
      return: () => {
        this.cancel();
        return Promise.resolve(DONE);
      },
    };
  }

  #replaying(): boolean {
    return this.#replayAfter < this.#replayThrough;
  }

  #take(): WatchEvent | undefined {
    const replayed = this.#replay.shift();
    if (replayed !== undefined) return replayed;
    while (this.#replaying()) {
      let chunk: WatchEvent[];
      try {
        chunk = this.#source.readHistory(
          this.prefix,
          this.#replayAfter,
          this.#replayThrough,
          REPLAY_CHUNK_EVENTS,
        );
      } catch (error) {
        this.fail(error);
        return undefined;
      }
      this.#replayAfter =
        chunk.length < REPLAY_CHUNK_EVENTS ? this.#replayThrough : chunk.at(-1)!.revision;
      if (chunk.length > 0) {
        this.#replay.reset(chunk);
        return this.#replay.shift();
      }
    }
    return this.#live.shift();
  }

  #stop(state: "draining" | "done"): void {
    this.#state = state;
    if (state === "done") {
      this.#replay.reset();
      this.#live.reset();
      this.#replayAfter = this.#replayThrough;
    }
    if (this.#attached) {
      this.#attached = false;
      this.#detach(this);
    }
    const waiter = this.#waiter;
    if (waiter === null) return;
    this.#waiter = null;
    if (this.#error !== null) {
      const error = this.#error;
      this.#error = null;
      waiter.reject(error);
    } else {
      waiter.resolve(DONE);
    }
  }
}
