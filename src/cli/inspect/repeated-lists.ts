/**
 * Repeated lists: a client that lists a whole collection again and again, the seeds'
 * quadratic trap ("a controller that lists the whole collection inside every
 * per-object reconcile defeats the cache"). An informer lists once when it starts
 * (and again only after its watch is lost for long); a reconcile loop that lists
 * per object lists once per object handled, so its rate follows the work.
 *
 * Read from the apiserver's /metrics: `setpoint_apiserver_client_list_requests_total`
 * counts lists of a whole collection (no selector, first page) by client (user agent
 * product name), group and resource. Doctor reads it before and after its sample
 * window; a client whose lists of one resource reach the threshold rate in that
 * window is reported. Servers without the metric (a real kube-apiserver) are
 * reported as not checked.
 */

/** The metric doctor reads (served by Setpoint's apiserver). */
export const CLIENT_LISTS_METRIC = "setpoint_apiserver_client_list_requests_total";
/** Default: whole-collection lists per second, by one client of one resource, worth a warning. */
export const DEFAULT_REPEATED_LIST_RATE = 1;
/** Fewer lists than this in the window are never reported, whatever the rate. */
export const REPEATED_LIST_MIN_LISTS = 5;

export interface RepeatedList {
  client: string;
  group: string;
  resource: string;
  /** Whole-collection lists seen in the window. */
  lists: number;
  windowMs: number;
  /** All such lists since the apiserver started. */
  total: number;
}

/** Counts by "client\tgroup\tresource" from Prometheus text; undefined when the metric is absent. */
export function parseClientLists(text: string): Map<string, number> | undefined {
  const counts = new Map<string, number>();
  let seen = text.includes(`# TYPE ${CLIENT_LISTS_METRIC} `);
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${CLIENT_LISTS_METRIC}{`)) continue;
    seen = true;
    const m = /^[^{]+\{(.*)\} (\S+)$/.exec(line);
    if (!m) continue;
    const labels = new Map<string, string>();
    for (const [, k, v] of m[1].matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels.set(k, v);
    const key = [
      labels.get("client") ?? "",
      labels.get("group") ?? "",
      labels.get("resource") ?? "",
    ].join("\t");
    counts.set(key, Number(m[2]));
  }
  return seen ? counts : undefined;
}

/** Clients whose whole-collection lists between two readings reach `rate` per second. */
export function repeatedLists(
  before: Map<string, number>,
  after: Map<string, number>,
  windowMs: number,
  rate: number,
): RepeatedList[] {
  if (windowMs <= 0) return [];
  const out: RepeatedList[] = [];
  for (const [key, total] of after) {
    const lists = total - (before.get(key) ?? 0);
    if (lists < REPEATED_LIST_MIN_LISTS || lists / (windowMs / 1000) < rate) continue;
    const [client, group, resource] = key.split("\t");
    out.push({ client, group, resource, lists, windowMs, total });
  }
  return out.sort((a, b) => b.lists - a.lists);
}
