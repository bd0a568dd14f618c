/**
 * RBAC (rbac.authorization.k8s.io/v1): the Role, ClusterRole, RoleBinding and
 * ClusterRoleBinding kinds (kinds.ts), how their rules are evaluated and compared
 * (rules.ts), and the roles and bindings every control plane starts with
 * (bootstrap-policy.ts; the built-in controllers' in controller-policy.ts). The
 * apiserver's authorizer applies them to requests.
 */
export {
  AUTOUPDATE_ANNOTATION,
  aggregateLabel,
  BOOTSTRAP_CLUSTER_ROLE_BINDINGS,
  BOOTSTRAP_CLUSTER_ROLES,
  BOOTSTRAP_LABELS,
  CONTROLLER_MANAGER_LEASE_NAME,
  CONTROLLER_MANAGER_USER,
  NODE_RULES,
  SCHEDULER_USER,
} from "./bootstrap-policy.ts";
export {
  CONTROLLER_ACCOUNTS_NAMESPACE,
  CONTROLLER_ROLE_PREFIX,
  CONTROLLER_ROLES,
} from "./controller-policy.ts";
export {
  clusterRoleBindingDefinition,
  clusterRoleDefinition,
  roleBindingDefinition,
  roleDefinition,
} from "./kinds.ts";
export {
  type AccessAttributes,
  type AccessUser,
  AUTHENTICATED,
  covers,
  formatRule,
  MASTERS,
  NODE_USER_PREFIX,
  NODES_GROUP,
  nodeIdentity,
  type PolicyRule,
  RBAC_GROUP,
  type RoleRef,
  ruleAllows,
  type Subject,
  subjectMatches,
  withImplicitGroups,
} from "./rules.ts";
