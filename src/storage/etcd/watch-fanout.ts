/**
 * Fan-out of one etcd watch stream to every Store watch of the same prefix that can
 * share it.
 *
 * Streams. etcd sends every event once per etcd watcher, so a hundred watchers of one
 * prefix would cost a hundred copies of every event on the wire and a hundred decodes
 * in this process. Instead, a watch joins a running stream of its prefix when that
 * stream has not yet passed the watch's start revision (it would deliver everything the
 * watch needs); otherwise it gets a stream of its own, started at its revision (which
 * later watches may join in turn). Each stream is its own gRPC call rather than one of
 * several watches multiplexed on a shared call: each then has its own flow control, its
 * own create/cancel lifecycle and resume point, no watch id bookkeeping is shared, and
 * a compaction cancel always reaches the stream it belongs to with its compact_revision.
 *
 * Isolation. The stream hands each event batch to every joined watch's own queue and
 * never waits for a consumer; a watch that falls too far behind is cut off alone
 * (store-watch.ts). When the stream fails for good (its resume revision was compacted, etcd
 * stayed out of reach), every joined watch ends with that error after its queued events.
 * The stream stops when its last watch leaves.
 */
import type { WatchEvent } from "../store.ts";
import type { EtcdWatch } from "./store-watch.ts";
import { ResumableWatchStream, type WatchSink, type WatchStreamParams } from "./watch-stream.ts";

export class WatchFanout implements WatchSink {
  private readonly watches = new Set<EtcdWatch>();
  private readonly stream: ResumableWatchStream;
  private done = false;

  /** `onDone` is told once when the fan-out stops (last watch left, or the stream failed). */
  constructor(
    params: WatchStreamParams,
    private readonly onDone: (fanout: WatchFanout) => void,
  ) {
    this.stream = new ResumableWatchStream(params, this);
  }

  /** Whether a watch starting at `startRevision` can join without missing anything. */
  canJoin(startRevision: number): boolean {
    return !this.done && this.stream.nextRevision <= startRevision;
  }

  join(watch: EtcdWatch): void {
    this.watches.add(watch);
  }

  leave(watch: EtcdWatch): void {
    if (!this.watches.delete(watch) || this.watches.size > 0) return;
    this.stop();
  }

  events(batch: WatchEvent[]): void {
    for (const w of this.watches) w.push(batch);
  }

  failed(error: Error): void {
    this.stop();
    for (const w of [...this.watches]) w.fail(error);
    this.watches.clear();
  }

  private stop(): void {
    if (this.done) return;
    this.done = true;
    this.stream.cancel();
    this.onDone(this);
  }
}
