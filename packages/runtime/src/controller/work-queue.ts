/**
 * The work queue between event handlers and reconcile workers.
 *
 * Guarantees:
 * - A key waiting in the queue is held once: adding it again collapses.
 * - A key is never handed to two workers at once. A key added while a worker
 *   holds it is remembered and handed out once more after `done`, however many
 *   times it was added meanwhile.
 * - `addRateLimited` (a failure) asks the rate limiter for a delay and sets the
 *   key's backoff gate: the key is not handed out before the gate, whatever else
 *   is added meanwhile. Plain `add`s during a backoff neither count as failures nor
 *   bring the retry forward. `forget` (a success) resets the failure count.
 * - `addAfter` (a "look again in T") is not a failure and does not touch the
 *   count; an earlier `add` brings such a key forward (unless a backoff holds it).
 * - Fair ordering. Ready keys wait in two FIFO lanes: `initial` (keys from an
 *   informer's initial list or a resync) and `live` (everything else: fresh
 *   events, retries, requeues). When both lanes hold keys, `get` serves them
 *   alternately, so a huge initial list delays a fresh change by at most one
 *   initial key per live key ahead of it, and the initial list still makes
 *   progress under a stream of live events. A live add of a key waiting in the
 *   initial lane moves it to the live lane.
 * - Shutdown: `shutDown` stops handing out keys (pending and future `get`s return
 *   undefined) and ignores adds; `drain` waits for the keys in flight to be done.
 * - Waiting workers: however many wait on the same AbortSignal, the queue holds
 *   one abort listener on it (removed when the last of them is handed a key), so
 *   a controller's many workers never pile listeners onto its stop signal.
 *
 * Memory: keys collapse, so the queue holds at most one entry per distinct key
 * (roughly 250 bytes plus the key string, plus one heap slot per delayed key);
 * it needs no depth bound beyond the number of objects watched.
 */
import { type Clock, realClock, type TimerHandle } from "../clock.ts";
import { defaultControllerRateLimiter, type RateLimiter } from "./rate-limiter.ts";

/** Which ready lane a key waits in (see the module doc). */
export type Lane = "live" | "initial";

export interface AddOptions {
  /** `initial` for keys from an initial list or a resync; `live` (default) otherwise. */
  lane?: Lane | undefined;
}

/** Observations the queue reports; `metrics.ts` turns them into Prometheus series. */
export interface QueueMetricsSink {
  /** A key entered the queue (it was not already waiting or pending). */
  added(): void;
  /** The number of keys ready for a worker changed. */
  depth(n: number): void;
  /** A key waited `ms` between becoming ready and being handed out. */
  queued(ms: number): void;
  /** A worker held a key for `ms`. */
  worked(ms: number): void;
  /** A failure was recorded by `addRateLimited`. */
  retried(): void;
}

export interface WorkQueueOptions {
  /** Backoff for `addRateLimited`; `defaultControllerRateLimiter()` by default. */
  rateLimiter?: RateLimiter | undefined;
  clock?: Clock | undefined;
  metrics?: QueueMetricsSink | undefined;
}

/**
 * Rescheduling a delayed key leaves a stale slot in the delay heap until it
 * surfaces; the heap is rebuilt when it holds more than this many slots per key
 * (plus HEAP_SLACK_MIN), which bounds it to O(keys).
 */
const HEAP_SLACK_FACTOR = 2;
const HEAP_SLACK_MIN = 1024;

type Phase = "ready" | "waiting" | "processing";

interface Entry {
  phase: Phase;
  lane: Lane;
  /** When the key became (or becomes, if waiting) ready. */
  readyAt: number;
  /** Backoff gate: the key is not handed out before this time. */
  gate: number;
  /**
   * Bumped when the entry is placed again or changes lane; heap and lane slots
   * carry the version they were made with, and stale ones are skipped.
   */
  version: number;
  /** While processing: when the key must run again, if it was re-added. */
  pendingAt?: number | undefined;
  pendingLane?: Lane | undefined;
  startedAt: number;
}

interface HeapSlot {
  at: number;
  key: string;
  version: number;
}

