/**
 * The roles and bindings every control plane starts with, under the names
 * Kubernetes gives them: `cluster-admin` (bound to the group system:masters),
 * the user-facing `admin`, `edit` and `view` (aggregated from the ClusterRoles
 * labelled `rbac.authorization.k8s.io/aggregate-to-*`, so a custom resource's
 * author can extend them), and the system roles every authenticated user holds:
 * discovery, the self reviews, and the public health and version paths; and
 * the roles of the control plane's own parts: the controller manager
 * (`system:kube-controller-manager`), each of its controllers
 * (`system:controller:*`, controller-policy.ts), the scheduler
 * (`system:kube-scheduler`, `system:volume-scheduler`), nodes, the service proxy
 * and the gateway.
 */

/** The users the controller manager and the scheduler authenticate as. */
export const CONTROLLER_MANAGER_USER = "system:kube-controller-manager";
export const SCHEDULER_USER = "system:kube-scheduler";
/** The leader Lease (in kube-system) the controller managers compete for. */
export const CONTROLLER_MANAGER_LEASE_NAME = "setpoint-controller-manager";
/** The scheduler's leader Lease, as Kubernetes names it. */
export const SCHEDULER_LEASE_NAME = "kube-scheduler";

import type { KubeObject } from "@setpoint/api";
import {
  CONTROLLER_ACCOUNTS_NAMESPACE,
  CONTROLLER_ROLE_PREFIX,
  CONTROLLER_ROLES,
  controllerManagerRules,
  schedulerRules,
  VOLUME_SCHEDULER_RULES,
} from "./controller-policy.ts";
import type { PolicyRule } from "./rules.ts";

const READ = ["get", "list", "watch"];
const WRITE = ["create", "delete", "deletecollection", "patch", "update"];

/** Label and annotation of the bootstrap objects, as Kubernetes marks its own. */
export const BOOTSTRAP_LABELS = { "kubernetes.io/bootstrapping": "rbac-defaults" };
export const AUTOUPDATE_ANNOTATION = "rbac.authorization.kubernetes.io/autoupdate";

/** Label selecting the ClusterRoles aggregated into `admin`, `edit` or `view`. */
export const aggregateLabel = (to: "admin" | "edit" | "view") =>
  `rbac.authorization.k8s.io/aggregate-to-${to}`;

/** What every user-facing role reads, by API group. */
const VIEWED: Record<string, string[]> = {
  "": [
    "configmaps",
    "endpoints",
    "events",
    "limitranges",
    "namespaces",
    "namespaces/status",
    "persistentvolumeclaims",
    "pods",
    "pods/log",
    "pods/status",
    "replicationcontrollers",
    "resourcequotas",
    "serviceaccounts",
    "services",
    "services/status",
  ],
  apps: [
    "controllerrevisions",
    "daemonsets",
    "deployments",
    "deployments/scale",
    "deployments/status",
    "replicasets",
    "replicasets/scale",
    "replicasets/status",
    "statefulsets",
  ],
  batch: ["cronjobs", "jobs", "jobs/status"],
  "discovery.k8s.io": ["endpointslices"],
  "events.k8s.io": ["events"],
  "networking.k8s.io": ["ingresses", "ingresses/status", "networkpolicies"],
  policy: ["poddisruptionbudgets", "poddisruptionbudgets/status"],
};

/** What `edit` writes, by API group (never roles, bindings or status). */
const EDITED: Record<string, string[]> = {
  "": [
    "configmaps",
    "endpoints",
    "persistentvolumeclaims",
    "pods",
    "pods/attach",
    "pods/exec",
    "pods/portforward",
    "replicationcontrollers",
    "secrets",
    "serviceaccounts",
    "services",
  ],
  apps: [
    "deployments",
    "deployments/rollback",
    "deployments/scale",
    "replicasets",
    "replicasets/scale",
    "statefulsets",
  ],
  batch: ["cronjobs", "jobs"],
  "discovery.k8s.io": ["endpointslices"],
  "networking.k8s.io": ["ingresses", "networkpolicies"],
  policy: ["poddisruptionbudgets"],
};

function rules(byGroup: Record<string, string[]>, verbs: string[]): PolicyRule[] {
  return Object.entries(byGroup).map(([group, resources]) => ({
    verbs,
    apiGroups: [group],
    resources,
  }));
}

function clusterRole(
  name: string,
  body: Record<string, unknown>,
  labels: Record<string, string> = {},
): KubeObject {
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: {
      name,
      labels: { ...BOOTSTRAP_LABELS, ...labels },
      annotations: { [AUTOUPDATE_ANNOTATION]: "true" },
    },
    ...body,
  };
}

/**
 * An aggregated role, starting with the rules of the bootstrap roles it selects
 * (the clusterrole-aggregation controller keeps it current as others are labelled).
 */
function aggregated(
  to: "admin" | "edit" | "view",
  initial: PolicyRule[],
  labels: Record<string, string> = {},
): KubeObject {
  return clusterRole(
    to,
    {
      aggregationRule: {
        clusterRoleSelectors: [{ matchLabels: { [aggregateLabel(to)]: "true" } }],
      },
      rules: initial,
    },
    labels,
  );
}

