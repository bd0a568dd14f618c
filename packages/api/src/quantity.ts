/**
 * Resource quantities ("500m", "2", "128Mi", "1G") as numbers (for the
 * agent's resourceFieldRef and Node capacity, and the scheduler's fit).
 */

const SUFFIX: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  "": 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/** The value of a quantity; undefined when it is not one. */
export function parseQuantity(q: string | number | undefined): number | undefined {
  if (q === undefined) return undefined;
  if (typeof q === "number") return q;
  const m = /^([+-]?[0-9.]+)(?:[eE]([+-]?\d+))?([a-zA-Z]*)$/.exec(q.trim());
  if (!m || !(m[3] in SUFFIX)) return undefined;
  return Number(m[1]) * 10 ** Number(m[2] ?? 0) * SUFFIX[m[3]];
}
