/**
 * A Store watch over etcd's Watch RPC, resumed transparently when its stream is lost.
 *
 * One gRPC stream per watch (not several watches multiplexed on one stream): each
 * watch then has its own HTTP/2 flow control, its own create/cancel lifecycle and its
 * own resume point, so a stream lost or cut off affects one watcher only, no watch id
 * bookkeeping is shared between watchers, and a compaction cancel always reaches the
 * watch it belongs to with its compact_revision. HTTP/2 streams on one connection are
 * cheap, and the apiserver keeps one storage watch per resource type, so the count
 * stays small.
 *
 * Exactly once, in order. etcd delivers a revision's events in one response and in
 * revision order. The watch remembers the revision after the last event it received
 * (`nextRevision`); a new stream (after etcd restarted or an endpoint was lost, on
 * whichever endpoint answers) starts there, and any event below it is dropped, so
 * nothing is lost or repeated. The only other thing that advances `nextRevision` is a
 * timed progress notification (an empty response, which etcd sends to a watcher only
 * once everything up to its revision has been sent on the same stream); requested
 * progress notifications, which etcd 3.4 can send ahead of events, are never asked for.
 * If the resume revision has been compacted meanwhile, etcd cancels the watch with the
 * compact revision and iteration throws CompactedError carrying it.
 *
 * Back-pressure. Events are read from the stream as fast as etcd sends them and queued
 * for the consumer; a consumer more than `bufferSize` events behind is cut off with
 * WatchOverflowError (queued events dropped), so a slow reader holds neither etcd, nor
 * writers, nor other watchers.
 */
import type * as grpc from "@grpc/grpc-js";
import {
  ClosedError,
  CompactedError,
  StorageError,
  UnavailableError,
  WatchOverflowError,
} from "../errors.ts";
import type { Watch, WatchEvent } from "../store.ts";
import { type EtcdClient, EtcdRpcError } from "./client.ts";
import type { KeySpace } from "./keys.ts";
import {
  type EtcdEvent,
  type EtcdKeyValue,
  EventType,
  type WatchRequest,
  type WatchResponse,
} from "./messages.ts";

/** Longest pause between attempts to re-establish a lost watch stream. */
export const WATCH_RETRY_BACKOFF_MAX_MS = 1_000;
/** Queue slots consumed before the queue array is compacted. */
const QUEUE_COMPACT_AT = 1024;

/** gRPC statuses after which a watch stream is re-established rather than failed. */
const RESUMABLE_CODES = new Set([1, 2, 4, 10, 13, 14]); // CANCELLED UNKNOWN DEADLINE_EXCEEDED ABORTED INTERNAL UNAVAILABLE

export interface EtcdWatchParams {
  client: EtcdClient;
  keys: KeySpace;
  prefix: string;
  /** Exclusive: deliver changes with revision > fromRevision; 0 means "from now". */
  fromRevision: number;
  bufferSize: number;
  /** How long a lost stream may take to come back before the watch fails. */
  retryTimeoutMs: number;
  /** Resolves the current revision, for watches "from now". */
  currentRevision(): Promise<number>;
  /**
   * Rejects (CompactedError) when a watch may not start after `fromRevision`. The
   * contract refuses a start below the compacted revision; etcd alone would still
   * accept one revision more, so the store checks before the first stream.
   */
  checkStart(fromRevision: number): Promise<void>;
  /** Told the compacted revision etcd reported when it canceled the watch. */
  onCompacted(revision: number): void;
  /** Told when the watch has ended, for any reason. */
  onEnd(watch: EtcdWatch): void;
}

