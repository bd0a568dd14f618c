/**
 * Impersonation headers (`Impersonate-User`, `-Group`, `-Uid`, `-Extra-*`, what
 * `kubectl --as` sends). Setpoint has no authorization layer that could allow them
 * yet, so every request that carries one is refused with the 403 kube-apiserver gives
 * a caller who may not impersonate, rather than served as the caller (which would
 * let a client believe it acted as someone else).
 */
import type { IncomingMessage } from "node:http";
import { failure, type StatusError } from "@setpoint/api";
import type { UserInfo } from "./auth.ts";

const SERVICE_ACCOUNT_USER = /^system:serviceaccount:([^:]+):([^:]+)$/;

function forbidden(
  user: UserInfo,
  resource: string,
  group: string,
  name: string,
  namespace?: string,
): StatusError {
  // "userextras/KEY" is resource "userextras", subresource KEY.
  const base = resource.split("/")[0];
  const qualified = group ? `${base}.${group}` : base;
  const where = namespace ? `in the namespace "${namespace}"` : "at the cluster scope";
  return failure(
    403,
    "Forbidden",
    `${qualified} "${name}" is forbidden: User "${user.name}" cannot impersonate resource "${resource}" in API group "${group}" ${where}`,
    { name, group, kind: base },
  );
}

/** The refusal for a request that asks to impersonate anyone; undefined when it does not. */
export function impersonationRefusal(
  req: IncomingMessage,
  user: UserInfo,
): StatusError | undefined {
  const h = req.headers;
  const asUser = h["impersonate-user"];
  if (typeof asUser === "string") {
    const sa = SERVICE_ACCOUNT_USER.exec(asUser);
    if (sa) return forbidden(user, "serviceaccounts", "", sa[2], sa[1]);
    return forbidden(user, "users", "", asUser);
  }
  const asGroup = h["impersonate-group"];
  if (asGroup !== undefined) {
    const first = Array.isArray(asGroup) ? asGroup[0] : asGroup;
    return forbidden(user, "groups", "", first ?? "");
  }
  const asUid = h["impersonate-uid"];
  if (typeof asUid === "string") return forbidden(user, "uids", "authentication.k8s.io", asUid);
  for (const [name, value] of Object.entries(h)) {
    if (!name.startsWith("impersonate-extra-")) continue;
    const raw = name.slice("impersonate-extra-".length);
    let key = raw;
    try {
      key = decodeURIComponent(raw);
    } catch {
      // kept as sent
    }
    const first = Array.isArray(value) ? value[0] : value;
    return forbidden(user, `userextras/${key}`, "authentication.k8s.io", first ?? "");
  }
  return undefined;
}
