/** The 403 a denied request gets, worded as kube-apiserver words it. */
import { errors, failure, type StatusError } from "@setpoint/api";
import type { AccessAttributes } from "../../registry/builtin/rbac/index.ts";

/** `pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"` */
export function forbidden(user: string, attrs: AccessAttributes, reason = ""): StatusError {
  const why = reason ? `: ${reason}` : "";
  const r = attrs.resource;
  if (!r) {
    return failure(
      403,
      "Forbidden",
      `forbidden: User ${JSON.stringify(user)} cannot ${attrs.verb} path ${JSON.stringify(attrs.path ?? "")}${why}`,
      {},
    );
  }
  const resource = r.subresource ? `${r.resource}/${r.subresource}` : r.resource;
  const where = r.namespace
    ? `in the namespace ${JSON.stringify(r.namespace)}`
    : "at the cluster scope";
  return errors.forbidden(
    { group: r.group, resource: r.resource, ...(r.name ? { name: r.name } : {}) },
    `User ${JSON.stringify(user)} cannot ${attrs.verb} resource ${JSON.stringify(resource)} in API group ${JSON.stringify(r.group)} ${where}${why}`,
  );
}
