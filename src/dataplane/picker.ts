/**
 * Choosing an endpoint without asking anyone: round-robin per backend over the
 * endpoints not ejected, and passive ejection of an endpoint whose connection
 * failed (for `ejectMs`, doubling with each consecutive failure up to
 * MAX_EJECT_MS; a success forgets it). When every endpoint is ejected they are
 * tried anyway (an ejection is a guess; refusing outright would fail closed).
 */
import { type Endpoint, endpointId } from "./endpoints.ts";

/** Longest an endpoint stays ejected. */
export const MAX_EJECT_MS = 60_000;
/** Default base ejection time. */
export const DEFAULT_EJECT_MS = 5_000;

interface EjectState {
  until: number;
  count: number;
}

export class EndpointPicker {
  private readonly ejected = new Map<string, EjectState>();
  private readonly cursor = new Map<string, number>();

  constructor(private readonly ejectMs = DEFAULT_EJECT_MS) {}

  /** The next endpoint of `backend` not in `tried` (ids): not ejected if any such, else any. */
  pick(
    backend: string,
    eps: readonly Endpoint[],
    tried: ReadonlySet<string>,
  ): Endpoint | undefined {
    const now = Date.now();
    const start = this.cursor.get(backend) ?? 0;
    let fallback: Endpoint | undefined;
    for (let i = 0; i < eps.length; i++) {
      const ep = eps[(start + i) % eps.length]!;
      const id = endpointId(ep);
      if (tried.has(id)) continue;
      const ej = this.ejected.get(id);
      if (ej && ej.until > now) {
        fallback ??= ep;
        continue;
      }
      this.cursor.set(backend, (start + i + 1) % eps.length);
      return ep;
    }
    return fallback;
  }

  /** Ejects `ep` after a failure; returns for how long, ms. */
  fail(ep: Endpoint): number {
    const id = endpointId(ep);
    const count = (this.ejected.get(id)?.count ?? 0) + 1;
    const ms = Math.min(this.ejectMs * 2 ** (count - 1), MAX_EJECT_MS);
    this.ejected.set(id, { until: Date.now() + ms, count });
    return ms;
  }

  /** `ep` answered: it is no longer ejected. */
  ok(ep: Endpoint): void {
    if (this.ejected.size) this.ejected.delete(endpointId(ep));
  }

  /** Whether `ep` is ejected now. */
  isEjected(ep: Endpoint): boolean {
    return (this.ejected.get(endpointId(ep))?.until ?? 0) > Date.now();
  }
}
