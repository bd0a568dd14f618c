/**
 * The workload kinds as typed objects: Pods, Nodes, Services, Endpoints and
 * EndpointSlices, Deployments, ReplicaSets, ControllerRevisions, Jobs, Ingresses,
 * PodDisruptionBudgets, and the nested types controllers and the data plane read.
 *
 * Field shapes come from `kubernetes-types` (types only, nothing at run time); each
 * kind is made a KubeObject here (metadata always present, as every stored object
 * has it), so it works with the runtime's typed client and cache:
 *
 *   const pods = await client.list<Pod>({ apiVersion: "v1", kind: "Pod" });
 *   pods.items[0].spec?.containers[0].image;
 */
import type * as apps from "kubernetes-types/apps/v1.js";
import type * as batch from "kubernetes-types/batch/v1.js";
import type * as core from "kubernetes-types/core/v1.js";
import type * as discovery from "kubernetes-types/discovery/v1.js";
import type * as networking from "kubernetes-types/networking/v1.js";
import type * as policy from "kubernetes-types/policy/v1.js";
import type { KubeObject } from "./meta.ts";

/** A kubernetes-types object made a KubeObject: its own fields, our metadata. */
export type Typed<T> = Omit<T, "metadata" | "apiVersion" | "kind" | "status"> &
  KubeObject &
  (T extends { status?: infer S } ? { status?: S } : unknown);

export type Pod = Typed<core.Pod>;
export type Node = Typed<core.Node>;
export type Service = Typed<core.Service>;
export type Endpoints = Typed<core.Endpoints>;
export type PodTemplate = Typed<core.PodTemplate>;
export type Binding = Typed<core.Binding>;
export type Deployment = Typed<apps.Deployment>;
export type ReplicaSet = Typed<apps.ReplicaSet>;
export type ControllerRevision = Typed<apps.ControllerRevision>;
export type Job = Typed<batch.Job>;
export type EndpointSlice = Typed<discovery.EndpointSlice>;
export type Ingress = Typed<networking.Ingress>;
export type IngressClass = Typed<networking.IngressClass>;
export type PodDisruptionBudget = Typed<policy.PodDisruptionBudget>;
export type Eviction = Typed<policy.Eviction>;

export type {
  DeploymentCondition,
  DeploymentSpec,
  DeploymentStatus,
  DeploymentStrategy,
  ReplicaSetCondition,
  ReplicaSetSpec,
  ReplicaSetStatus,
} from "kubernetes-types/apps/v1.js";
export type { JobCondition, JobSpec, JobStatus } from "kubernetes-types/batch/v1.js";
export type {
  Container,
  ContainerPort,
  ContainerStatus,
  EndpointAddress,
  EndpointPort,
  EndpointSubset,
  EnvVar,
  NodeCondition,
  NodeSelectorRequirement,
  NodeSelectorTerm,
  NodeSpec,
  NodeStatus,
  PodCondition,
  PodSpec,
  PodStatus,
  PodTemplateSpec,
  Probe,
  ServicePort,
  ServiceSpec,
  ServiceStatus,
  Taint,
  Toleration,
} from "kubernetes-types/core/v1.js";
export type {
  Endpoint as EndpointSliceEndpoint,
  EndpointConditions,
  EndpointPort as EndpointSlicePort,
} from "kubernetes-types/discovery/v1.js";
export type { IngressRule, IngressSpec } from "kubernetes-types/networking/v1.js";
