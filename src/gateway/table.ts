/**
 * The route table: everything the gateway needs to route a request (rules,
 * resolved endpoints, TLS material), built from Ingresses, IngressClasses,
 * Services, EndpointSlices and Secrets by a pure function, and matched on the
 * request path without any other input.
 *
 * Precedence (as Kubernetes documents it for Ingress):
 * - Hosts: an exact host beats a wildcard (`*.example.com`, one DNS label), which
 *   beats rules without a host. The most specific host that has rules is chosen;
 *   its paths are matched, and when none matches the default backend serves.
 * - Paths: `Exact` matches the whole path; `Prefix` (and `ImplementationSpecific`)
 *   matches by path elements (`/foo` matches `/foo`, `/foo/` and `/foo/bar`, never
 *   `/foobar`; a trailing slash in the rule is ignored). The longest rule path
 *   wins; at the same length `Exact` beats `Prefix`; then the older Ingress.
 * - Default backend: the oldest matching Ingress's `spec.defaultBackend`.
 *
 * Static stability: when a backend's new resolution comes out empty because an
 * object it names is missing (no Service, no EndpointSlice, an unknown port), the
 * previous table's endpoints for that backend are kept; likewise a TLS entry whose
 * Secret is missing keeps its previous material. Only a present Service whose
 * present slices hold no ready endpoint empties a backend.
 */
import type { EndpointSlice, Ingress, IngressClass, KubeObject, Service } from "@setpoint/api";
import { type Endpoint, readyEndpoints, slicesByService } from "../dataplane/index.ts";

export type { Endpoint } from "../dataplane/index.ts";
export { SERVICE_NAME_LABEL } from "../dataplane/index.ts";

export const TABLE_VERSION = 1;
export const DEFAULT_CLASS_ANNOTATION = "ingressclass.kubernetes.io/is-default-class";
export const LEGACY_CLASS_ANNOTATION = "kubernetes.io/ingress.class";

export type PathType = "Exact" | "Prefix" | "ImplementationSpecific";

/** A Service port an Ingress names, with its resolved endpoints. */
export interface Backend {
  /** "namespace/service:port" (port as the Ingress names it). */
  key: string;
  endpoints: Endpoint[];
}

export interface Route {
  /** "namespace/name" of the Ingress. */
  ingress: string;
  /** "" (any host), "a.example.com", or "*.example.com". */
  host: string;
  path: string;
  pathType: PathType;
  backend: string;
}

export interface TlsEntry {
  /** "namespace/name" of the Secret. */
  secret: string;
  hosts: string[];
  cert: string;
  key: string;
}

export interface RouteTable {
  version: number;
  /** When the table was last known to match the API (ISO time). */
  syncedAt: string;
  routes: Route[];
  defaultBackend?: { ingress: string; backend: string } | undefined;
  backends: Record<string, Endpoint[]>;
  tls: TlsEntry[];
}

export interface TableInputs {
  className: string;
  ingresses: readonly Ingress[];
  classes: readonly IngressClass[];
  services: readonly Service[];
  slices: readonly EndpointSlice[];
  secrets: readonly KubeObject[];
}

function nsName(o: KubeObject): string {
  return `${o.metadata.namespace ?? ""}/${o.metadata.name}`;
}

function byAge(a: Ingress, b: Ingress): number {
  const ta = a.metadata.creationTimestamp ?? "";
  const tb = b.metadata.creationTimestamp ?? "";
  if (ta !== tb) return ta < tb ? -1 : 1;
  return nsName(a) < nsName(b) ? -1 : nsName(a) > nsName(b) ? 1 : 0;
}

/** Whether an Ingress belongs to the class: by name, by the old annotation, or as default. */
export function ingressInClass(
  ing: Ingress,
  className: string,
  classes: readonly IngressClass[],
): boolean {
  const named = ing.spec?.ingressClassName ?? ing.metadata.annotations?.[LEGACY_CLASS_ANNOTATION];
  if (named) return named === className;
  const cls = classes.find((c) => c.metadata.name === className);
  return cls?.metadata.annotations?.[DEFAULT_CLASS_ANNOTATION] === "true";
}

