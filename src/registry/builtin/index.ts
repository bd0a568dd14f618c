/** Every built-in type, in the order discovery lists them within a group. */
import type { ResourceDefinition } from "../types.ts";
import {
  mutatingWebhookConfigurationDefinition,
  validatingAdmissionPolicyBindingDefinition,
  validatingAdmissionPolicyDefinition,
  validatingWebhookConfigurationDefinition,
} from "./admission/index.ts";
import { configMapDefinition } from "./config-map.ts";
import { coreEventDefinition } from "./core-event.ts";
import { eventsV1EventDefinition } from "./events-event.ts";
import { leaseDefinition } from "./lease.ts";
import { namespaceDefinition } from "./namespace.ts";
import {
  clusterRoleBindingDefinition,
  clusterRoleDefinition,
  roleBindingDefinition,
  roleDefinition,
} from "./rbac/index.ts";
import {
  localSubjectAccessReviewDefinition,
  selfSubjectAccessReviewDefinition,
  selfSubjectReviewDefinition,
  selfSubjectRulesReviewDefinition,
  subjectAccessReviewDefinition,
  tokenReviewDefinition,
} from "./reviews.ts";
import { secretDefinition } from "./secret.ts";
import { serviceAccountDefinition } from "./service-account.ts";
import {
  controllerRevisionDefinition,
  cronJobDefinition,
  daemonSetDefinition,
  deploymentDefinition,
  endpointSliceDefinition,
  endpointsDefinition,
  ingressClassDefinition,
  ingressDefinition,
  jobDefinition,
  nodeDefinition,
  persistentVolumeClaimDefinition,
  persistentVolumeDefinition,
  podDefinition,
  podDisruptionBudgetDefinition,
  podTemplateDefinition,
  replicaSetDefinition,
  replicationControllerDefinition,
  type ServiceRanges,
  serviceDefinitionFor,
  statefulSetDefinition,
} from "./workloads/index.ts";

export * from "./admission/index.ts";
export { configMapDefinition } from "./config-map.ts";
export { coreEventDefinition } from "./core-event.ts";
export { eventsV1EventDefinition } from "./events-event.ts";
export { leaseDefinition } from "./lease.ts";
export { namespaceDefinition } from "./namespace.ts";
export * from "./rbac/index.ts";
export {
  localSubjectAccessReviewDefinition,
  selfSubjectAccessReviewDefinition,
  selfSubjectReviewDefinition,
  selfSubjectRulesReviewDefinition,
  subjectAccessReviewDefinition,
  tokenReviewDefinition,
} from "./reviews.ts";
export { secretDefinition } from "./secret.ts";
export { serviceAccountDefinition } from "./service-account.ts";
export * from "./workloads/index.ts";

/** How the built-in types are set up where a server's options say so. */
export interface BuiltinOptions {
  /** The ranges Services' cluster IPs and node ports come from (default DEFAULT_SERVICE_RANGES). */
  serviceRanges?: ServiceRanges;
}

/** The built-in resource definitions. */
export function builtinDefinitions(opts: BuiltinOptions = {}): ResourceDefinition[] {
  return [
    podDefinition,
    nodeDefinition,
    serviceDefinitionFor(opts.serviceRanges),
    endpointsDefinition,
    podTemplateDefinition,
    configMapDefinition,
    coreEventDefinition,
    namespaceDefinition,
    secretDefinition,
    serviceAccountDefinition,
    deploymentDefinition,
    replicaSetDefinition,
    controllerRevisionDefinition,
    jobDefinition,
    replicationControllerDefinition,
    persistentVolumeClaimDefinition,
    persistentVolumeDefinition,
    daemonSetDefinition,
    statefulSetDefinition,
    cronJobDefinition,
    endpointSliceDefinition,
    ingressDefinition,
    ingressClassDefinition,
    podDisruptionBudgetDefinition,
    clusterRoleBindingDefinition,
    clusterRoleDefinition,
    roleBindingDefinition,
    roleDefinition,
    mutatingWebhookConfigurationDefinition,
    validatingWebhookConfigurationDefinition,
    validatingAdmissionPolicyDefinition,
    validatingAdmissionPolicyBindingDefinition,
    leaseDefinition,
    eventsV1EventDefinition,
    selfSubjectReviewDefinition,
    selfSubjectAccessReviewDefinition,
    selfSubjectRulesReviewDefinition,
    subjectAccessReviewDefinition,
    localSubjectAccessReviewDefinition,
    tokenReviewDefinition,
  ];
}

/** Built-in API groups in Kubernetes' priority order (discovery lists groups this way). */
export const BUILTIN_GROUP_ORDER: readonly string[] = [
  "",
  "apps",
  "events.k8s.io",
  "authentication.k8s.io",
  "authorization.k8s.io",
  "batch",
  "networking.k8s.io",
  "policy",
  "rbac.authorization.k8s.io",
  "admissionregistration.k8s.io",
  "coordination.k8s.io",
  "discovery.k8s.io",
];