function binding(
  name: string,
  role: string,
  groups: string[],
  users: string[] = [],
  serviceAccounts: { namespace: string; name: string }[] = [],
): KubeObject {
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: {
      name,
      labels: { ...BOOTSTRAP_LABELS },
      annotations: { [AUTOUPDATE_ANNOTATION]: "true" },
    },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
    subjects: [
      ...users.map((u) => ({ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: u })),
      ...groups.map((g) => ({ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: g })),
      ...serviceAccounts.map((sa) => ({ kind: "ServiceAccount", ...sa })),
    ],
  };
}

const HEALTH_PATHS = ["/healthz", "/livez", "/readyz", "/version", "/version/"];

const ADMIN_RULES: PolicyRule[] = [
  {
    verbs: [...READ, ...WRITE],
    apiGroups: ["rbac.authorization.k8s.io"],
    resources: ["rolebindings", "roles"],
  },
  {
    verbs: ["create"],
    apiGroups: ["authorization.k8s.io"],
    resources: ["localsubjectaccessreviews"],
  },
];

const EDIT_RULES: PolicyRule[] = [
  ...rules(EDITED, WRITE),
  { verbs: READ, apiGroups: [""], resources: ["secrets"] },
  { verbs: ["create"], apiGroups: [""], resources: ["pods/eviction", "serviceaccounts/token"] },
  { verbs: ["impersonate"], apiGroups: [""], resources: ["serviceaccounts"] },
];

const VIEW_RULES: PolicyRule[] = rules(VIEWED, READ);

/**
 * What every node may do, as the Node authorizer checks it before RBAC (Kubernetes'
 * `system:node` rules, for the kinds served here): the Node authorizer narrows the
 * reads of Secrets, ConfigMaps, PersistentVolumeClaims, Pods and Nodes and the
 * ServiceAccount tokens to what the node's Pods use, and NodeRestriction admission
 * narrows the writes to the node's own objects.
 */
export const NODE_RULES: readonly PolicyRule[] = [
  { verbs: ["create"], apiGroups: ["authentication.k8s.io"], resources: ["tokenreviews"] },
  {
    verbs: ["create"],
    apiGroups: ["authorization.k8s.io"],
    resources: ["subjectaccessreviews", "localsubjectaccessreviews"],
  },
  { verbs: READ, apiGroups: [""], resources: ["services"] },
  { verbs: ["create", "get", "list", "watch"], apiGroups: [""], resources: ["nodes"] },
  { verbs: ["update", "patch"], apiGroups: [""], resources: ["nodes/status"] },
  { verbs: ["update", "patch"], apiGroups: [""], resources: ["nodes"] },
  { verbs: ["create", "update", "patch"], apiGroups: [""], resources: ["events"] },
  { verbs: READ, apiGroups: [""], resources: ["pods"] },
  { verbs: ["create", "delete"], apiGroups: [""], resources: ["pods"] },
  { verbs: ["update", "patch"], apiGroups: [""], resources: ["pods/status"] },
  { verbs: ["create"], apiGroups: [""], resources: ["pods/eviction"] },
  { verbs: READ, apiGroups: [""], resources: ["secrets", "configmaps"] },
  { verbs: ["get"], apiGroups: [""], resources: ["persistentvolumeclaims", "persistentvolumes"] },
  { verbs: ["get"], apiGroups: [""], resources: ["endpoints"] },
  {
    verbs: ["get", "create", "update", "patch", "delete"],
    apiGroups: ["coordination.k8s.io"],
    resources: ["leases"],
  },
  { verbs: ["create"], apiGroups: [""], resources: ["serviceaccounts/token"] },
  {
    verbs: ["get", "update", "patch"],
    apiGroups: [""],
    resources: ["persistentvolumeclaims/status"],
  },
];

