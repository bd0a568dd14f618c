/**
 * URL parsing for the Kubernetes REST paths the handler serves:
 *
 *   /api, /api/v1, /apis, /apis/<g>, /apis/<g>/<v>          discovery
 *   /openapi/v3, /openapi/v3/api/v1, /openapi/v3/apis/<g>/<v>  OpenAPI v3
 *   /openapi/v2                                             minimal OpenAPI v2
 *   /api/v1/[watch/][namespaces/<ns>/]<plural>[/<name>[/<subresource>]]
 *   /apis/<g>/<v>/[watch/][namespaces/<ns>/]<plural>[/<name>[/<subresource>]]
 *
 * `/api/v1/namespaces/<name>/status` and `.../finalize` are subresources of a
 * Namespace, as in Kubernetes; any other segment after a namespace's name is a
 * namespaced resource.
 */

/** A request for one of the served REST resources. */
export interface ResourceRoute {
  kind: "resource";
  group: string;
  version: string;
  plural: string;
  /** The namespace in the path (absent for cluster-scoped paths and all-namespaces lists). */
  namespace?: string;
  name?: string;
  subresource?: string;
  /** The deprecated `/watch/` path prefix was used. */
  watchPrefix: boolean;
}

export type Route =
  | { kind: "api" }
  | { kind: "apiVersion"; version: string }
  | { kind: "apis" }
  | { kind: "group"; group: string }
  | { kind: "groupVersion"; group: string; version: string }
  | { kind: "openapiIndex" }
  /** The minimal OpenAPI v2 document older kubectl versions load first. */
  | { kind: "openapiV2" }
  | { kind: "openapiDocument"; group: string; version: string }
  | ResourceRoute
  /** Under /api or /apis but not a path that names anything. */
  | { kind: "notFound" };

/** Subresources of a Namespace that are reached as /api/v1/namespaces/<name>/<sub>. */
const NAMESPACE_SUBRESOURCES = new Set(["status", "finalize"]);

function segments(path: string): string[] | null {
  const trimmed = path.replace(/^\/+|\/+$/g, "");
  if (trimmed === "") return [];
  const parts = trimmed.split("/");
  const out: string[] = [];
  for (const p of parts) {
    if (p === "") return null;
    let decoded: string;
    try {
      decoded = decodeURIComponent(p);
    } catch {
      return null;
    }
    if (decoded === "" || decoded === "." || decoded === ".." || decoded.includes("/")) return null;
    out.push(decoded);
  }
  return out;
}

function resourceRoute(group: string, version: string, rest: string[]): Route {
  let parts = rest;
  let watchPrefix = false;
  if (parts[0] === "watch") {
    watchPrefix = true;
    parts = parts.slice(1);
  }
  if (parts.length === 0) return { kind: "notFound" };
  let namespace: string | undefined;
  if (parts[0] === "namespaces" && parts.length > 2 && !NAMESPACE_SUBRESOURCES.has(parts[2])) {
    namespace = parts[1];
    parts = parts.slice(2);
  }
  if (parts.length > 3) return { kind: "notFound" };
  const route: ResourceRoute = { kind: "resource", group, version, plural: parts[0], watchPrefix };
  if (namespace !== undefined) route.namespace = namespace;
  if (parts.length > 1) route.name = parts[1];
  if (parts.length > 2) route.subresource = parts[2];
  return route;
}

/** Paths whose route is remembered, at most (then forgotten all at once). */
export const REMEMBERED_ROUTES = 1024;

/** Routes by path (shared: never modified). */
const remembered = new Map<string, Route | null>();

/**
 * The route of a request path (without the query string), or null when the path is
 * not under /api, /apis, /openapi/v2 or /openapi/v3 at all. The result is shared
 * by requests for the same path: it must not be modified.
 */
export function parseRoute(pathname: string): Route | null {
  let route = remembered.get(pathname);
  if (route === undefined) {
    route = routeOf(pathname);
    if (remembered.size >= REMEMBERED_ROUTES) remembered.clear();
    remembered.set(pathname, route);
  }
  return route;
}

function routeOf(pathname: string): Route | null {
  const parts = segments(pathname);
  if (parts === null) {
    return /^\/(api|apis)(\/|$)/.test(pathname) ? { kind: "notFound" } : null;
  }
  const [root, ...rest] = parts;
  if (root === "api") {
    if (rest.length === 0) return { kind: "api" };
    if (rest.length === 1) return { kind: "apiVersion", version: rest[0] };
    return resourceRoute("", rest[0], rest.slice(1));
  }
  if (root === "apis") {
    if (rest.length === 0) return { kind: "apis" };
    if (rest.length === 1) return { kind: "group", group: rest[0] };
    if (rest.length === 2) return { kind: "groupVersion", group: rest[0], version: rest[1] };
    return resourceRoute(rest[0], rest[1], rest.slice(2));
  }
  if (root === "openapi" && rest.length === 1 && rest[0] === "v2") return { kind: "openapiV2" };
  if (root === "openapi" && rest[0] === "v3") {
    const doc = rest.slice(1);
    if (doc.length === 0) return { kind: "openapiIndex" };
    if (doc.length === 2 && doc[0] === "api") {
      return { kind: "openapiDocument", group: "", version: doc[1] };
    }
    if (doc.length === 3 && doc[0] === "apis") {
      return { kind: "openapiDocument", group: doc[1], version: doc[2] };
    }
    return { kind: "notFound" };
  }
  return null;
}
