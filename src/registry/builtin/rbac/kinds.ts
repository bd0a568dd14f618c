/**
 * rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding and
 * ClusterRoleBinding on the schemas generated from Kubernetes' Go types: the
 * columns of `kubectl get roles,rolebindings` (-o wide with the subjects),
 * validation with Kubernetes' messages, a binding's roleRef immutable, and the
 * escalation rule: a role may hold only rules its writer holds (or the writer may
 * `escalate`), a binding may grant only a role whose rules its writer holds (or
 * the writer may `bind` it).
 */
import type { KubeObject, StatusCause } from "@setpoint/api";
import type { Authorizer, PrinterColumn, Requester, ResourceDefinition } from "../../types.ts";
import { field } from "../build.ts";
import { deepEqual, invalid, notSupported, required } from "../causes.ts";
import { AGE_COLUMN, NONE } from "../workloads/columns.ts";
import { workloadDefinition } from "../workloads/define.ts";
import {
  covers,
  formatRule,
  MASTERS,
  type PolicyRule,
  RBAC_GROUP,
  type RoleRef,
  type Subject,
  withImplicitGroups,
} from "./rules.ts";

type Obj = Record<string, unknown>;

function list<T>(v: unknown): T[] {
  return Array.isArray(v) ? (v as T[]) : [];
}

const CREATED_AT: PrinterColumn = {
  name: "Created At",
  type: "date",
  priority: 0,
  description: "When the object was created.",
  value: (o) => o.metadata.creationTimestamp ?? "",
  // Printed as the timestamp itself, as Kubernetes' table for roles does.
  verbatim: true,
};

function subjectsOf(o: KubeObject, kind: string): string {
  const names = list<Subject>(field(o, "subjects"))
    .filter((s) => s.kind === kind)
    .map((s) => (kind === "ServiceAccount" ? `${s.namespace ?? ""}/${s.name}` : s.name));
  return names.length ? names.join(", ") : "";
}

const BINDING_COLUMNS: PrinterColumn[] = [
  {
    name: "Role",
    type: "string",
    priority: 0,
    description: "The role granted.",
    value: (o) => {
      const ref = field(o, "roleRef") as RoleRef | undefined;
      return ref ? `${ref.kind}/${ref.name}` : NONE;
    },
  },
  AGE_COLUMN,
  {
    name: "Users",
    type: "string",
    priority: 1,
    description: "Users granted the role.",
    value: (o) => subjectsOf(o, "User"),
  },
  {
    name: "Groups",
    type: "string",
    priority: 1,
    description: "Groups granted the role.",
    value: (o) => subjectsOf(o, "Group"),
  },
  {
    name: "ServiceAccounts",
    type: "string",
    priority: 1,
    description: "Service accounts granted the role.",
    value: (o) => subjectsOf(o, "ServiceAccount"),
  },
];

function validateRules(obj: KubeObject, cluster: boolean): StatusCause[] {
  const causes: StatusCause[] = [];
  list<Obj>(field(obj, "rules")).forEach((rule, i) => {
    const at = `rules[${i}]`;
    if (list(rule.verbs).length === 0)
      causes.push(required(`${at}.verbs`, "verbs must contain at least one value"));
    const urls = list<string>(rule.nonResourceURLs);
    if (urls.length > 0) {
      if (!cluster) {
        causes.push(
          invalid(
            `${at}.nonResourceURLs`,
            urls,
            "namespaced rules cannot apply to non-resource URLs",
          ),
        );
      }
      if (list(rule.apiGroups).length > 0 || list(rule.resources).length > 0) {
        causes.push(
          invalid(
            `${at}.nonResourceURLs`,
            urls,
            "rules cannot apply to both regular resources and non-resource URLs",
          ),
        );
      }
    } else {
      if (list(rule.apiGroups).length === 0) {
        causes.push(
          required(`${at}.apiGroups`, "resource rules must supply at least one api group"),
        );
      }
      if (list(rule.resources).length === 0) {
        causes.push(
          required(`${at}.resources`, "resource rules must supply at least one resource"),
        );
      }
    }
  });
  return causes;
}

const SUBJECT_KINDS = ["ServiceAccount", "User", "Group"];

function validateBinding(
  obj: KubeObject,
  old: KubeObject | undefined,
  cluster: boolean,
): StatusCause[] {
  const causes: StatusCause[] = [];
  const ref = (field(obj, "roleRef") ?? {}) as Partial<RoleRef>;
  if (ref.apiGroup !== RBAC_GROUP)
    causes.push(notSupported("roleRef.apiGroup", ref.apiGroup ?? "", [RBAC_GROUP]));
  const kinds = cluster ? ["ClusterRole"] : ["Role", "ClusterRole"];
  if (!kinds.includes(ref.kind ?? ""))
    causes.push(notSupported("roleRef.kind", ref.kind ?? "", kinds));
  if (!ref.name) causes.push(required("roleRef.name"));
  list<Subject>(field(obj, "subjects")).forEach((s, i) => {
    const at = `subjects[${i}]`;
    if (!s.name) causes.push(required(`${at}.name`));
    if (!SUBJECT_KINDS.includes(s.kind))
      causes.push(notSupported(`${at}.kind`, s.kind, SUBJECT_KINDS));
    else if (s.kind === "ServiceAccount" && !s.namespace && cluster)
      causes.push(required(`${at}.namespace`));
  });
  if (old && !deepEqual(field(old, "roleRef"), field(obj, "roleRef"))) {
    causes.push(invalid("roleRef", field(obj, "roleRef") ?? null, "cannot change roleRef"));
  }
  return causes;
}

