/**
 * The workload kinds (Pod, Node, Service, Deployment, ReplicaSet, Job, ...): their
 * schemas, made from the generated field facts of Kubernetes' Go types.
 */
export { labelSelectorSchema, metaConditionSchema } from "./meta-extra.ts";
export type { FieldFacts, FieldType, ProtobufFacts, StructFacts } from "./schemas.ts";
export { WORKLOAD_TYPES, workloadSchema } from "./schemas.ts";
