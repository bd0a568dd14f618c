/** Timing helpers shared by the benchmarks. */

/** Milliseconds on a monotonic clock. */
export function now(): number {
  return performance.now();
}

/** Operations per second achieved by a run. */
export interface Rate {
  ops: number;
  seconds: number;
  perSecond: number;
}

export function rate(ops: number, ms: number): Rate {
  const seconds = ms / 1000;
  return { ops, seconds, perSecond: seconds > 0 ? ops / seconds : 0 };
}

/** Runs `op` synchronously in a loop for `durationMs`; returns the rate. */
export function loopFor(durationMs: number, op: (i: number) => void): Rate {
  const start = now();
  const end = start + durationMs;
  let ops = 0;
  while (now() < end) {
    // Check the clock every few operations only: reading it costs as much as a tiny op.
    for (let k = 0; k < 16; k++) op(ops++);
  }
  return rate(ops, now() - start);
}

/**
 * Runs `callers` async loops calling `op` until `durationMs` has passed (each caller
 * awaits its previous call before the next); returns the combined rate.
 */
export async function callersFor(
  callers: number,
  durationMs: number,
  op: (caller: number, i: number) => Promise<unknown>,
): Promise<Rate> {
  const start = now();
  const end = start + durationMs;
  let ops = 0;
  await Promise.all(
    Array.from({ length: callers }, async (_, caller) => {
      for (let i = 0; now() < end; i++) {
        await op(caller, i);
        ops++;
      }
    }),
  );
  return rate(ops, now() - start);
}

/** The p-th percentile (0..100) of `samples` (sorted in place), nearest-rank. */
export function percentile(samples: number[] | Float64Array, p: number): number {
  if (samples.length === 0) return Number.NaN;
  samples.sort((a, b) => a - b);
  const rank = Math.min(samples.length - 1, Math.max(0, Math.ceil((p / 100) * samples.length) - 1));
  return samples[rank];
}

/** A growable list of numbers kept in typed arrays (millions of latency samples). */
export class Samples {
  #data = new Float64Array(1024);
  #length = 0;
  push(value: number): void {
    if (this.#length === this.#data.length) {
      const bigger = new Float64Array(this.#data.length * 2);
      bigger.set(this.#data);
      this.#data = bigger;
    }
    this.#data[this.#length++] = value;
  }
  get length(): number {
    return this.#length;
  }
  /** The samples, as a sortable typed array. */
  values(): Float64Array {
    return this.#data.subarray(0, this.#length);
  }
}

/** Adds up rates measured in slices. */
export function combine(rates: Rate[]): Rate {
  const ops = rates.reduce((sum, r) => sum + r.ops, 0);
  const ms = rates.reduce((sum, r) => sum + r.seconds * 1000, 0);
  return rate(ops, ms);
}

/**
 * Measures two competitors under the same conditions on a shared, noisy machine:
 * alternates slices of each, `rounds` times, and returns each one's combined rate.
 */
export async function interleaved(
  totalMs: number,
  rounds: number,
  a: (ms: number) => Rate | Promise<Rate>,
  b: (ms: number) => Rate | Promise<Rate>,
): Promise<[Rate, Rate]> {
  const slice = totalMs / rounds;
  const ra: Rate[] = [];
  const rb: Rate[] = [];
  for (let i = 0; i < rounds; i++) {
    ra.push(await a(slice));
    rb.push(await b(slice));
  }
  return [combine(ra), combine(rb)];
}
