/**
 * What each built-in controller may do, as Kubernetes' `system:controller:*`
 * ClusterRoles say it, each bound (ClusterRoleBinding of the same name) to the
 * controller's ServiceAccount in kube-system, which the controller manager's
 * controllers act as (src/controllers/service-account-credentials.ts). Rules for
 * kinds Setpoint does not serve are left out; where a controller here does more
 * than Kubernetes' does, the extra rule says why. `event-ttl-controller` is
 * Setpoint's own (Kubernetes leaves Events to storage leases).
 */
import type { PolicyRule } from "./rules.ts";

/** The prefix of the controllers' roles, and of their bindings. */
export const CONTROLLER_ROLE_PREFIX = "system:controller:";

/** Where the controllers' ServiceAccounts live. */
export const CONTROLLER_ACCOUNTS_NAMESPACE = "kube-system";

const READ = ["get", "list", "watch"];

/** Writing Events, which every controller does (core and events.k8s.io). */
export const EVENTS_RULE: PolicyRule = {
  verbs: ["create", "update", "patch"],
  apiGroups: ["", "events.k8s.io"],
  resources: ["events"],
};

/** The rules of each controller's role, by its ServiceAccount's name. */
export const CONTROLLER_ROLES: Readonly<Record<string, readonly PolicyRule[]>> = {
  "clusterrole-aggregation-controller": [
    {
      verbs: ["escalate", "get", "list", "watch", "update", "patch"],
      apiGroups: ["rbac.authorization.k8s.io"],
      resources: ["clusterroles"],
    },
  ],
  "deployment-controller": [
    // patch beyond Kubernetes' rule: the revision annotation is written as a merge patch.
    { verbs: [...READ, "update", "patch"], apiGroups: ["apps"], resources: ["deployments"] },
    {
      verbs: ["update"],
      apiGroups: ["apps"],
      resources: ["deployments/status", "deployments/finalizers"],
    },
    {
      verbs: [...READ, "create", "update", "patch", "delete"],
      apiGroups: ["apps"],
      resources: ["replicasets"],
    },
    { verbs: [...READ, "update"], apiGroups: [""], resources: ["pods"] },
    EVENTS_RULE,
  ],
  "disruption-controller": [
    { verbs: READ, apiGroups: ["apps"], resources: ["deployments", "replicasets", "statefulsets"] },
    { verbs: READ, apiGroups: [""], resources: ["replicationcontrollers"] },
    { verbs: READ, apiGroups: ["policy"], resources: ["poddisruptionbudgets"] },
    { verbs: ["update"], apiGroups: ["policy"], resources: ["poddisruptionbudgets/status"] },
    { verbs: ["patch", "update"], apiGroups: [""], resources: ["pods/status"] },
    { verbs: ["get"], apiGroups: ["*"], resources: ["*/scale"] },
    EVENTS_RULE,
  ],
  "endpoint-controller": [
    { verbs: READ, apiGroups: [""], resources: ["services", "pods"] },
    {
      verbs: [...READ, "create", "update", "delete"],
      apiGroups: [""],
      resources: ["endpoints"],
    },
    { verbs: ["create"], apiGroups: [""], resources: ["endpoints/restricted"] },
    EVENTS_RULE,
  ],
  "endpointslice-controller": [
    { verbs: READ, apiGroups: [""], resources: ["services", "pods", "nodes"] },
    { verbs: ["update"], apiGroups: [""], resources: ["services/finalizers"] },
    {
      verbs: [...READ, "create", "update", "delete"],
      apiGroups: ["discovery.k8s.io"],
      resources: ["endpointslices"],
    },
    EVENTS_RULE,
  ],
  "event-ttl-controller": [
    { verbs: ["list", "watch", "delete"], apiGroups: ["", "events.k8s.io"], resources: ["events"] },
  ],
  "generic-garbage-collector": [
    {
      verbs: [...READ, "patch", "update", "delete"],
      apiGroups: ["*"],
      resources: ["*"],
    },
    EVENTS_RULE,
  ],
  "job-controller": [
    { verbs: [...READ, "update", "patch"], apiGroups: ["batch"], resources: ["jobs"] },
    { verbs: ["update"], apiGroups: ["batch"], resources: ["jobs/status", "jobs/finalizers"] },
    {
      verbs: ["list", "watch", "create", "delete", "patch"],
      apiGroups: [""],
      resources: ["pods"],
    },
    EVENTS_RULE,
  ],
  "namespace-controller": [
    { verbs: [...READ, "delete"], apiGroups: [""], resources: ["namespaces"] },
    { verbs: ["update"], apiGroups: [""], resources: ["namespaces/finalize", "namespaces/status"] },
    // Beyond Kubernetes' rule: the deletion conditions are written as a status merge patch.
    { verbs: ["patch"], apiGroups: [""], resources: ["namespaces/status"] },
    {
      verbs: [...READ, "delete", "deletecollection"],
      apiGroups: ["*"],
      resources: ["*"],
    },
  ],
  "node-controller": [
    {
      verbs: [...READ, "update", "delete", "patch"],
      apiGroups: [""],
      resources: ["nodes"],
    },
    { verbs: ["patch", "update"], apiGroups: [""], resources: ["nodes/status", "pods/status"] },
    { verbs: ["list", "watch", "get", "delete"], apiGroups: [""], resources: ["pods"] },
    EVENTS_RULE,
  ],
  "pod-garbage-collector": [
    { verbs: ["list", "watch", "delete"], apiGroups: [""], resources: ["pods"] },
    { verbs: READ, apiGroups: [""], resources: ["nodes"] },
    { verbs: ["patch"], apiGroups: [""], resources: ["pods/status"] },
  ],
  "replicaset-controller": [
    { verbs: [...READ, "update"], apiGroups: ["apps"], resources: ["replicasets"] },
    {
      verbs: ["update"],
      apiGroups: ["apps"],
      resources: ["replicasets/status", "replicasets/finalizers"],
    },
    {
      verbs: ["list", "watch", "patch", "create", "delete"],
      apiGroups: [""],
      resources: ["pods"],
    },
    EVENTS_RULE,
  ],
  "root-ca-cert-publisher": [
    { verbs: ["create", "update"], apiGroups: [""], resources: ["configmaps"] },
    EVENTS_RULE,
  ],
  "service-account-controller": [
    { verbs: ["create"], apiGroups: [""], resources: ["serviceaccounts"] },
    EVENTS_RULE,
  ],
  "ttl-after-finished-controller": [
    { verbs: [...READ, "delete"], apiGroups: ["batch"], resources: ["jobs"] },
    EVENTS_RULE,
  ],
};