/** A binary min-heap of delayed keys ordered by time. */
class DelayHeap {
  private readonly slots: HeapSlot[] = [];

  get size(): number {
    return this.slots.length;
  }

  peek(): HeapSlot | undefined {
    return this.slots[0];
  }

  push(slot: HeapSlot): void {
    const s = this.slots;
    s.push(slot);
    let i = s.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (s[p].at <= s[i].at) break;
      [s[p], s[i]] = [s[i], s[p]];
      i = p;
    }
  }

  pop(): HeapSlot | undefined {
    const s = this.slots;
    const top = s[0];
    const last = s.pop();
    if (s.length > 0 && last) {
      s[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < s.length && s[l].at < s[m].at) m = l;
        if (r < s.length && s[r].at < s[m].at) m = r;
        if (m === i) break;
        [s[m], s[i]] = [s[i], s[m]];
        i = m;
      }
    }
    return top;
  }

  clear(): void {
    this.slots.length = 0;
  }
}

/**
 * Stale slots a lane may hold beyond its live keys before it is rebuilt (a key
 * leaving a lane other than by being handed out leaves its slot behind).
 */
const LANE_SLACK_MIN = 1024;

/**
 * One ready lane: a FIFO of keys in arrays with a moving head (a Set used as a
 * queue costs a scan over the deleted slots it keeps at its front on every
 * take). Each slot carries the entry version it was queued with; a slot whose
 * entry has moved on (handed out, pushed back, moved to the other lane) is
 * stale and skipped.
 */
class LaneQueue {
  private keys: string[] = [];
  private versions: number[] = [];
  private head = 0;
  /** Live keys. */
  size = 0;
  /** Slots behind the head that are no longer live. */
  private stale = 0;

  push(key: string, version: number): void {
    this.keys.push(key);
    this.versions.push(version);
    this.size++;
  }

  /** Notes that one live key left the lane (its entry no longer matches its slot). */
  removed(isLive: (key: string, version: number) => boolean): void {
    this.size--;
    this.stale++;
    if (this.stale > this.size + LANE_SLACK_MIN) this.compact(isLive);
  }

  /** Takes the first live key. */
  shift(isLive: (key: string, version: number) => boolean): string | undefined {
    while (this.head < this.keys.length) {
      const i = this.head++;
      const key = this.keys[i];
      if (!isLive(key, this.versions[i])) {
        this.stale--;
        continue;
      }
      this.size--;
      if (this.head >= LANE_SLACK_MIN && this.head * 2 >= this.keys.length) {
        this.keys = this.keys.slice(this.head);
        this.versions = this.versions.slice(this.head);
        this.head = 0;
      }
      return key;
    }
    return undefined;
  }

  private compact(isLive: (key: string, version: number) => boolean): void {
    const keys: string[] = [];
    const versions: number[] = [];
    for (let i = this.head; i < this.keys.length; i++) {
      if (!isLive(this.keys[i], this.versions[i])) continue;
      keys.push(this.keys[i]);
      versions.push(this.versions[i]);
    }
    this.keys = keys;
    this.versions = versions;
    this.head = 0;
    this.stale = 0;
  }
}

interface Waiter {
  resolve(key: string | undefined): void;
  signal?: AbortSignal | undefined;
}

/** The waiters on one AbortSignal and the one listener that wakes them all. */
interface SignalWatch {
  waiters: Set<Waiter>;
  onAbort: () => void;
}

/** A work queue of string keys with collapse, per-key backoff and fair lanes. */
export class WorkQueue {
  readonly rateLimiter: RateLimiter;
  private readonly clock: Clock;
  private readonly metrics?: QueueMetricsSink | undefined;
  private readonly entries = new Map<string, Entry>();
  /** Ready keys per lane, in insertion (FIFO) order. */
  private readonly lanes: Record<Lane, LaneQueue> = {
    live: new LaneQueue(),
    initial: new LaneQueue(),
  };
  /** Whether a lane slot is live, per lane. */
  private readonly liveIn: Record<Lane, (key: string, version: number) => boolean> = {
    live: (key, version) => this.inLane(key, version, "live"),
    initial: (key, version) => this.inLane(key, version, "initial"),
  };
  private lastServed: Lane = "initial";
  private readonly delayed = new DelayHeap();
  private timer: TimerHandle | undefined;
  private timerAt = Number.POSITIVE_INFINITY;
  private waiters: Waiter[] = [];
  private readonly watches = new Map<AbortSignal, SignalWatch>();
  private processingCount = 0;
  private drainWaiters: (() => void)[] = [];
  private shutdown = false;

