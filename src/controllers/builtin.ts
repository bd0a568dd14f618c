/**
 * What every built-in controller looks like to the controller manager: a name
 * it can be switched off by, and a `setup` that registers its parts with the
 * runtime Manager: its loops (which run only while the manager leads) and what
 * runs beside them, leader or not (discovery, side informers), as runnables
 * whose lifecycle and readiness the Manager owns.
 */
import type { Manager } from "../runtime/index.ts";

export interface BuiltinController {
  /** The name `--disable` takes. */
  readonly name: string;
  /** Registers controllers, runnables, health checks and metrics with `mgr` (before it starts). */
  setup(mgr: Manager): void;
}

/** Runs `fn` over `items`, at most `limit` at a time; rejects with the first error once all settled. */
export async function forEachLimit<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  let firstError: unknown;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++];
      try {
        await fn(item);
      } catch (e) {
        if (!failed) {
          failed = true;
          firstError = e;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  if (failed) throw firstError;
}

/** Resolves after `ms`, or early (without error) when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}
