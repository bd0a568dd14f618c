/** A clock for tests of the queue's and limiters' own logic: time moves only on `advance`. */
import type { Clock, TimerHandle } from "../../packages/runtime/src/clock.ts";

interface Timer {
  id: number;
  at: number;
  fn: () => void;
}

export class FakeClock implements Clock {
  private t = 0;
  private nextId = 1;
  private timers: Timer[] = [];

  constructor(start = 0) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  setTimer(fn: () => void, delayMs: number): TimerHandle {
    const timer = { id: this.nextId++, at: this.t + Math.max(0, delayMs), fn };
    this.timers.push(timer);
    return timer.id;
  }

  clearTimer(handle: TimerHandle): void {
    this.timers = this.timers.filter((t) => t.id !== handle);
  }

  get pendingTimers(): number {
    return this.timers.length;
  }

  /** Moves time forward by `ms`, firing due timers in time order. */
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      let next: Timer | undefined;
      for (const t of this.timers) if (t.at <= end && (!next || t.at < next.at)) next = t;
      if (!next) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.t = Math.max(this.t, next.at);
      next.fn();
    }
    this.t = end;
  }
}
