/** Waiting in tests: polling for a state that comes about asynchronously, and plain sleeps. */

/** How long eventually() polls unless told otherwise. */
export const EVENTUALLY_TIMEOUT_MS = 10_000;
/** Pause between two polls. */
const POLL_INTERVAL_MS = 20;

/**
 * Polls `fn` until it returns something truthy (returned) or `timeoutMs` passes
 * (throws "timed out waiting for `what`", with the last error `fn` threw). Errors
 * thrown by `fn` count as "not yet".
 */
export async function eventually<T>(
  fn: () => T | Promise<T>,
  what = "condition",
  timeoutMs = EVENTUALLY_TIMEOUT_MS,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as NonNullable<T>;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    }
    await sleep(POLL_INTERVAL_MS);
  }
}

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
