/**
 * Bounded concurrency for work over many objects in one reconcile (orphaning a
 * thousand dependents, listing every kind): at most `limit` calls in flight,
 * every item attempted even when some fail.
 */

/**
 * Runs `fn` over `items` with at most `limit` calls in flight and resolves to
 * the results in the items' order. Every item is attempted; if any call
 * failed, rejects once all have settled, with the failure that happened first.
 */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      try {
        out[i] = await fn(items[i], i);
      } catch (e) {
        failure ??= { error: e };
      }
    }
  };
  const workers = Math.max(1, Math.min(Math.floor(limit) || 1, items.length));
  await Promise.all(Array.from({ length: workers }, worker));
  if (failure) throw failure.error;
  return out;
}
