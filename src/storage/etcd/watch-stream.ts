/**
 * One etcd Watch stream over a key range, resumed transparently when it is lost.
 *
 * Exactly once, in order. etcd delivers a revision's events in one response and in
 * revision order. The stream remembers the revision after the last event it received
 * (`nextRevision`); a new stream (after etcd restarted or an endpoint was lost, on
 * whichever endpoint answers) starts there, and any event below it is dropped, so
 * nothing is lost or repeated. The only other thing that advances `nextRevision` is a
 * timed progress notification (an empty response, which etcd sends to a watcher only
 * once everything up to its revision has been sent on the same stream); requested
 * progress notifications, which etcd 3.4 can send ahead of events, are never asked for.
 * If the resume revision has been compacted meanwhile, etcd cancels the watch with the
 * compact revision, and the stream fails with CompactedError carrying it.
 *
 * Events are read as fast as etcd sends them and handed to the sink at once; the sink
 * (watch-fanout.ts) does the buffering, per consumer.
 */
import type * as grpc from "@grpc/grpc-js";
import { ClosedError, CompactedError, StorageError, UnavailableError } from "../errors.ts";
import type { WatchEvent } from "../store.ts";
import { type EtcdClient, EtcdRpcError } from "./client.ts";
import type { KeySpace } from "./key-space.ts";
import {
  type EtcdEvent,
  type EtcdKeyValue,
  EventType,
  type WatchRequest,
  type WatchResponse,
} from "./messages.ts";

/** Longest pause between attempts to re-establish a lost watch stream. */
export const WATCH_RETRY_BACKOFF_MAX_MS = 1_000;

/** gRPC statuses after which a watch stream is re-established rather than failed. */
const RESUMABLE_CODES = new Set([1, 2, 4, 10, 13, 14]); // CANCELLED UNKNOWN DEADLINE_EXCEEDED ABORTED INTERNAL UNAVAILABLE

/** Where a stream's output goes. */
export interface WatchSink {
  /** The events of one etcd response, in revision order. */
  events(batch: WatchEvent[]): void;
  /** The stream failed for good (it is not called when the stream is cancelled). */
  failed(error: Error): void;
}

export interface WatchStreamParams {
  client: EtcdClient;
  keys: KeySpace;
  /** Caller-side prefix of the watched keys. */
  prefix: string;
  /** First revision to deliver (etcd's start_revision, inclusive). */
  startRevision: number;
  /** How long a lost stream may take to come back before the stream fails. */
  retryTimeoutMs: number;
  /** Told the compacted revision etcd reported when it canceled the watch. */
  onCompacted(revision: number): void;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class ResumableWatchStream {
  private ended = false;
  private nextRev: number;
  private stream: grpc.ClientDuplexStream<WatchRequest, WatchResponse> | null = null;

  constructor(
    private readonly p: WatchStreamParams,
    private readonly sink: WatchSink,
  ) {
    this.nextRev = p.startRevision;
    void this.run();
  }

  /** One past the last revision received: everything below it has been handed to the sink. */
  get nextRevision(): number {
    return this.nextRev;
  }

  get active(): boolean {
    return !this.ended;
  }

  /** Stops the stream; the sink hears nothing more. */
  cancel(): void {
    if (this.ended) return;
    this.ended = true;
    this.stream?.cancel();
    this.stream = null;
  }

  private fail(error: Error): void {
    if (this.ended) return;
    this.cancel();
    this.sink.failed(error);
  }

  /** Keeps a stream open until cancelled or failed, re-establishing it when it is lost. */
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
          this.cancel();
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
            `watch on ${this.p.prefix} lost etcd and could not resume from revision ${this.nextRev} within ${this.p.retryTimeoutMs}ms`,
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
            this.fail(new CompactedError(this.nextRev - 1, res.compact_revision));
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
          start_revision: this.nextRev,
          prev_kv: true,
          progress_notify: true,
        },
      });
    });
  }

  private receive(events: EtcdEvent[]): void {
    const from = this.nextRev;
    const batch: WatchEvent[] = [];
    for (const ev of events) {
      const kv = ev.kv;
      if (!kv || kv.mod_revision < from) continue;
      batch.push(this.translate(ev.type, kv, ev.prev_kv));
    }
    if (batch.length === 0) return;
    this.nextRev = batch[batch.length - 1].revision + 1;
    this.sink.events(batch);
  }

  private progress(revision: number): void {
    if (revision >= this.nextRev) this.nextRev = revision + 1;
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
