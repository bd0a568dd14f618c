/**
 * Restart and image pull back-off as the kubelet keeps it, per key: the first
 * failure is retried at once; each failure after that waits the current delay
 * (10 s at first), which doubles on every retry up to 300 s. A key whose last
 * retry is more than twice the maximum (10 minutes) ago starts over at 10 s.
 */

export const BACKOFF_INITIAL_MS = 10_000;
export const BACKOFF_MAX_MS = 300_000;

interface Entry {
  backoffMs: number;
  lastUpdate: number;
}

export interface BackoffOptions {
  initialMs?: number;
  maxMs?: number;
  now?: () => number;
}

export class Backoff {
  private readonly entries = new Map<string, Entry>();
  readonly initialMs: number;
  readonly maxMs: number;
  private readonly now: () => number;

  constructor(opts: BackoffOptions = {}) {
    this.initialMs = opts.initialMs ?? BACKOFF_INITIAL_MS;
    this.maxMs = opts.maxMs ?? BACKOFF_MAX_MS;
    this.now = opts.now ?? Date.now;
  }

  private expired(e: Entry, at: number): boolean {
    return at - e.lastUpdate > this.maxMs * 2;
  }

  /** The current delay of `key` (0 when it has none). */
  get(key: string): number {
    return this.entries.get(key)?.backoffMs ?? 0;
  }

  /** Records a retry of `key` for a failure at `eventTime`: the delay starts or doubles. */
  next(key: string, eventTime: number): void {
    const e = this.entries.get(key);
    if (!e || this.expired(e, eventTime)) {
      this.entries.set(key, { backoffMs: this.initialMs, lastUpdate: this.now() });
      return;
    }
    e.backoffMs = Math.min(e.backoffMs * 2, this.maxMs);
    e.lastUpdate = this.now();
  }

  /**
   * When a failure at `eventTime` may be retried: undefined when it may be now,
   * else the time (ms since the epoch) its back-off ends.
   */
  waitUntil(key: string, eventTime: number): number | undefined {
    const e = this.entries.get(key);
    if (!e || this.expired(e, eventTime)) return undefined;
    const until = eventTime + e.backoffMs;
    return this.now() < until ? until : undefined;
  }

  /** The back-off since the last update (for image pulls, where there is no failure time). */
  waitSinceUpdate(key: string): number | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    return this.waitUntil(key, e.lastUpdate);
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  /** The state of every key, to keep across a restart of the agent. */
  snapshot(): Record<string, Entry> {
    return Object.fromEntries(this.entries);
  }

  restore(entries: Record<string, Entry>): void {
    for (const [k, e] of Object.entries(entries)) this.entries.set(k, { ...e });
  }
}

/** A duration as Go prints it: 10s, 1m20s, 5m0s. */
export function goDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${s % 60}s`;
  return `${Math.floor(m / 60)}h${m % 60}m${s % 60}s`;
}
