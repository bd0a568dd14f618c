/**
 * Rate limiters decide how long a failed key waits before its next attempt.
 * `when(key)` records one more failure of `key` and returns the delay for the
 * retry; `forget(key)` clears the key's history after a success.
 *
 * The default (`defaultControllerRateLimiter`) is the maximum of a per-key
 * exponential backoff (5 ms doubling to 1000 s, with jitter) and an overall token
 * bucket (10 retries per second, bursts of 100), the same shape as client-go's
 * default controller rate limiter: one broken key backs off on its own, and a
 * storm of failures across many keys cannot exceed the bucket's rate.
 */
import { type Clock, realClock } from "../clock.ts";

export interface RateLimiter {
  /** Records a failure of `key` and returns how long (ms) to wait before retrying it. */
  when(key: string): number;
  /** Clears `key`'s failure history (call after a success). */
  forget(key: string): void;
  /** How many failures of `key` have been recorded since it was last forgotten. */
  retries(key: string): number;
}

/** First retry delay of the default per-key backoff (controller-runtime's 5 ms). */
export const DEFAULT_BASE_DELAY_MS = 5;
/** Cap of the default per-key backoff (controller-runtime's 1000 s). */
export const DEFAULT_MAX_DELAY_MS = 1_000_000;
/**
 * Default jitter: each delay is shortened by a random fraction of at most this
 * much, so keys that failed together do not retry together. Jitter only shortens,
 * so the cap is never exceeded and stays jittered too.
 */
export const DEFAULT_JITTER = 0.1;
/** Default overall retry rate (tokens per second) of the token bucket. */
export const DEFAULT_RETRY_QPS = 10;
/** Default burst (bucket size) of the token bucket. */
export const DEFAULT_RETRY_BURST = 100;

export interface ExponentialBackoffOptions {
  baseDelayMs?: number | undefined;
  maxDelayMs?: number | undefined;
  /** Fraction in [0, 1): delays are drawn from [(1 - jitter) * d, d]. */
  jitter?: number | undefined;
  /** Source of randomness in [0, 1); `Math.random` by default. */
  random?: (() => number) | undefined;
}

/**
 * Per-key exponential backoff: the n-th consecutive failure (n from 0) waits
 * `min(maxDelay, baseDelay * 2^n)`, shortened by jitter. Memory: one map entry
 * per key that has failed and not been forgotten.
 */
export class ExponentialBackoffRateLimiter implements RateLimiter {
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly jitter: number;
  private readonly random: () => number;
  private readonly failures = new Map<string, number>();

  constructor(opts: ExponentialBackoffOptions = {}) {
    this.baseDelayMs = opts.baseDelayMs ?? DEFAULT_BASE_DELAY_MS;
    this.maxDelayMs = opts.maxDelayMs ?? DEFAULT_MAX_DELAY_MS;
    this.jitter = opts.jitter ?? DEFAULT_JITTER;
    this.random = opts.random ?? Math.random;
    if (!(this.baseDelayMs > 0) || !(this.maxDelayMs >= this.baseDelayMs)) {
      throw new RangeError("backoff needs 0 < baseDelayMs <= maxDelayMs");
    }
    if (!(this.jitter >= 0 && this.jitter < 1)) throw new RangeError("jitter must be in [0, 1)");
  }

  /** The un-jittered delay of the n-th consecutive failure (n from 0). */
  delayFor(n: number): number {
    // 2^n overflows to Infinity for large n; min() then caps it.
    return Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** n);
  }

  when(key: string): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    return this.delayFor(n) * (1 - this.jitter * this.random());
  }

  forget(key: string): void {
    this.failures.delete(key);
  }

  retries(key: string): number {
    return this.failures.get(key) ?? 0;
  }
}

export interface TokenBucketOptions {
  qps?: number | undefined;
  burst?: number | undefined;
  clock?: Clock | undefined;
}

/**
 * An overall token bucket shared by all keys: `burst` tokens, refilled at `qps`
 * per second. Each `when` reserves one token, possibly in the future, and returns
 * the wait until it is available, so the n-th retry beyond the burst waits
 * `(n - burst) / qps` seconds. It keeps no per-key state.
 */
export class TokenBucketRateLimiter implements RateLimiter {
  readonly qps: number;
  readonly burst: number;
  private readonly clock: Clock;
  private tokens: number;
  private last: number;

  constructor(opts: TokenBucketOptions = {}) {
    this.qps = opts.qps ?? DEFAULT_RETRY_QPS;
    this.burst = opts.burst ?? DEFAULT_RETRY_BURST;
    if (!(this.qps > 0) || !(this.burst >= 1))
      throw new RangeError("bucket needs qps > 0 and burst >= 1");
    this.clock = opts.clock ?? realClock;
    this.tokens = this.burst;
    this.last = this.clock.now();
  }

  when(_key: string): number {
    const now = this.clock.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens / this.qps) * 1000;
  }

  forget(_key: string): void {}

  retries(_key: string): number {
    return 0;
  }
}

/** Waits as long as the slowest of several limiters; every limiter records each failure. */
export class MaxOfRateLimiter implements RateLimiter {
  private readonly limiters: RateLimiter[];

  constructor(...limiters: RateLimiter[]) {
    if (limiters.length === 0) throw new RangeError("MaxOfRateLimiter needs at least one limiter");
    this.limiters = limiters;
  }

  when(key: string): number {
    let delay = 0;
    for (const l of this.limiters) delay = Math.max(delay, l.when(key));
    return delay;
  }

  forget(key: string): void {
    for (const l of this.limiters) l.forget(key);
  }

  retries(key: string): number {
    let n = 0;
    for (const l of this.limiters) n = Math.max(n, l.retries(key));
    return n;
  }
}

export interface ControllerRateLimiterOptions extends ExponentialBackoffOptions {
  qps?: number | undefined;
  burst?: number | undefined;
  clock?: Clock | undefined;
}

/** Per-key exponential backoff combined with an overall token bucket (see the module doc). */
export function defaultControllerRateLimiter(opts: ControllerRateLimiterOptions = {}): RateLimiter {
  return new MaxOfRateLimiter(
    new ExponentialBackoffRateLimiter(opts),
    new TokenBucketRateLimiter({ qps: opts.qps, burst: opts.burst, clock: opts.clock }),
  );
}