interface ServiceBackendRef {
  name: string;
  port?: { number?: number | undefined; name?: string | undefined } | undefined;
}

function backendKey(ns: string, ref: ServiceBackendRef): string {
  const port = ref.port?.name ?? String(ref.port?.number ?? "");
  return `${ns}/${ref.name}:${port}`;
}

/**
 * The ready endpoints of a Service port, or undefined when an object it needs is
 * missing (no Service, no port of that number or name, no EndpointSlice).
 */
function resolve(
  ns: string,
  ref: ServiceBackendRef,
  services: Map<string, Service>,
  slices: Map<string, EndpointSlice[]>,
): Endpoint[] | undefined {
  const svc = services.get(`${ns}/${ref.name}`);
  if (!svc) return undefined;
  const sp = (svc.spec?.ports ?? []).find((p) =>
    ref.port?.name !== undefined ? p.name === ref.port.name : p.port === ref.port?.number,
  );
  if (!sp) return undefined;
  return readyEndpoints(slices.get(`${ns}/${ref.name}`), sp.name ?? "");
}

function normalizeHost(h: string): string {
  return h.toLowerCase().replace(/\.$/, "");
}

export interface BuildResult {
  table: RouteTable;
  /** What was kept from the previous table or skipped, for logs. */
  warnings: string[];
  /** The Ingresses of the class, for status. */
  ingresses: Ingress[];
}

/** Builds a table from the API's objects, keeping `previous`'s material where objects are missing. */
export function buildTable(inputs: TableInputs, previous?: RouteTable): BuildResult {
  const warnings: string[] = [];
  const services = new Map(inputs.services.map((s) => [nsName(s), s]));
  const slices = slicesByService(inputs.slices);
  const secrets = new Map(inputs.secrets.map((s) => [nsName(s), s]));
  const ingresses = inputs.ingresses
    .filter((i) => !i.metadata.deletionTimestamp)
    .filter((i) => ingressInClass(i, inputs.className, inputs.classes))
    .sort(byAge);

  const backends: Record<string, Endpoint[]> = {};
  const use = (ing: Ingress, ref: ServiceBackendRef | undefined): string | undefined => {
    if (!ref?.name) return undefined;
    const ns = ing.metadata.namespace ?? "";
    const key = backendKey(ns, ref);
    if (!(key in backends)) {
      const eps = resolve(ns, ref, services, slices);
      if (eps) backends[key] = eps;
      else {
        const kept = previous?.backends[key];
        backends[key] = kept ?? [];
        warnings.push(
          `backend ${key} of Ingress ${nsName(ing)}: Service, port or EndpointSlice missing; ` +
            (kept ? `keeping its ${kept.length} previous endpoints` : "no endpoints"),
        );
      }
    }
    return key;
  };

  const routes: Route[] = [];
  let defaultBackend: RouteTable["defaultBackend"];
  const tls: TlsEntry[] = [];
  for (const ing of ingresses) {
    const id = nsName(ing);
    const db = use(ing, ing.spec?.defaultBackend?.service);
    if (db && !defaultBackend) defaultBackend = { ingress: id, backend: db };
    for (const rule of ing.spec?.rules ?? []) {
      const host = normalizeHost(rule.host ?? "");
      for (const p of rule.http?.paths ?? []) {
        const backend = use(ing, p.backend.service);
        if (!backend) continue;
        routes.push({
          ingress: id,
          host,
          path: p.path || "/",
          pathType: (p.pathType as PathType) ?? "ImplementationSpecific",
          backend,
        });
      }
    }
    for (const t of ing.spec?.tls ?? []) {
      if (!t.secretName) continue;
      const sid = `${ing.metadata.namespace ?? ""}/${t.secretName}`;
      const hosts = (t.hosts ?? []).map(normalizeHost);
      const secret = secrets.get(sid) as { data?: Record<string, string> } | undefined;
      const crt = secret?.data?.["tls.crt"];
      const key = secret?.data?.["tls.key"];
      if (crt && key) {
        tls.push({
          secret: sid,
          hosts,
          cert: Buffer.from(crt, "base64").toString("utf8"),
          key: Buffer.from(key, "base64").toString("utf8"),
        });
        continue;
      }
      const kept = previous?.tls.find((e) => e.secret === sid);
      warnings.push(
        `TLS Secret ${sid} of Ingress ${id} is missing or incomplete` +
          (kept ? "; keeping its previous certificate" : ""),
      );
      if (kept) tls.push({ ...kept, hosts });
    }
  }
  return {
    table: {
      version: TABLE_VERSION,
      syncedAt: new Date().toISOString(),
      routes,
      defaultBackend,
      backends,
      tls,
    },
    warnings,
    ingresses,
  };
}

