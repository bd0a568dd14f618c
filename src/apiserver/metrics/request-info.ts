/**
 * What a request is, in the terms of Kubernetes' request metrics: its verb (GET,
 * LIST, WATCH, POST, PUT, PATCH, APPLY, DELETE, DELETECOLLECTION), group, version,
 * resource, subresource and scope; and which client sent it, by user agent.
 */
import type { IncomingMessage } from "node:http";
import { parseRoute } from "../endpoints/routes.ts";

export interface RequestInfo {
  verb: string;
  group: string;
  version: string;
  resource: string;
  subresource: string;
  /** "resource" (one object), "namespace" or "cluster" (a collection); "" off the REST paths. */
  scope: string;
  dryRun: string;
  /** A list of a whole collection: no label or field selector, no page after the first. */
  wholeList: boolean;
  longRunning: boolean;
  readOnly: boolean;
}

function isTrue(v: string | null): boolean {
  return v === "true" || v === "1" || v === "True" || v === "t" || v === "T" || v === "TRUE";
}

const LONG_RUNNING_SUBRESOURCES = new Set(["log", "exec", "attach", "portforward", "proxy"]);

/** The metric labels of a request (path and query as sent). */
export function classifyRequest(
  req: IncomingMessage,
  path: string,
  query: URLSearchParams,
): RequestInfo {
  const method = (req.method ?? "GET").toUpperCase();
  const readOnly = method === "GET" || method === "HEAD" || method === "OPTIONS";
  const dryRun = query.getAll("dryRun").join(",");
  const info: RequestInfo = {
    verb: method,
    group: "",
    version: "",
    resource: "",
    subresource: "",
    scope: "",
    dryRun,
    wholeList: false,
    longRunning: false,
    readOnly,
  };
  const route = parseRoute(path);
  if (route?.kind !== "resource") return info;
  info.group = route.group;
  info.version = route.version;
  info.resource = route.plural;
  info.subresource = route.subresource ?? "";
  info.scope =
    route.name !== undefined ? "resource" : route.namespace !== undefined ? "namespace" : "cluster";
  const collection = route.name === undefined;
  // Streams that stay open as long as the client wants, as kube-apiserver counts them.
  if (LONG_RUNNING_SUBRESOURCES.has(info.subresource)) info.longRunning = true;
  if (method === "GET") {
    if (route.watchPrefix || isTrue(query.get("watch"))) {
      info.verb = "WATCH";
      info.longRunning = true;
    } else if (collection) {
      info.verb = "LIST";
      info.wholeList =
        !query.get("labelSelector") && !query.get("fieldSelector") && !query.get("continue");
    }
  } else if (method === "DELETE" && collection) {
    info.verb = "DELETECOLLECTION";
  } else if (method === "PATCH" && /apply-patch/.test(String(req.headers["content-type"] ?? ""))) {
    info.verb = "APPLY";
  }
  return info;
}

/** Distinct clients counted by name; the rest are counted as "other". */
export const MAX_CLIENTS = 100;

/**
 * The client of a request, by its user agent's product (kubectl, a controller's
 * binary name, node-fetch...): "kubectl/v1.32.0 (linux/amd64) kubernetes/abc"
 * becomes "kubectl". Bounded: Kubernetes-style agents are a name, then "/".
 */
export function clientOf(userAgent: string | undefined): string {
  if (!userAgent) return "unknown";
  const product = userAgent.trim().split(/[\s/]/)[0] ?? "";
  const clean = product.replace(/[^A-Za-z0-9._:-]/g, "").slice(0, 64);
  return clean || "unknown";
}