  constructor(opts: WorkQueueOptions = {}) {
    this.clock = opts.clock ?? realClock;
    this.rateLimiter = opts.rateLimiter ?? defaultControllerRateLimiter({ clock: this.clock });
    this.metrics = opts.metrics;
  }

  /** Adds `key` to be handed out as soon as a worker is free (and no backoff holds it). */
  add(key: string, opts: AddOptions = {}): void {
    this.schedule(key, this.clock.now(), opts.lane ?? "live");
  }

  /** Adds `key` to be handed out after `delayMs` (or earlier, if added sooner). Not a failure. */
  addAfter(key: string, delayMs: number, opts: AddOptions = {}): void {
    this.schedule(key, this.clock.now() + Math.max(0, delayMs), opts.lane ?? "live");
  }

  /**
   * Records a failure of `key` and adds it back after the rate limiter's delay.
   * The delay is a floor: nothing brings the key forward past it.
   */
  addRateLimited(key: string, opts: AddOptions = {}): void {
    if (this.shutdown) return;
    const now = this.clock.now();
    const gate = now + this.rateLimiter.when(key);
    this.metrics?.retried();
    this.schedule(key, gate, opts.lane ?? "live", gate);
  }

  /** Clears `key`'s failure count (call after a success). A scheduled retry stays scheduled. */
  forget(key: string): void {
    this.rateLimiter.forget(key);
  }

  /** Failures of `key` recorded since it was last forgotten. */
  numRequeues(key: string): number {
    return this.rateLimiter.retries(key);
  }

  /**
   * Hands out the next ready key, waiting for one if none is ready. Resolves to
   * undefined when the queue shuts down or `signal` aborts. The caller must call
   * `done(key)` when it has finished with the key.
   */
  get(signal?: AbortSignal): Promise<string | undefined> {
    const key = this.tryGet();
    if (key !== undefined || this.shutdown || signal?.aborted) return Promise.resolve(key);
    return new Promise((resolve) => {
      const waiter: Waiter = { resolve, signal };
      this.waiters.push(waiter);
      if (signal) this.watch(signal).waiters.add(waiter);
    });
  }

  /** The watch of `signal`: one abort listener for every waiter on it. */
  private watch(signal: AbortSignal): SignalWatch {
    let w = this.watches.get(signal);
    if (!w) {
      const watch: SignalWatch = {
        waiters: new Set(),
        onAbort: () => {
          this.watches.delete(signal);
          this.waiters = this.waiters.filter((x) => !watch.waiters.has(x));
          for (const x of watch.waiters) x.resolve(undefined);
        },
      };
      signal.addEventListener("abort", watch.onAbort, { once: true });
      this.watches.set(signal, watch);
      w = watch;
    }
    return w;
  }

  /** Forgets a waiter that was handed its answer; the last one on a signal removes its listener. */
  private unwatch(waiter: Waiter): void {
    const signal = waiter.signal;
    const w = signal && this.watches.get(signal);
    if (!signal || !w) return;
    w.waiters.delete(waiter);
    if (w.waiters.size === 0) {
      signal.removeEventListener("abort", w.onAbort);
      this.watches.delete(signal);
    }
  }

  /** Hands out the next ready key without waiting, or undefined if none is ready. */
  tryGet(): string | undefined {
    if (this.shutdown) return undefined;
    const now = this.clock.now();
    this.promoteDue(now);
    const lane = this.nextLane();
    if (!lane) return undefined;
    const key = this.lanes[lane].shift(this.liveIn[lane]);
    if (key === undefined) return undefined; // unreachable: the lane counted a live key
    this.lastServed = lane;
    const e = this.entries.get(key)!;
    e.phase = "processing";
    e.startedAt = now;
    this.processingCount++;
    this.metrics?.queued(now - e.readyAt);
    this.metrics?.depth(this.len());
    return key;
  }

