/**
 * What every built-in controller looks like to the controller manager: a name
 * it can be switched off by, a `setup` that registers its loops with the
 * runtime Manager (so they run only while the manager leads), and an optional
 * `start` for what runs beside the manager's shared cache (its own informers,
 * discovery), from manager start to shutdown, leader or not.
 */
import type { Manager } from "../runtime/index.ts";

export interface BuiltinController {
  /** The name `--disable` takes. */
  readonly name: string;
  /** Registers controllers, health checks and metrics with `mgr` (before it starts). */
  setup(mgr: Manager): void;
  /** Starts background parts until `signal` aborts. */
  start?(signal: AbortSignal): void;
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
