/**
 * The cost meter of the CEL rule being evaluated: expression nodes and functions
 * whose work grows with their input charge it, and a rule that runs past its
 * limit is cut off with COST_EXCEEDED.
 */

/** The cost meter of the rule being evaluated (one rule runs at a time). */
export interface CostMeter {
  cost: number;
  limit: number;
}

let current: CostMeter | undefined;

/** Thrown (one shared instance, no stack) when a rule runs past its cost limit. */
export const COST_EXCEEDED: Error = new Error("operation cancelled: actual cost limit exceeded");

/** Runs `fn(arg)` with `meter` counting the cost of everything it evaluates. */
export function withMeter<A, T>(meter: CostMeter, fn: (arg: A) => T, arg: A): T {
  const previous = current;
  current = meter;
  try {
    return fn(arg);
  } finally {
    current = previous;
  }
}

/**
 * Counts one evaluated expression node against the running rule's meter; throws
 * COST_EXCEEDED past its limit.
 */
export function tick(): void {
  const m = current;
  if (m !== undefined && ++m.cost > m.limit) throw COST_EXCEEDED;
}

/** Adds `n` to the running rule's cost; throws COST_EXCEEDED past its limit. */
export function charge(n: number): void {
  const m = current;
  if (!m) return;
  m.cost += n;
  if (m.cost > m.limit) throw COST_EXCEEDED;
}
