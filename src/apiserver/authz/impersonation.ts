/**
 * Impersonation (`Impersonate-User`, `-Group`, `-Uid`, `-Extra-*`: what `kubectl
 * --as`, `--as-group` and `--as-uid` send). Each thing asked for is authorized as the
 * verb `impersonate` on its own resource, as kube-apiserver does: `users`, `groups`
 * and `serviceaccounts` (by namespace) in the core group, `uids` and
 * `userextras/KEY` in authentication.k8s.io. When every one is allowed, the request
 * is served as the user asked for; the first that is not is the request's 403.
 */
import type { IncomingMessage } from "node:http";
import { errors } from "@setpoint/api";
import type { AccessAttributes } from "../../registry/builtin/rbac/index.ts";
import type { Requester } from "../../registry/types.ts";
import { forbidden } from "./forbidden.ts";

/** Who a request is made by, after impersonation. */
export interface Impersonated extends Requester {
  /** Impersonated extras (`Impersonate-Extra-KEY`), by lower-cased key. */
  extra?: Record<string, string[]>;
}

/** What decides whether the caller may impersonate (the RBAC authorizer). */
export interface ImpersonationAuthorizer {
  ready(): Promise<void>;
  authorize(user: Requester, attrs: AccessAttributes): { allowed: boolean };
}

const SERVICE_ACCOUNT_USER = /^system:serviceaccount:([^:]+):([^:]+)$/;
const AUTHENTICATED = "system:authenticated";
const UNAUTHENTICATED = "system:unauthenticated";
const ANONYMOUS = "system:anonymous";
const EXTRA_PREFIX = "impersonate-extra-";

/** One thing asked for, in the order kube-apiserver checks them. */
interface Ask {
  /** Shown in the error for groups or extras asked without a user. */
  label: string;
  attrs: AccessAttributes;
}

function ask(resource: string, group: string, name: string, namespace?: string): AccessAttributes {
  const [base, subresource] = resource.split("/") as [string, string | undefined];
  return {
    verb: "impersonate",
    resource: {
      group,
      resource: base,
      name,
      ...(subresource ? { subresource } : {}),
      ...(namespace ? { namespace } : {}),
    },
  };
}

function values(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  return (Array.isArray(v) ? v : [v]).filter((s) => s !== "");
}

/**
 * The user a request is served as: the caller itself when it asks to impersonate
 * nobody. Throws the 403 for the first thing the caller may not impersonate, and a 500
 * (as kube-apiserver answers) for groups, extras or a uid asked without a user.
 */
export async function impersonate(
  req: IncomingMessage,
  caller: Impersonated,
  authorizer: ImpersonationAuthorizer,
): Promise<Impersonated> {
  const h = req.headers;
  const groups = values(h["impersonate-group"]);
  const extraHeaders = Object.keys(h).filter((k) => k.startsWith(EXTRA_PREFIX));
  const asUser = values(h["impersonate-user"])[0];
  const asUid = values(h["impersonate-uid"])[0];
  if (!asUser && groups.length === 0 && extraHeaders.length === 0 && !asUid) return caller;

  const asks: Ask[] = groups.map((g) => ({
    label: `{Group  ${g}    }`,
    attrs: ask("groups", "", g),
  }));
  const extra: Record<string, string[]> = {};
  for (const header of extraHeaders) {
    let key = header.slice(EXTRA_PREFIX.length);
    try {
      key = decodeURIComponent(key);
    } catch {
      // kept as sent
    }
    for (const value of values(h[header])) {
      extra[key] = [...(extra[key] ?? []), value];
      asks.push({
        label: `{UserExtra   ${value}  authentication.k8s.io/v1  ${key}}`,
        attrs: ask(`userextras/${key}`, "authentication.k8s.io", value),
      });
    }
  }
  if (!asUser) {
    const labels = asks.map((a) => a.label);
    if (asUid) labels.push(`{UID  ${asUid}    }`);
    throw errors.internal(
      `requested [${labels.join(" ")}] without impersonating a user${asUid ? " name" : ""}`,
    );
  }
  const sa = SERVICE_ACCOUNT_USER.exec(asUser);
  asks.push({
    label: asUser,
    attrs: sa ? ask("serviceaccounts", "", sa[2]!, sa[1]) : ask("users", "", asUser),
  });
  if (asUid) asks.push({ label: asUid, attrs: ask("uids", "authentication.k8s.io", asUid) });

  await authorizer.ready();
  for (const { attrs } of asks) {
    if (!authorizer.authorize(caller, attrs).allowed) throw forbidden(caller.name, attrs);
  }

  const as: string[] =
    sa && groups.length === 0
      ? ["system:serviceaccounts", `system:serviceaccounts:${sa[1]}`]
      : [...groups];
  if (asUser !== ANONYMOUS) {
    if (!as.includes(AUTHENTICATED) && !as.includes(UNAUTHENTICATED)) as.push(AUTHENTICATED);
  } else if (!as.includes(UNAUTHENTICATED)) {
    as.push(UNAUTHENTICATED);
  }
  return {
    name: asUser,
    groups: as,
    ...(asUid ? { uid: asUid } : {}),
    ...(Object.keys(extra).length > 0 ? { extra } : {}),
  };
}
