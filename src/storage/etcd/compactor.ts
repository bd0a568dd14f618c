/**
 * Periodic compaction of etcd's history, as kube-apiserver does it
 * (`--etcd-compaction-interval`, 5 minutes by default): every interval, compact to
 * the revision that was current one interval earlier, so watches and paged lists
 * keep at least one interval of history while etcd's database stops growing.
 *
 * Several apiservers may share one etcd. They agree through one key outside every
 * installation's prefix, `compact_rev_key` (Kubernetes' own, so Setpoint and a
 * kube-apiserver on one etcd take turns instead of compacting twice): its etcd
 * `version` counts compaction turns. Each turn, a compactor writes the current
 * revision into the key only if the key's version is still the one it saw last
 * time; the one that wins compacts to the revision it recorded one turn earlier,
 * the others learn the new version and try again next interval.
 */
import type { EtcdClient } from "./client.ts";
import { CompareResult, CompareTarget } from "./messages.ts";

/** kube-apiserver's default `--etcd-compaction-interval`. */
export const DEFAULT_COMPACTION_INTERVAL_MS = 5 * 60_000;

/** The key compactors sharing an etcd coordinate through (Kubernetes' name). */
export const COMPACT_REV_KEY = Buffer.from("compact_rev_key");

export interface CompactorOptions {
  client: EtcdClient;
  intervalMs: number;
  /** Told of each compaction this compactor made, with the revision compacted to. */
  onCompacted?: (revision: number) => void;
  /** Told of a failed turn (etcd unreachable, ...); the next turn tries again. */
  onError?: (err: unknown) => void;
}

export class Compactor {
  /** The coordination key's version as last seen (0: the key does not exist yet). */
  private seenVersion = 0;
  /** The revision recorded at the last turn this compactor won. */
  private lastRevision = 0;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(private readonly opts: CompactorOptions) {}

  start(): void {
    if (this.timer || this.stopped) return;
    this.timer = setInterval(() => {
      this.running = this.running.then(() => this.turn());
    }, this.opts.intervalMs);
    this.timer.unref();
  }

  /** Stops the timer; a turn under way ends with the client's closing (its error unreported). */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Resolves when the turn under way (if any) has ended. */
  settled(): Promise<void> {
    return this.running;
  }

  /** One turn: claim it through the key, then compact to last turn's revision. */
  async turn(): Promise<void> {
    if (this.stopped) return;
    const { client } = this.opts;
    try {
      const res = await client.txn({
        compare: [
          {
            target: CompareTarget.VERSION,
            result: CompareResult.EQUAL,
            key: COMPACT_REV_KEY,
            version: this.seenVersion,
          },
        ],
        success: [
          { request_put: { key: COMPACT_REV_KEY, value: Buffer.from(String(this.lastRevision)) } },
        ],
        failure: [{ request_range: { key: COMPACT_REV_KEY } }],
      });
      const current = res.header.revision;
      if (!res.succeeded) {
        // Another compactor took this turn: follow its count and wait for the next.
        this.seenVersion = res.responses[0]?.response_range?.kvs[0]?.version ?? 0;
        this.lastRevision = current;
        return;
      }
      this.seenVersion += 1;
      const target = this.lastRevision;
      this.lastRevision = current;
      // The first turn only records where history starts to count.
      if (target === 0 || this.stopped) return;
      try {
        await client.compact({ revision: target, physical: false });
      } catch (err) {
        // Compacted further already (by etcd's own --auto-compaction, say): fine.
        if (!String((err as Error).message).includes("required revision has been compacted")) {
          throw err;
        }
      }
      this.opts.onCompacted?.(target);
    } catch (err) {
      if (!this.stopped) this.opts.onError?.(err);
    }
  }
}
