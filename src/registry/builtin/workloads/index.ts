/**
 * The workload kinds (Pod, Node, Service, Endpoints, PodTemplate, Deployment,
 * ReplicaSet, ControllerRevision, Job, EndpointSlice, Ingress, IngressClass,
 * PodDisruptionBudget; and, served without a loop yet, DaemonSet, StatefulSet,
 * ReplicationController, CronJob, PersistentVolumeClaim, PersistentVolume): their definitions, and their schemas made from the
 * generated field facts of Kubernetes' Go types (generated/workload-types.json).
 */
export {
  controllerRevisionDefinition,
  deploymentDefinition,
  replicaSetDefinition,
} from "./apps.ts";
export {
  endpointsDefinition,
  nodeDefinition,
  podTemplateDefinition,
  serviceDefinition,
  serviceDefinitionFor,
} from "./core.ts";
export type { WorkloadKind } from "./define.ts";
export { workloadDefinition, workloadTypeName } from "./define.ts";
export { JOB_CONTROLLER_UID_LABEL, JOB_NAME_LABEL, jobDefinition } from "./job.ts";
export { labelSelectorSchema, metaConditionSchema } from "./meta-extra.ts";
export {
  endpointSliceDefinition,
  ingressClassDefinition,
  ingressDefinition,
  podDisruptionBudgetDefinition,
} from "./network.ts";
export { decidePodDelete, podDefinition, podStatusCell } from "./pod.ts";
export { DEFAULT_TOLERATION_SECONDS, defaultPullPolicy, qosClass } from "./pod-defaults.ts";
export {
  cronJobDefinition,
  daemonSetDefinition,
  replicationControllerDefinition,
  statefulSetDefinition,
} from "./pod-sets.ts";
export type { FieldFacts, FieldType, ProtobufFacts, StructFacts } from "./schemas.ts";
export { WORKLOAD_TYPES, workloadSchema } from "./schemas.ts";
export {
  DEFAULT_SERVICE_RANGES,
  firstServiceIP,
  parseClusterIPRange,
  parseNodePortRange,
  type ServiceRanges,
  serviceClaims,
} from "./service-allocation.ts";
export { persistentVolumeClaimDefinition, persistentVolumeDefinition } from "./volumes.ts";
