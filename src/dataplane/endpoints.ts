/**
 * The ready endpoints of a Service port, read from its EndpointSlices as every
 * data-plane part reads them: slices are grouped by their
 * `kubernetes.io/service-name` label; of each slice the port with the Service
 * port's name gives the number; an endpoint counts unless it is not ready or
 * terminating; FQDN slices are skipped; duplicates collapse; the result is
 * sorted, so equal inputs give equal tables.
 */
import type { EndpointSlice } from "@setpoint/api";

export const SERVICE_NAME_LABEL = "kubernetes.io/service-name";

/** An address and port to forward to. */
export interface Endpoint {
  ip: string;
  port: number;
}

/** "ip:port", the identity of an endpoint (for ejection and dedup). */
export function endpointId(ep: Endpoint): string {
  return `${ep.ip}:${ep.port}`;
}

/** Slices by "namespace/service" (slices without the service-name label are left out). */
export function slicesByService(slices: readonly EndpointSlice[]): Map<string, EndpointSlice[]> {
  const out = new Map<string, EndpointSlice[]>();
  for (const s of slices) {
    const svc = s.metadata.labels?.[SERVICE_NAME_LABEL];
    if (!svc) continue;
    const k = `${s.metadata.namespace ?? ""}/${svc}`;
    const list = out.get(k);
    if (list) list.push(s);
    else out.set(k, [s]);
  }
  return out;
}

/**
 * The ready endpoints of the Service port named `portName` ("" for an unnamed
 * port) in `slices` (one Service's), or undefined when there is no slice at all
 * (an object missing: callers keep what they had).
 */
export function readyEndpoints(
  slices: readonly EndpointSlice[] | undefined,
  portName: string,
): Endpoint[] | undefined {
  if (!slices || slices.length === 0) return undefined;
  const out: Endpoint[] = [];
  const seen = new Set<string>();
  for (const slice of slices) {
    if (slice.addressType === "FQDN") continue;
    const port = (slice.ports ?? []).find((p) => (p.name ?? "") === portName)?.port;
    if (port === undefined || port === null) continue;
    for (const ep of slice.endpoints ?? []) {
      if (ep.conditions?.ready === false || ep.conditions?.terminating === true) continue;
      for (const ip of ep.addresses ?? []) {
        const k = `${ip}:${port}`;
        if (seen.has(k)) continue;
        seen.add(k);
        out.push({ ip, port });
      }
    }
  }
  out.sort((a, b) => (a.ip === b.ip ? a.port - b.port : a.ip < b.ip ? -1 : 1));
  return out;
}
