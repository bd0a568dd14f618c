/**
 * What the audit policy and the events need to know of a request, as
 * kube-apiserver's request info resolves it: the verb (get, list, watch, create,
 * update, patch, delete, deletecollection; the lower-cased method off the resource
 * paths), API group, version, resource, subresource, namespace and name.
 */
import type { IncomingMessage } from "node:http";
import type { AuditAttributes } from "./policy.ts";

/** The request's path as the server's router reads it (a resource, or anything else). */
export type AuditRoute =
  | {
      kind: "resource";
      group: string;
      version: string;
      plural: string;
      namespace?: string;
      name?: string;
      subresource?: string;
      watchPrefix: boolean;
    }
  | { kind: string }
  | null
  | undefined;

export interface RequestAttributes extends AuditAttributes {
  apiVersion: string;
}

function isTrue(v: string | null): boolean {
  return v === "true" || v === "1" || v === "True" || v === "t" || v === "T" || v === "TRUE";
}

export function requestAttributes(
  req: IncomingMessage,
  path: string,
  query: URLSearchParams,
  user: AuditAttributes["user"],
  parsed: AuditRoute,
): RequestAttributes {
  const method = (req.method ?? "GET").toUpperCase();
  const attrs: RequestAttributes = {
    ...(user ? { user } : {}),
    verb: method.toLowerCase(),
    resourceRequest: false,
    path,
    apiGroup: "",
    apiVersion: "",
    resource: "",
    subresource: "",
    namespace: "",
    name: "",
  };
  if (parsed?.kind !== "resource") return attrs;
  const route = parsed as Extract<AuditRoute, { plural: string }>;
  attrs.resourceRequest = true;
  attrs.apiGroup = route.group;
  attrs.apiVersion = route.version;
  attrs.resource = route.plural;
  attrs.subresource = route.subresource ?? "";
  attrs.name = route.name ?? "";
  attrs.namespace = route.namespace ?? "";
  // A Namespace is in itself, as kube-apiserver's request info has it.
  if (route.group === "" && route.plural === "namespaces" && route.name !== undefined) {
    attrs.namespace = route.name;
  }
  const named = route.name !== undefined;
  switch (method) {
    case "GET":
    case "HEAD":
      attrs.verb =
        route.watchPrefix || isTrue(query.get("watch")) ? "watch" : named ? "get" : "list";
      break;
    case "POST":
      attrs.verb = "create";
      break;
    case "PUT":
      attrs.verb = "update";
      break;
    case "PATCH":
      attrs.verb = "patch";
      break;
    case "DELETE":
      attrs.verb = named ? "delete" : "deletecollection";
      break;
  }
  return attrs;
}

/** The addresses a request came from: X-Forwarded-For, X-Real-Ip, then the peer. */
export function sourceIPs(req: IncomingMessage): string[] {
  const ips: string[] = [];
  const add = (ip: string | undefined) => {
    const v = ip?.trim().replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/, "$1");
    if (v && !ips.includes(v)) ips.push(v);
  };
  const forwarded = req.headers["x-forwarded-for"];
  for (const v of Array.isArray(forwarded) ? forwarded : forwarded ? [forwarded] : []) {
    for (const ip of v.split(",")) add(ip);
  }
  const real = req.headers["x-real-ip"];
  add(Array.isArray(real) ? real[0] : real);
  add(req.socket?.remoteAddress);
  return ips;
}