/** What the service proxy reads (Kubernetes' `system:node-proxier`). */
const NODE_PROXIER_RULES: PolicyRule[] = [
  { verbs: ["list", "watch"], apiGroups: [""], resources: ["endpoints", "services"] },
  { verbs: READ, apiGroups: [""], resources: ["nodes"] },
  { verbs: ["create", "patch", "update"], apiGroups: ["", "events.k8s.io"], resources: ["events"] },
  { verbs: ["list", "watch"], apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"] },
];

/** The bootstrap ClusterRoles. */
export const BOOTSTRAP_CLUSTER_ROLES: readonly KubeObject[] = [
  clusterRole("cluster-admin", {
    rules: [
      { verbs: ["*"], apiGroups: ["*"], resources: ["*"] },
      { verbs: ["*"], nonResourceURLs: ["*"] },
    ],
  }),
  aggregated("admin", [...ADMIN_RULES, ...EDIT_RULES, ...VIEW_RULES]),
  aggregated("edit", [...EDIT_RULES, ...VIEW_RULES], { [aggregateLabel("admin")]: "true" }),
  aggregated("view", VIEW_RULES, { [aggregateLabel("edit")]: "true" }),
  clusterRole(
    "system:aggregate-to-admin",
    { rules: ADMIN_RULES },
    { [aggregateLabel("admin")]: "true" },
  ),
  clusterRole(
    "system:aggregate-to-edit",
    { rules: EDIT_RULES },
    { [aggregateLabel("edit")]: "true" },
  ),
  clusterRole(
    "system:aggregate-to-view",
    { rules: VIEW_RULES },
    { [aggregateLabel("view")]: "true" },
  ),
  clusterRole("system:discovery", {
    rules: [
      {
        verbs: ["get"],
        nonResourceURLs: [
          "/api",
          "/api/*",
          "/apis",
          "/apis/*",
          "/openapi",
          "/openapi/*",
          ...HEALTH_PATHS,
        ],
      },
    ],
  }),
  clusterRole("system:basic-user", {
    rules: [
      {
        verbs: ["create"],
        apiGroups: ["authentication.k8s.io"],
        resources: ["selfsubjectreviews"],
      },
      {
        verbs: ["create"],
        apiGroups: ["authorization.k8s.io"],
        resources: ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
      },
    ],
  }),
  clusterRole("system:public-info-viewer", {
    rules: [{ verbs: ["get"], nonResourceURLs: HEALTH_PATHS }],
  }),
  // Kubernetes' node role: bound to nobody (the Node authorizer applies its rules).
  clusterRole("system:node", { rules: [...NODE_RULES] }),
  clusterRole("system:node-proxier", { rules: NODE_PROXIER_RULES }),
  // What a node's service proxy reads beyond the node's own rules (which read Services).
  clusterRole("system:setpoint:service-proxy", {
    rules: [
      { verbs: ["list", "watch"], apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"] },
    ],
  }),
  // The gateway (system:setpoint:gateway): what it routes by, and its Ingresses' status.
  clusterRole("system:setpoint:gateway", {
    rules: [
      {
        verbs: ["list", "watch"],
        apiGroups: ["networking.k8s.io"],
        resources: ["ingresses", "ingressclasses"],
      },
      {
        verbs: ["update", "patch"],
        apiGroups: ["networking.k8s.io"],
        resources: ["ingresses/status"],
      },
      { verbs: ["list", "watch"], apiGroups: [""], resources: ["services", "secrets"] },
      { verbs: ["list", "watch"], apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"] },
    ],
  }),
  clusterRole(CONTROLLER_MANAGER_USER, {
    rules: controllerManagerRules(CONTROLLER_MANAGER_LEASE_NAME),
  }),
  clusterRole(SCHEDULER_USER, { rules: schedulerRules(SCHEDULER_LEASE_NAME) }),
  clusterRole("system:volume-scheduler", { rules: [...VOLUME_SCHEDULER_RULES] }),
  ...Object.entries(CONTROLLER_ROLES).map(([account, rules]) =>
    clusterRole(`${CONTROLLER_ROLE_PREFIX}${account}`, { rules: [...rules] }),
  ),
  // For services that delegate authentication and authorization to the apiserver.
  clusterRole("system:auth-delegator", {
    rules: [
      { verbs: ["create"], apiGroups: ["authentication.k8s.io"], resources: ["tokenreviews"] },
      {
        verbs: ["create"],
        apiGroups: ["authorization.k8s.io"],
        resources: ["subjectaccessreviews"],
      },
    ],
  }),
];

/** The bootstrap ClusterRoleBindings. */
export const BOOTSTRAP_CLUSTER_ROLE_BINDINGS: readonly KubeObject[] = [
  binding("cluster-admin", "cluster-admin", ["system:masters"]),
  binding("system:discovery", "system:discovery", ["system:authenticated"]),
  binding("system:basic-user", "system:basic-user", ["system:authenticated"]),
  binding("system:public-info-viewer", "system:public-info-viewer", [
    "system:authenticated",
    "system:unauthenticated",
  ]),
  binding("system:node-proxier", "system:node-proxier", [], ["system:kube-proxy"]),
  binding("system:setpoint:gateway", "system:setpoint:gateway", [], ["system:setpoint:gateway"]),
  binding(CONTROLLER_MANAGER_USER, CONTROLLER_MANAGER_USER, [], [CONTROLLER_MANAGER_USER]),
  binding(SCHEDULER_USER, SCHEDULER_USER, [], [SCHEDULER_USER]),
  binding("system:volume-scheduler", "system:volume-scheduler", [], [SCHEDULER_USER]),
  ...Object.keys(CONTROLLER_ROLES).map((account) =>
    binding(
      `${CONTROLLER_ROLE_PREFIX}${account}`,
      `${CONTROLLER_ROLE_PREFIX}${account}`,
      [],
      [],
      [{ namespace: CONTROLLER_ACCOUNTS_NAMESPACE, name: account }],
    ),
  ),
  // The agent runs the service proxy in its own process, as its node.
  binding("system:setpoint:service-proxy", "system:setpoint:service-proxy", ["system:nodes"]),
];