  /** Marks `key` finished; if it was re-added meanwhile it is scheduled again. */
  done(key: string): void {
    const e = this.entries.get(key);
    if (e?.phase !== "processing") return;
    const now = this.clock.now();
    this.metrics?.worked(now - e.startedAt);
    this.processingCount--;
    if (e.pendingAt !== undefined && !this.shutdown) {
      const at = Math.max(e.pendingAt, e.gate);
      e.lane = e.pendingLane ?? "live";
      e.pendingAt = undefined;
      e.pendingLane = undefined;
      this.place(key, e, at);
    } else {
      this.entries.delete(key);
    }
    if (this.processingCount === 0 && this.drainWaiters.length > 0) {
      const ws = this.drainWaiters;
      this.drainWaiters = [];
      for (const w of ws) w();
    }
  }

  /** Keys ready for a worker now (the `workqueue_depth` figure). */
  len(): number {
    return this.lanes.live.size + this.lanes.initial.size;
  }

  /** Distinct keys the queue holds: ready, delayed or in flight. */
  get size(): number {
    return this.entries.size;
  }

  /** Keys currently held by workers. */
  get inFlight(): number {
    return this.processingCount;
  }

  /** Whether `key` is ready, delayed or in flight. */
  has(key: string): boolean {
    return this.entries.has(key);
  }

