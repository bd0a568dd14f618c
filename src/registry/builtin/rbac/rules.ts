/**
 * RBAC's rules, as Kubernetes evaluates them: what a request asks (verb, API group,
 * resource and subresource, name, namespace, or a non-resource path), whether a
 * PolicyRule allows it, which bindings apply to a user, and whether one set of
 * rules covers another (the escalation check: nobody grants what they do not hold).
 */

/** An rbac.authorization.k8s.io/v1 PolicyRule. */
export interface PolicyRule {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

/** A binding's subject. */
export interface Subject {
  kind: string;
  apiGroup?: string;
  name: string;
  namespace?: string;
}

/** A binding's role. */
export interface RoleRef {
  apiGroup: string;
  kind: string;
  name: string;
}

/** What a request asks to do. */
export interface AccessAttributes {
  verb: string;
  /** Resource requests: the API group ("" for core), resource, subresource, name, namespace. */
  resource?: {
    group: string;
    resource: string;
    subresource?: string;
    name?: string;
    namespace?: string;
  };
  /** Non-resource requests: the path. */
  path?: string;
  /** A list's or watch's field selector, as sent (the Node authorizer reads it). */
  fieldSelector?: string;
}

/** Who asks. */
export interface AccessUser {
  name: string;
  groups: string[];
}

/** The group every node is in, and the prefix of a node's user name. */
export const NODES_GROUP = "system:nodes";
export const NODE_USER_PREFIX = "system:node:";

/**
 * A node's name when `user` is a node (Kubernetes' NodeIdentity: a `system:node:`
 * user in `system:nodes`; "" when the name has nothing after the prefix), else undefined.
 */
export function nodeIdentity(user: AccessUser): string | undefined {
  if (!user.name.startsWith(NODE_USER_PREFIX)) return undefined;
  if (!user.groups.includes(NODES_GROUP)) return undefined;
  return user.name.slice(NODE_USER_PREFIX.length);
}

/** The group every authenticated user is in. */
export const AUTHENTICATED = "system:authenticated";
/** The group whose members may do anything, with no rule consulted (as in Kubernetes). */
export const MASTERS = "system:masters";
/** The API group of RBAC. */
export const RBAC_GROUP = "rbac.authorization.k8s.io";

const has = (list: string[] | undefined, v: string) =>
  (list ?? []).includes("*") || (list ?? []).includes(v);

function resourceMatches(rule: PolicyRule, resource: string, subresource: string | undefined) {
  const combined = subresource ? `${resource}/${subresource}` : resource;
  return (rule.resources ?? []).some(
    (r) =>
      r === "*" ||
      r === combined ||
      (subresource !== undefined && r === `*/${subresource}`) ||
      (subresource !== undefined && r === `${resource}/*`),
  );
}

function pathMatches(rule: PolicyRule, path: string): boolean {
  return (rule.nonResourceURLs ?? []).some(
    (u) => u === "*" || u === path || (u.endsWith("*") && path.startsWith(u.slice(0, -1))),
  );
}

/** Whether `rule` allows the request. */
export function ruleAllows(rule: PolicyRule, attrs: AccessAttributes): boolean {
  if (!has(rule.verbs, attrs.verb)) return false;
  const r = attrs.resource;
  if (!r) return attrs.path !== undefined && pathMatches(rule, attrs.path);
  if (!has(rule.apiGroups, r.group)) return false;
  if (!resourceMatches(rule, r.resource, r.subresource)) return false;
  const names = rule.resourceNames ?? [];
  return names.length === 0 || (r.name !== undefined && names.includes(r.name));
}

/** Whether `subject` names `user`. */
export function subjectMatches(subject: Subject, user: AccessUser): boolean {
  switch (subject.kind) {
    case "User":
      return subject.name === user.name;
    case "Group":
      return user.groups.includes(subject.name);
    case "ServiceAccount":
      return user.name === `system:serviceaccount:${subject.namespace ?? ""}:${subject.name}`;
    default:
      return false;
  }
}

/** The user with the groups every authenticated user has. */
export function withImplicitGroups(user: AccessUser): AccessUser {
  return user.groups.includes(AUTHENTICATED) || user.name === "system:anonymous"
    ? user
    : { ...user, groups: [...user.groups, AUTHENTICATED] };
}

function expand(list: string[] | undefined): string[] {
  return list && list.length > 0 ? list : [""];
}

/**
 * Whether `owner` rules cover every action `servant` allows (Kubernetes' Covers):
 * each (verb, group, resource, name) the servant names must be allowed by one
 * owner rule, a servant's "*" only by an owner's "*".
 */
export function covers(owner: PolicyRule[], servant: PolicyRule[]): PolicyRule[] {
  const uncovered: PolicyRule[] = [];
  for (const rule of servant) {
    for (const verb of rule.verbs) {
      if (rule.nonResourceURLs && rule.nonResourceURLs.length > 0) {
        for (const url of rule.nonResourceURLs) {
          const ok = owner.some(
            (o) =>
              has(o.verbs, verb) &&
              (o.nonResourceURLs ?? []).some(
                (u) =>
                  u === "*" || u === url || (u.endsWith("*") && url.startsWith(u.slice(0, -1))),
              ),
          );
          if (!ok) uncovered.push({ verbs: [verb], nonResourceURLs: [url] });
        }
        continue;
      }
      for (const group of expand(rule.apiGroups)) {
        for (const resource of rule.resources ?? []) {
          for (const name of expand(rule.resourceNames)) {
            const ok = owner.some(
              (o) =>
                has(o.verbs, verb) &&
                has(o.apiGroups, group) &&
                ((o.resources ?? []).includes("*") ||
                  (o.resources ?? []).includes(resource) ||
                  (resource.includes("/") &&
                    (o.resources ?? []).includes(`${resource.split("/")[0]}/*`))) &&
                ((o.resourceNames ?? []).length === 0 ||
                  (name !== "" && (o.resourceNames ?? []).includes(name))),
            );
            if (!ok) {
              uncovered.push({
                verbs: [verb],
                apiGroups: [group],
                resources: [resource],
                ...(name ? { resourceNames: [name] } : {}),
              });
            }
          }
        }
      }
    }
  }
  return uncovered;
}

/** A rule as Kubernetes prints it in an escalation error. */
export function formatRule(rule: PolicyRule): string {
  const parts: string[] = [];
  if (rule.apiGroups?.length)
    parts.push(`APIGroups:[${rule.apiGroups.map((g) => JSON.stringify(g)).join(" ")}]`);
  if (rule.resources?.length)
    parts.push(`Resources:[${rule.resources.map((r) => JSON.stringify(r)).join(" ")}]`);
  if (rule.resourceNames?.length)
    parts.push(`ResourceNames:[${rule.resourceNames.map((r) => JSON.stringify(r)).join(" ")}]`);
  if (rule.nonResourceURLs?.length)
    parts.push(`NonResourceURLs:[${rule.nonResourceURLs.map((r) => JSON.stringify(r)).join(" ")}]`);
  parts.push(`Verbs:[${rule.verbs.map((v) => JSON.stringify(v)).join(" ")}]`);
  return `{${parts.join(", ")}}`;
}