/** Creating its leader Lease, and getting and renewing it by name. */
function leaderLeaseRules(leaseName: string): PolicyRule[] {
  return [
    { verbs: ["create"], apiGroups: ["coordination.k8s.io"], resources: ["leases"] },
    {
      verbs: ["get", "update"],
      apiGroups: ["coordination.k8s.io"],
      resources: ["leases"],
      resourceNames: [leaseName],
    },
  ];
}

/** The reviews that check API access ("these creates are non-mutating"). */
const ACCESS_CHECK_RULES: readonly PolicyRule[] = [
  { verbs: ["create"], apiGroups: ["authentication.k8s.io"], resources: ["tokenreviews"] },
  { verbs: ["create"], apiGroups: ["authorization.k8s.io"], resources: ["subjectaccessreviews"] },
];

/**
 * The controller manager's own role (`system:kube-controller-manager`, bound to
 * that user): the shared informers' lists and watches, its leader Lease, the
 * controllers' ServiceAccounts and their tokens, and the reviews that check API
 * access. It writes nothing the controllers write.
 */
export function controllerManagerRules(leaseName: string): PolicyRule[] {
  return [
    EVENTS_RULE,
    ...leaderLeaseRules(leaseName),
    { verbs: ["create"], apiGroups: [""], resources: ["secrets", "serviceaccounts"] },
    { verbs: ["delete"], apiGroups: [""], resources: ["secrets"] },
    {
      verbs: ["get"],
      apiGroups: [""],
      resources: ["namespaces", "secrets", "serviceaccounts", "configmaps"],
    },
    { verbs: ["update"], apiGroups: [""], resources: ["secrets", "serviceaccounts"] },
    ...ACCESS_CHECK_RULES,
    { verbs: ["list", "watch"], apiGroups: ["*"], resources: ["*"] },
    { verbs: ["create"], apiGroups: [""], resources: ["serviceaccounts/token"] },
  ];
}

/**
 * The scheduler's role (`system:kube-scheduler`): its leader Lease, reading Nodes
 * and what selects or constrains Pods, binding Pods and writing their status.
 */
export function schedulerRules(leaseName: string): PolicyRule[] {
  return [
    EVENTS_RULE,
    ...leaderLeaseRules(leaseName),
    { verbs: READ, apiGroups: [""], resources: ["nodes"] },
    { verbs: [...READ, "delete"], apiGroups: [""], resources: ["pods"] },
    { verbs: ["create"], apiGroups: [""], resources: ["pods/binding", "bindings"] },
    { verbs: ["patch", "update"], apiGroups: [""], resources: ["pods/status"] },
    { verbs: READ, apiGroups: [""], resources: ["services", "replicationcontrollers"] },
    { verbs: READ, apiGroups: ["apps"], resources: ["replicasets", "statefulsets"] },
    { verbs: READ, apiGroups: ["policy"], resources: ["poddisruptionbudgets"] },
    {
      verbs: READ,
      apiGroups: [""],
      resources: ["persistentvolumeclaims", "persistentvolumes"],
    },
    ...ACCESS_CHECK_RULES,
  ];
}

/** `system:volume-scheduler`, which Kubernetes binds to the scheduler too. */
export const VOLUME_SCHEDULER_RULES: readonly PolicyRule[] = [
  { verbs: [...READ, "update"], apiGroups: [""], resources: ["persistentvolumes"] },
  { verbs: READ, apiGroups: ["storage.k8s.io"], resources: ["storageclasses"] },
  { verbs: [...READ, "update"], apiGroups: [""], resources: ["persistentvolumeclaims"] },
];