type Waiter = {
  resolve(result: IteratorResult<WatchEvent>): void;
  reject(err: Error): void;
};

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class EtcdWatch implements Watch {
  /** Resolves once the start revision is known (at once unless watching "from now"). */
  readonly ready: Promise<void>;
  private readonly queue: (WatchEvent | undefined)[] = [];
  private head = 0;
  private waiter: Waiter | null = null;
  /** No more events will be queued. */
  private ended = false;
  /** The error to throw once the queue is drained; cleared once thrown. */
  private failure: Error | null = null;
  /** etcd start revision of the next stream: one past the last event received. */
  private nextRevision = 0;
  /** Revision of the last event handed to the consumer. */
  private lastConsumed: number;
  private stream: grpc.ClientDuplexStream<WatchRequest, WatchResponse> | null = null;

  constructor(private readonly p: EtcdWatchParams) {
    this.lastConsumed = p.fromRevision;
    let started: Promise<void>;
    if (p.fromRevision > 0) {
      this.nextRevision = p.fromRevision + 1;
      this.ready = Promise.resolve();
      started = p.checkStart(p.fromRevision);
    } else {
      started = p.currentRevision().then((rev) => {
        this.nextRevision = rev + 1;
        this.lastConsumed = rev;
      });
      this.ready = started.catch(() => {});
    }
    started.then(
      () => this.run(),
      (err: unknown) => this.fail(err instanceof Error ? err : new Error(String(err))),
    );
  }

  [Symbol.asyncIterator](): AsyncIterator<WatchEvent> {
    return {
      next: () => this.next(),
      return: async () => {
        this.cancel();
        return { done: true, value: undefined };
      },
    };
  }

  cancel(): void {
    this.finish(null, true);
  }

  /** Ends the watch because its store is closing: queued events are still handed out, then iteration ends. */
  close(): void {
    this.finish(null, false);
  }

  private next(): Promise<IteratorResult<WatchEvent>> {
    if (this.head < this.queue.length) return Promise.resolve(this.shift());
    if (this.failure) {
      const err = this.failure;
      this.failure = null;
      return Promise.reject(err);
    }
    if (this.ended) return Promise.resolve({ done: true, value: undefined });
    if (this.waiter) return Promise.reject(new Error("watch is already being read"));
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  private shift(): IteratorResult<WatchEvent> {
    const ev = this.queue[this.head]!;
    this.queue[this.head++] = undefined;
    if (this.head >= QUEUE_COMPACT_AT && this.head * 2 >= this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
    this.lastConsumed = ev.revision;
    return { done: false, value: ev };
  }

  private get queued(): number {
    return this.queue.length - this.head;
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
    } else if (this.ended) {
      this.waiter = null;
      w.resolve({ done: true, value: undefined });
    }
  }

  /**
   * Ends the watch: `err` is thrown to the consumer (after the queued events, unless
   * `dropQueued`), null ends iteration normally.
   */
  private finish(err: Error | null, dropQueued: boolean): void {
    if (this.ended) return;
    this.ended = true;
    this.failure = err;
    if (dropQueued) {
      this.queue.length = 0;
      this.head = 0;
    }
    this.stream?.cancel();
    this.stream = null;
    this.wake();
    this.p.onEnd(this);
  }

  private fail(err: Error): void {
    this.finish(err, false);
  }

  /** Keeps a stream open until the watch ends, re-establishing it when it is lost. */
  private async run(): Promise<void> {
    let lostSince = 0;
    let attempt = 0;
    while (!this.ended) {
      let endpoint: string | undefined;
      let established = false;
      try {
        const deadline = (lostSince || Date.now()) + this.p.retryTimeoutMs;
        const opened = await this.p.client.openWatchStream(deadline);
        endpoint = opened.endpoint;
        if (this.ended) {
          opened.stream.cancel();
          return;
        }
        await this.consume(opened.stream, opened.endpoint, () => {
          established = true;
        });
      } catch (err) {
        if (this.ended) return;
        if (err instanceof ClosedError || this.p.client.isClosed) {
          this.close();
          return;
        }
        const resumable =
          err instanceof UnavailableError ||
          (err instanceof EtcdRpcError && RESUMABLE_CODES.has(err.code));
        if (!resumable) {
          this.fail(
            err instanceof StorageError
              ? err
              : new UnavailableError(`watch failed: ${(err as Error).message}`),
          );
          return;
        }
        if (endpoint) this.p.client.demote(endpoint);
      }
      this.stream = null;
      if (this.ended) return;
      if (established) {
        lostSince = Date.now();
        attempt = 0;
      } else if (!lostSince) {
        lostSince = Date.now();
      }
      if (Date.now() - lostSince > this.p.retryTimeoutMs) {
        this.fail(
          new UnavailableError(
            `watch on ${this.p.prefix} lost etcd and could not resume from revision ${this.nextRevision} within ${this.p.retryTimeoutMs}ms`,
          ),
        );
        return;
      }
      await sleep(Math.min(WATCH_RETRY_BACKOFF_MAX_MS, 25 * 2 ** attempt++));
    }
  }

  /** Reads one stream until it ends (resolves) or fails (rejects). */
  private consume(
    stream: grpc.ClientDuplexStream<WatchRequest, WatchResponse>,
    endpoint: string,
    onCreated: () => void,
  ): Promise<void> {
    return new Promise((resolve, reject) => {
      this.stream = stream;
      stream.on("data", (res: WatchResponse) => {
        if (this.ended) return;
        if (res.canceled) {
          if (res.compact_revision > 0) {
            this.p.onCompacted(res.compact_revision);
            this.fail(new CompactedError(this.nextRevision - 1, res.compact_revision));
          } else {
            this.fail(
              new UnavailableError(
                `etcd canceled the watch on ${this.p.prefix}: ${res.cancel_reason || "no reason given"}`,
              ),
            );
          }
          resolve();
          return;
        }
        if (res.created) onCreated();
        if (res.events.length > 0) this.receive(res.events);
        else if (!res.created && res.header) this.progress(res.header.revision);
      });
      stream.on("error", (err: grpc.ServiceError) => {
        reject(new EtcdRpcError(err.code, err.details, endpoint));
      });
      stream.on("end", () => resolve());
      const { key, rangeEnd } = this.p.keys.range(this.p.prefix);
      stream.write({
        create_request: {
          key,
          range_end: rangeEnd,
          start_revision: this.nextRevision,
          prev_kv: true,
          progress_notify: true,
        },
      });
    });
  }

  private receive(events: EtcdEvent[]): void {
    const from = this.nextRevision;
    let last = 0;
    for (const ev of events) {
      const kv = ev.kv;
      if (!kv || kv.mod_revision < from) continue;
      this.queue.push(this.translate(ev.type, kv, ev.prev_kv));
      last = kv.mod_revision;
    }
    if (last >= this.nextRevision) this.nextRevision = last + 1;
    if (this.queued > this.p.bufferSize) {
      this.finish(new WatchOverflowError(this.lastConsumed, this.p.bufferSize), true);
      return;
    }
    this.wake();
  }

  private progress(revision: number): void {
    if (revision >= this.nextRevision) this.nextRevision = revision + 1;
  }

  private translate(type: number, kv: EtcdKeyValue, prevKv: EtcdKeyValue | null): WatchEvent {
    const key = this.p.keys.decode(kv.key);
    const prev = prevKv ? this.p.keys.item(prevKv) : null;
    if (type === EventType.DELETE) {
      return {
        type: "delete",
        key,
        revision: kv.mod_revision,
        value: null,
        createRevision: prev?.createRevision ?? 0,
        prev,
      };
    }
    const created = kv.create_revision === kv.mod_revision;
    return {
      type: created ? "create" : "update",
      key,
      revision: kv.mod_revision,
      value: kv.value.toString("utf8"),
      createRevision: kv.create_revision,
      prev: created ? null : prev,
    };
  }
}

/** A watch that throws `error` on its first read, then ends (a watch that could not start). */
export function failedWatch(error: Error): Watch {
  let thrown = false;
  const done: IteratorResult<WatchEvent> = { done: true, value: undefined };
  return {
    cancel() {
      thrown = true;
    },
    [Symbol.asyncIterator]() {
      return {
        next: () => {
          if (thrown) return Promise.resolve(done);
          thrown = true;
          return Promise.reject(error);
        },
        return: () => {
          thrown = true;
          return Promise.resolve(done);
        },
      };
    },
  };
}