  /** When `key` will next be ready (clock ms), or undefined if it is not scheduled. */
  scheduledAt(key: string): number | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.phase === "processing") {
      return e.pendingAt === undefined ? undefined : Math.max(e.pendingAt, e.gate);
    }
    return e.readyAt;
  }

  /** For metrics: total and longest time (ms) the keys in flight have been held. */
  inFlightTimes(): { totalMs: number; longestMs: number } {
    const now = this.clock.now();
    let totalMs = 0;
    let longestMs = 0;
    if (this.processingCount === 0) return { totalMs, longestMs };
    for (const e of this.entries.values()) {
      if (e.phase !== "processing") continue;
      const ms = now - e.startedAt;
      totalMs += ms;
      if (ms > longestMs) longestMs = ms;
    }
    return { totalMs, longestMs };
  }

  get shuttingDown(): boolean {
    return this.shutdown;
  }

  /** Stops handing out keys: waiting `get`s resolve to undefined, adds are ignored. */
  shutDown(): void {
    if (this.shutdown) return;
    this.shutdown = true;
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    const ws = this.waiters.splice(0);
    for (const w of ws) {
      this.unwatch(w);
      w.resolve(undefined);
    }
  }

  /** Resolves when no key is in flight. */
  drain(): Promise<void> {
    if (this.processingCount === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  /** Shuts down and waits for the keys in flight to be done. */
  async shutDownWithDrain(): Promise<void> {
    this.shutDown();
    await this.drain();
  }

  /**
   * Schedules `key` at `at`, merged with any existing schedule by taking the
   * earlier time, and never before the key's backoff gate.
   */
  private schedule(key: string, at: number, lane: Lane, gate = 0): void {
    if (this.shutdown) return;
    const e = this.entries.get(key);
    if (!e) {
      const entry: Entry = { phase: "waiting", lane, readyAt: at, gate, version: 0, startedAt: 0 };
      this.entries.set(key, entry);
      this.metrics?.added();
      this.place(key, entry, Math.max(at, gate));
      return;
    }
    e.gate = Math.max(e.gate, gate);
    if (e.phase === "processing") {
      if (e.pendingAt === undefined) {
        e.pendingAt = Math.max(at, e.gate);
        e.pendingLane = lane;
        this.metrics?.added();
      } else {
        e.pendingAt = Math.max(Math.min(e.pendingAt, at), e.gate);
        if (lane === "live") e.pendingLane = "live";
      }
      return;
    }
    const target = Math.max(Math.min(e.readyAt, at), e.gate);
    const promote = lane === "live" && e.lane === "initial";
    if (e.phase === "ready") {
      if (target > e.readyAt) {
        // A failure pushed a ready key back behind its backoff.
        this.leaveLane(e);
        if (promote) e.lane = "live";
        this.place(key, e, target);
        this.metrics?.depth(this.len());
      } else if (promote) {
        this.leaveLane(e);
        e.phase = "ready";
        e.lane = "live";
        this.lanes.live.push(key, e.version);
      }
      return;
    }
    // waiting
    if (promote) e.lane = "live";
    if (target !== e.readyAt) this.place(key, e, target);
  }

  /** Puts a non-processing entry in a ready lane (if due) or the delay heap. */
  private place(key: string, e: Entry, at: number): void {
    const now = this.clock.now();
    e.readyAt = at;
    e.version++;
    if (at <= now) {
      e.phase = "ready";
      e.readyAt = now;
      this.lanes[e.lane].push(key, e.version);
      this.metrics?.depth(this.len());
      this.wake();
    } else {
      e.phase = "waiting";
      this.delayed.push({ at, key, version: e.version });
      if (this.delayed.size > HEAP_SLACK_FACTOR * this.entries.size + HEAP_SLACK_MIN) {
        this.compactHeap();
      }
      this.armTimer();
    }
  }

  /** Whether a lane slot (key, version) in `lane` is still its entry's place. */
  private inLane(key: string, version: number, lane: Lane): boolean {
    const e = this.entries.get(key);
    return e !== undefined && e.phase === "ready" && e.lane === lane && e.version === version;
  }

  /**
   * Takes a ready entry out of its lane's count; its slot goes stale once the
   * caller changes the entry (places it again, or moves it to the other lane).
   */
  private leaveLane(e: Entry): void {
    e.phase = "waiting";
    e.version++;
    this.lanes[e.lane].removed(this.liveIn[e.lane]);
  }

  /** Rebuilds the delay heap from the live schedules, dropping stale slots. */
  private compactHeap(): void {
    this.delayed.clear();
    for (const [key, e] of this.entries) {
      if (e.phase === "waiting") this.delayed.push({ at: e.readyAt, key, version: e.version });
    }
  }

  /** Moves delayed keys whose time has come into their ready lanes. */
  private promoteDue(now = this.clock.now()): void {
    let moved = false;
    for (let top = this.delayed.peek(); top && top.at <= now; top = this.delayed.peek()) {
      this.delayed.pop();
      const e = this.entries.get(top.key);
      if (e?.phase !== "waiting" || e.version !== top.version) continue;
      e.phase = "ready";
      e.readyAt = top.at;
      this.lanes[e.lane].push(top.key, e.version);
      moved = true;
    }
    if (moved) this.metrics?.depth(this.len());
  }

  private nextLane(): Lane | undefined {
    const live = this.lanes.live.size > 0;
    const initial = this.lanes.initial.size > 0;
    if (live && initial) return this.lastServed === "live" ? "initial" : "live";
    if (live) return "live";
    if (initial) return "initial";
    return undefined;
  }

  /** Hands ready keys to waiting workers. */
  private wake(): void {
    while (this.waiters.length > 0 && this.len() > 0) {
      const w = this.waiters.shift()!;
      this.unwatch(w);
      w.resolve(this.tryGet());
    }
  }

  private armTimer(): void {
    // Drop stale heap tops so the timer targets a live schedule.
    for (let top = this.delayed.peek(); top; top = this.delayed.peek()) {
      const e = this.entries.get(top.key);
      if (e && e.phase === "waiting" && e.version === top.version) break;
      this.delayed.pop();
    }
    const top = this.delayed.peek();
    if (!top) return;
    if (this.timer !== undefined && this.timerAt <= top.at) return;
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timerAt = top.at;
    this.timer = this.clock.setTimer(() => this.onTimer(), top.at - this.clock.now());
  }

  private onTimer(): void {
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    if (this.shutdown) return;
    this.promoteDue();
    this.wake();
    this.armTimer();
  }
}
