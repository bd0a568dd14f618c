/** The apiextensions.k8s.io/v1 CustomResourceDefinition wire shapes this folder reads. */
import type { Schema } from "@setpoint/api";

/** The API group of CustomResourceDefinitions. */
export const APIEXTENSIONS_GROUP = "apiextensions.k8s.io";

export interface CrdNames {
  plural?: string;
  singular?: string;
  kind?: string;
  listKind?: string;
  shortNames?: string[];
  categories?: string[];
}

export interface CrdColumn {
  name?: string;
  type?: string;
  format?: string;
  description?: string;
  priority?: number;
  jsonPath?: string;
}

export interface CrdScale {
  specReplicasPath?: string;
  statusReplicasPath?: string;
  labelSelectorPath?: string;
}

export interface CrdSubresources {
  status?: Record<string, unknown>;
  scale?: CrdScale;
}

export interface CrdVersion {
  name?: string;
  served?: boolean;
  storage?: boolean;
  deprecated?: boolean;
  deprecationWarning?: string;
  schema?: { openAPIV3Schema?: Schema };
  subresources?: CrdSubresources;
  additionalPrinterColumns?: CrdColumn[];
  selectableFields?: { jsonPath?: string }[];
}

export interface CrdSpec {
  group?: string;
  names?: CrdNames;
  scope?: string;
  versions?: CrdVersion[];
  conversion?: { strategy?: string; webhook?: unknown };
  preserveUnknownFields?: boolean;
}

export interface CrdCondition {
  type: string;
  status: "True" | "False" | "Unknown";
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

export interface CrdStatus {
  conditions?: CrdCondition[];
  acceptedNames?: CrdNames;
  storedVersions?: string[];
}

/** The spec of a CRD object (an empty spec when it has none). */
export function crdSpec(obj: { [field: string]: unknown }): CrdSpec {
  const s = obj.spec;
  return typeof s === "object" && s !== null && !Array.isArray(s) ? (s as CrdSpec) : {};
}

/** The status of a CRD object (empty when it has none). */
export function crdStatus(obj: { [field: string]: unknown }): CrdStatus {
  const s = obj.status;
  return typeof s === "object" && s !== null && !Array.isArray(s) ? (s as CrdStatus) : {};
}
