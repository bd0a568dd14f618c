/**
 * Time as the runtime sees it. The work queue, rate limiters and leader election
 * read the time and set timers only through a `Clock`, so their logic can be
 * driven step by step in tests; production code uses `realClock`.
 */

/** An opaque handle returned by `Clock.setTimer`. */
export type TimerHandle = unknown;

export interface Clock {
  /** Milliseconds since an arbitrary, fixed origin; never goes backwards. */
  now(): number;
  /** Calls `fn` once, `delayMs` from now. */
  setTimer(fn: () => void, delayMs: number): TimerHandle;
  /** Cancels a timer set with `setTimer`; cancelling a fired timer is a no-op. */
  clearTimer(handle: TimerHandle): void;
}

/** The largest delay Node's timers accept (about 24.8 days); longer ones are clamped. */
export const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/** The process clock: monotonic `performance.now()` and Node timers. */
export const realClock: Clock = {
  now: () => performance.now(),
  setTimer: (fn, delayMs) => setTimeout(fn, Math.min(Math.max(0, delayMs), MAX_TIMER_DELAY_MS)),
  clearTimer: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** Resolves after `ms` on `clock`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal, clock: Clock = realClock): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clock.clearTimer(handle);
      reject(signal?.reason);
    };
    const handle = clock.setTimer(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
