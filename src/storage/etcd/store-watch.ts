/**
 * One consumer's Store watch on the etcd backend: its own queue and its own
 * back-pressure limit, fed by a shared etcd stream (watch-fanout.ts).
 *
 * Back-pressure. Events are queued for the consumer as they arrive; a consumer more
 * than `bufferSize` events behind is cut off with WatchOverflowError (queued events
 * dropped), so a slow reader holds neither etcd, nor writers, nor other watchers.
 */
import { WatchOverflowError } from "../errors.ts";
import type { Watch, WatchEvent } from "../store.ts";

/** Queue slots consumed before the queue array is compacted. */
const QUEUE_COMPACT_AT = 1024;

export interface EtcdWatchParams {
  /** Exclusive: changes with revision > fromRevision; 0 means "from now". */
  fromRevision: number;
  bufferSize: number;
  /** Told once when the watch has ended, for any reason. */
  onEnd(watch: EtcdWatch): void;
}

type Waiter = {
  resolve(result: IteratorResult<WatchEvent>): void;
  reject(err: Error): void;
};

const DONE: IteratorResult<WatchEvent> = { done: true, value: undefined };

export class EtcdWatch implements Watch {
  private readonly queue: (WatchEvent | undefined)[] = [];
  private head = 0;
  private waiter: Waiter | null = null;
  /** No more events will be queued. */
  private over = false;
  /** The error to throw once the queue is drained; cleared once thrown. */
  private failure: Error | null = null;
  /** First revision to deliver (events below it are ignored); 0 until known. */
  private startRevision = 0;
  /** Revision of the last event handed to the consumer. */
  private lastConsumed: number;

  constructor(private readonly p: EtcdWatchParams) {
    this.lastConsumed = p.fromRevision;
  }

  /** Whether the watch has ended (cancelled, failed, cut off or closed). */
  get ended(): boolean {
    return this.over;
  }

  /** Sets the first revision to deliver, once known ("from now" resolves it first). */
  start(startRevision: number): void {
    this.startRevision = startRevision;
    this.lastConsumed = startRevision - 1;
  }

  /** Queues events (those below the start revision are ignored). */
  push(batch: WatchEvent[]): void {
    if (this.over) return;
    for (const ev of batch) if (ev.revision >= this.startRevision) this.queue.push(ev);
    if (this.queue.length - this.head > this.p.bufferSize) {
      this.finish(new WatchOverflowError(this.lastConsumed, this.p.bufferSize), true);
      return;
    }
    this.wake();
  }

  /** Ends the watch with `error`, thrown after the events already queued. */
  fail(error: Error): void {
    this.finish(error, false);
  }

  /** Ends the watch because its store is closing: queued events are still handed out. */
  close(): void {
    this.finish(null, false);
  }

  cancel(): void {
    this.finish(null, true);
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

  private next(): Promise<IteratorResult<WatchEvent>> {
    if (this.head < this.queue.length) return Promise.resolve(this.shift());
    if (this.failure) {
      const err = this.failure;
      this.failure = null;
      return Promise.reject(err);
    }
    if (this.over) return Promise.resolve(DONE);
    if (this.waiter) return Promise.reject(new Error("watch is already being read"));
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  private shift(): IteratorResult<WatchEvent> {
    const ev = this.queue[this.head]!;
    this.queue[this.head++] = undefined;
    if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
    } else if (this.head >= QUEUE_COMPACT_AT && this.head * 2 >= this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
    this.lastConsumed = ev.revision;
    return { done: false, value: ev };
  }

  /** Wakes a waiting consumer with the next event, the failure, or the end. */
  private wake(): void {
    const w = this.waiter;
    if (!w) return;
    if (this.head < this.queue.length) {
      this.waiter = null;
      w.resolve(this.shift());
    } else if (this.failure) {
      this.waiter = null;
      const err = this.failure;
      this.failure = null;
      w.reject(err);
    } else if (this.over) {
      this.waiter = null;
      w.resolve(DONE);
    }
  }

  /**
   * Ends the watch: `error` is thrown to the consumer (after the queued events, unless
   * `dropQueued`), null ends iteration normally.
   */
  private finish(error: Error | null, dropQueued: boolean): void {
    if (this.over) return;
    this.over = true;
    this.failure = error;
    if (dropQueued) {
      this.queue.length = 0;
      this.head = 0;
    }
    this.wake();
    this.p.onEnd(this);
  }
}

/** A watch that throws `error` on its first read, then ends (a watch that could not start). */
export function failedWatch(error: Error): Watch {
  let thrown = false;
  return {
    cancel() {
      thrown = true;
    },
    [Symbol.asyncIterator]() {
      return {
        next: () => {
          if (thrown) return Promise.resolve(DONE);
          thrown = true;
          return Promise.reject(error);
        },
        return: () => {
          thrown = true;
          return Promise.resolve(DONE);
        },
      };
    },
  };
}