/** Whether two tables route the same (ignoring when they were synced). */
export function sameRoutes(a: RouteTable | undefined, b: RouteTable): boolean {
  if (!a) return false;
  return JSON.stringify({ ...a, syncedAt: "" }) === JSON.stringify({ ...b, syncedAt: "" });
}

/** A route table ready to match: hosts grouped, paths sorted by precedence. */
export class CompiledTable {
  private readonly exact = new Map<string, Route[]>();
  private readonly wildcard = new Map<string, Route[]>();
  private readonly any: Route[] = [];

  constructor(readonly table: RouteTable) {
    for (const r of table.routes) {
      let list: Route[];
      if (r.host === "") list = this.any;
      else if (r.host.startsWith("*.")) {
        const k = r.host.slice(2);
        list = this.wildcard.get(k) ?? [];
        this.wildcard.set(k, list);
      } else {
        list = this.exact.get(r.host) ?? [];
        this.exact.set(r.host, list);
      }
      list.push(r);
    }
    // Stable sort keeps Ingress age order for ties.
    const order = (a: Route, b: Route) => {
      const la = trimSlash(a).length;
      const lb = trimSlash(b).length;
      if (la !== lb) return lb - la;
      return (a.pathType === "Exact" ? 0 : 1) - (b.pathType === "Exact" ? 0 : 1);
    };
    for (const l of [this.any, ...this.exact.values(), ...this.wildcard.values()]) l.sort(order);
  }

  /** The route for a host (no port) and a path (no query), or the default backend, or undefined. */
  match(host: string, path: string): { ingress: string; backend: string } | undefined {
    const h = normalizeHost(host);
    const dot = h.indexOf(".");
    const group =
      this.exact.get(h) ?? (dot > 0 ? this.wildcard.get(h.slice(dot + 1)) : undefined) ?? this.any;
    for (const r of group) if (pathMatches(r, path)) return r;
    return this.table.defaultBackend;
  }

  /** The TLS entry for an SNI server name: an exact host first, then a wildcard. */
  tlsFor(servername: string): TlsEntry | undefined {
    const h = normalizeHost(servername);
    const dot = h.indexOf(".");
    const wild = dot > 0 ? `*.${h.slice(dot + 1)}` : undefined;
    return (
      this.table.tls.find((t) => t.hosts.includes(h)) ??
      (wild ? this.table.tls.find((t) => t.hosts.includes(wild)) : undefined)
    );
  }
}

function trimSlash(r: Route): string {
  return r.pathType === "Exact" ? r.path : r.path.replace(/\/+$/, "");
}

/** Whether a request path matches a route's path under its type. */
export function pathMatches(r: Route, path: string): boolean {
  if (r.pathType === "Exact") return path === r.path;
  const prefix = trimSlash(r);
  if (prefix === "") return true;
  if (!path.startsWith(prefix)) return false;
  return path.length === prefix.length || path[prefix.length] === "/";
}
