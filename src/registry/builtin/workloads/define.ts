/**
 * One constructor for the workload kinds' definitions: names, scope, the schema
 * generated from Kubernetes' Go types, status and scale subresources, printer
 * columns, and the strategy. Each kind's file says only what is its own.
 */
import type {
  CreateSubresource,
  ExtraSubresource,
  NodeConnectSubresource,
  NodeStreamSubresource,
  PrinterColumn,
  ResourceDefinition,
  ScaleSubresource,
  Strategy,
} from "../../types.ts";
import { workloadSchema } from "./schemas.ts";

/** Kubernetes' Go package of each group: the prefix of its definition names. */
const PACKAGE: Record<string, string> = {
  "": "io.k8s.api.core",
  "admissionregistration.k8s.io": "io.k8s.api.admissionregistration",
  apps: "io.k8s.api.apps",
  batch: "io.k8s.api.batch",
  "discovery.k8s.io": "io.k8s.api.discovery",
  "networking.k8s.io": "io.k8s.api.networking",
  policy: "io.k8s.api.policy",
  "rbac.authorization.k8s.io": "io.k8s.api.rbac",
};

export interface WorkloadKind {
  group: string;
  kind: string;
  plural: string;
  shortNames?: string[];
  categories?: string[];
  namespaced: boolean;
  /** Whether status is written through `/status` only. */
  status: boolean;
  /** Whether metadata.generation moves on spec changes (Kubernetes' strategy). */
  generation: boolean;
  columns: PrinterColumn[];
  /** Whether tables end with an Age column (default true). */
  ageColumn?: boolean;
  scale?: ScaleSubresource;
  strategy?: Omit<Strategy, "allowUnconditionalUpdate" | "tracksGeneration">;
  subresources?: ExtraSubresource[];
  createSubresources?: CreateSubresource[];
  nodeStreamSubresources?: NodeStreamSubresource[];
  nodeConnectSubresources?: NodeConnectSubresource[];
  returnDeletedObject?: boolean;
  verbs?: readonly string[];
}

/** The definition name of a kind: io.k8s.api.apps.v1.Deployment. */
export function workloadTypeName(group: string, kind: string): string {
  return `${PACKAGE[group]}.v1.${kind}`;
}

/** The ResourceDefinition of a workload kind (served as v1, the storage version). */
export function workloadDefinition(k: WorkloadKind): ResourceDefinition {
  const def: ResourceDefinition = {
    group: k.group,
    names: {
      plural: k.plural,
      singular: k.kind.toLowerCase(),
      kind: k.kind,
      listKind: `${k.kind}List`,
      shortNames: k.shortNames ?? [],
      categories: k.categories ?? [],
    },
    namespaced: k.namespaced,
    custom: false,
    protobufMessage: workloadTypeName(k.group, k.kind).replace(/^io\.k8s\./, "k8s.io."),
    strategicMergePatch: true,
    versions: [
      {
        name: "v1",
        served: true,
        storage: true,
        schema: workloadSchema(workloadTypeName(k.group, k.kind)),
        statusSubresource: k.status,
        ...(k.scale ? { scale: k.scale } : {}),
        printerColumns: k.columns,
        ...(k.ageColumn === false ? { ageColumn: false } : {}),
      },
    ],
    strategy: {
      allowUnconditionalUpdate: true,
      tracksGeneration: k.generation,
      ...k.strategy,
    },
  };
  if (k.subresources) def.subresources = k.subresources;
  if (k.createSubresources) def.createSubresources = k.createSubresources;
  if (k.nodeStreamSubresources) def.nodeStreamSubresources = k.nodeStreamSubresources;
  if (k.nodeConnectSubresources) def.nodeConnectSubresources = k.nodeConnectSubresources;
  if (k.returnDeletedObject) def.returnDeletedObject = true;
  if (k.verbs) def.verbs = k.verbs;
  return def;
}
