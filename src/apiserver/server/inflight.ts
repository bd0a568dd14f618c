/**
 * How many requests the server works on at once, as kube-apiserver's
 * `--max-requests-inflight` and `--max-mutating-requests-inflight` bound them: reads
 * and writes each have their own seats, so a flood of one never starves the other;
 * long-running requests (watches) take none. A request that finds its kind full is
 * answered 429 with `Retry-After: 1` (clients such as client-go and the runtime's
 * send it again then), except from `system:masters`, which is always answered.
 */

export interface InflightLimits {
  /** Read-only requests (GET, HEAD, OPTIONS, not watches) at once; 0: no limit. */
  readOnly: number;
  /** Mutating requests at once; 0: no limit. */
  mutating: number;
}

/** kube-apiserver's defaults: 400 and 200. */
export const DEFAULT_INFLIGHT_LIMITS: Readonly<InflightLimits> = Object.freeze({
  readOnly: 400,
  mutating: 200,
});

export type InflightKind = keyof InflightLimits;

/** kube-apiserver's answer to a request it has no seat for (plain text, as Go's http.Error). */
export const TOO_MANY_REQUESTS_TEXT = "Too many requests, please try again later.\n";

/** The seats of each kind in use. */
export class InflightSeats {
  readonly #limits: InflightLimits;
  readonly #used: Record<InflightKind, number> = { readOnly: 0, mutating: 0 };

  constructor(limits: Partial<InflightLimits> = {}) {
    this.#limits = { ...DEFAULT_INFLIGHT_LIMITS, ...limits };
  }

  /** Takes a seat of `kind`; false when all are taken. */
  take(kind: InflightKind): boolean {
    const limit = this.#limits[kind];
    if (limit > 0 && this.#used[kind] >= limit) return false;
    this.#used[kind]++;
    return true;
  }

  /** Gives back a seat `take` gave. */
  give(kind: InflightKind): void {
    this.#used[kind]--;
  }

  /** Seats of `kind` in use now. */
  used(kind: InflightKind): number {
    return this.#used[kind];
  }
}
