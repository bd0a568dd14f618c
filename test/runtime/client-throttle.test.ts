import { describe, expect, it } from "vitest";
import { TokenBucket } from "../../packages/runtime/src/client/throttle.ts";
import { startForFile, startTestServer } from "../helpers/test-server.ts";

describe("TokenBucket", () => {
  it("allows a burst, then one token per 1/qps, refilling up to the burst", () => {
    let now = 0;
    const b = new TokenBucket(10, 3, () => now);
    for (let i = 0; i < 3; i++) {
      expect(b.delayMs()).toBe(0);
      void b.take();
    }
    // Empty: the next token comes in 100 ms.
    expect(b.delayMs()).toBeCloseTo(100);
    now += 50;
    expect(b.delayMs()).toBeCloseTo(50);
    now += 10_000;
    // Refilled, but never above the burst.
    for (let i = 0; i < 3; i++) {
      expect(b.delayMs()).toBe(0);
      void b.take();
    }
    expect(b.delayMs()).toBeGreaterThan(0);
    expect(() => new TokenBucket(0, 1)).toThrow(RangeError);
  });

  it("gives back the token of a caller that gave up waiting", async () => {
    let now = 0;
    const b = new TokenBucket(1, 1, () => now);
    await b.take();
    const ac = new AbortController();
    const waiting = b.take(ac.signal);
    ac.abort(new Error("gave up"));
    await expect(waiting).rejects.toThrow("gave up");
    now += 1000;
    expect(b.delayMs()).toBe(0);
  });
});

const env = startForFile(startTestServer);

describe("client rate limit", () => {
  it("spaces requests beyond the burst at the configured rate", async () => {
    const client = env.newClient({ qps: 20, burst: 2 });
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: 6 }, () =>
        client.get({ apiVersion: "v1", kind: "Namespace" }, "default"),
      ),
    );
    const elapsed = performance.now() - t0;
    // 7 requests (discovery + 6 gets), 2 in the burst: at least 5 × 50 ms.
    expect(client.stats.requests).toBe(7);
    expect(elapsed).toBeGreaterThanOrEqual(5 * 50 - 5);
  });
});