function masters(requester: Requester): boolean {
  return requester.groups.includes(MASTERS);
}

function describeUser(requester: Requester): string {
  const { groups } = withImplicitGroups(requester);
  return `user ${JSON.stringify(requester.name)} (groups=[${groups.map((g) => JSON.stringify(g)).join(" ")}])`;
}

/** A role's write: its rules must be held by the writer, or the writer may escalate. */
function authorizeRoleWrite(
  plural: "roles" | "clusterroles",
  obj: KubeObject,
  requester: Requester,
  authorizer: Authorizer,
): string | undefined {
  if (masters(requester)) return undefined;
  const namespace = obj.metadata.namespace ?? "";
  const rules = list<PolicyRule>(field(obj, "rules"));
  if (rules.length === 0) return undefined;
  const escalate = authorizer.authorize(requester, {
    verb: "escalate",
    resource: { group: RBAC_GROUP, resource: plural, name: obj.metadata.name ?? "", namespace },
  });
  if (escalate.allowed) return undefined;
  const missing = covers(authorizer.rulesFor(requester, namespace), rules);
  if (missing.length === 0) return undefined;
  return `${describeUser(requester)} is attempting to grant RBAC permissions not currently held:\n${missing.map(formatRule).join("\n")}`;
}

/** A binding's write: the writer may bind the role, or holds all its rules. */
function authorizeBindingWrite(
  obj: KubeObject,
  requester: Requester,
  authorizer: Authorizer,
): string | undefined {
  if (masters(requester)) return undefined;
  const namespace = obj.metadata.namespace ?? "";
  const ref = field(obj, "roleRef") as RoleRef | undefined;
  if (!ref) return undefined;
  const bind = authorizer.authorize(requester, {
    verb: "bind",
    resource: {
      group: RBAC_GROUP,
      resource: ref.kind === "Role" ? "roles" : "clusterroles",
      name: ref.name,
      ...(ref.kind === "Role" ? { namespace } : {}),
    },
  });
  if (bind.allowed) return undefined;
  const rules = authorizer.roleRules(namespace, ref);
  if (rules === undefined) {
    return `${describeUser(requester)} is attempting to grant RBAC permissions not currently held: ${ref.kind.toLowerCase()}s.${RBAC_GROUP} ${JSON.stringify(ref.name)} not found`;
  }
  const missing = covers(authorizer.rulesFor(requester, namespace), rules);
  if (missing.length === 0) return undefined;
  return `${describeUser(requester)} is attempting to grant RBAC permissions not currently held:\n${missing.map(formatRule).join("\n")}`;
}

export const roleDefinition: ResourceDefinition = workloadDefinition({
  group: RBAC_GROUP,
  kind: "Role",
  plural: "roles",
  namespaced: true,
  status: false,
  generation: false,
  columns: [CREATED_AT],
  ageColumn: false,
  strategy: {
    // RBAC names are path segments (system:aggregate-to-admin), as in Kubernetes.
    nameRule: "path-segment",
    validate: (obj) => validateRules(obj, false),
    authorizeWrite: (obj, _old, requester, authorizer) =>
      authorizeRoleWrite("roles", obj, requester, authorizer),
  },
});

export const clusterRoleDefinition: ResourceDefinition = workloadDefinition({
  group: RBAC_GROUP,
  kind: "ClusterRole",
  plural: "clusterroles",
  namespaced: false,
  status: false,
  generation: false,
  columns: [CREATED_AT],
  ageColumn: false,
  strategy: {
    // RBAC names are path segments (system:aggregate-to-admin), as in Kubernetes.
    nameRule: "path-segment",
    validate: (obj) => validateRules(obj, true),
    authorizeWrite: (obj, _old, requester, authorizer) =>
      authorizeRoleWrite("clusterroles", obj, requester, authorizer),
  },
});

export const roleBindingDefinition: ResourceDefinition = workloadDefinition({
  group: RBAC_GROUP,
  kind: "RoleBinding",
  plural: "rolebindings",
  namespaced: true,
  status: false,
  generation: false,
  columns: BINDING_COLUMNS,
  strategy: {
    // RBAC names are path segments (system:aggregate-to-admin), as in Kubernetes.
    nameRule: "path-segment",
    validate: (obj, old) => validateBinding(obj, old, false),
    authorizeWrite: (obj, _old, requester, authorizer) =>
      authorizeBindingWrite(obj, requester, authorizer),
  },
});

export const clusterRoleBindingDefinition: ResourceDefinition = workloadDefinition({
  group: RBAC_GROUP,
  kind: "ClusterRoleBinding",
  plural: "clusterrolebindings",
  namespaced: false,
  status: false,
  generation: false,
  columns: BINDING_COLUMNS,
  strategy: {
    // RBAC names are path segments (system:aggregate-to-admin), as in Kubernetes.
    nameRule: "path-segment",
    validate: (obj, old) => validateBinding(obj, old, true),
    authorizeWrite: (obj, _old, requester, authorizer) =>
      authorizeBindingWrite(obj, requester, authorizer),
  },
});
