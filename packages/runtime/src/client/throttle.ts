/**
 * The client's own rate limit: a token bucket refilled at `qps` tokens per second
 * holding at most `burst`. Callers that find it empty reserve a future token and
 * wait for it, so waiting callers are served in arrival order.
 */
import { sleep } from "./errors.ts";

export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    private readonly qps: number,
    private readonly burst: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    if (!(qps > 0)) throw new RangeError(`qps must be positive, got ${qps}`);
    this.burst = Math.max(1, Math.floor(burst));
    this.tokens = this.burst;
    this.last = this.now();
  }

  /** How long, in ms, a caller would wait now. */
  delayMs(): number {
    this.refill();
    return this.tokens >= 1 ? 0 : ((1 - this.tokens) / this.qps) * 1000;
  }

  /** Takes one token, waiting for it if the bucket is empty. */
  async take(signal?: AbortSignal): Promise<void> {
    const wait = this.delayMs();
    this.tokens -= 1;
    if (wait > 0) {
      try {
        await sleep(wait, signal);
      } catch (e) {
        this.tokens += 1;
        throw e;
      }
    }
  }

  private refill(): void {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.qps);
    this.last = t;
  }
}
