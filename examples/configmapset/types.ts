/**
 * The ConfigMapSet custom resource (examples.setpoint.dev/v1alpha1): its wire
 * types, the kinds the controller works with, and its CustomResourceDefinition
 * (read from crd.yaml beside this file).
 */
import { readFileSync } from "node:fs";
import type { Condition, KubeObject, MetaV1LabelSelector } from "@setpoint/api";
import { kind } from "@setpoint/runtime";
import { parse } from "yaml";

/** The API group of the example. */
export const GROUP = "examples.setpoint.dev";
/** The served (and stored) version. */
export const VERSION = "v1alpha1";

/** The ConfigMapSet kind. Cluster-scoped. Reads given a kind return its type. */
export const ConfigMapSetKind = kind<ConfigMapSet>(`${GROUP}/${VERSION}`, "ConfigMapSet");
/** The core ConfigMap kind. */
export const ConfigMapKind = kind<ConfigMap>("v1", "ConfigMap");
/** The core Namespace kind. */
export const NamespaceKind = kind<Namespace>("v1", "Namespace");

/** What every managed ConfigMap holds. */
export interface ConfigMapTemplate {
  data?: Record<string, string>;
  labels?: Record<string, string>;
}

export interface ConfigMapSetSpec {
  /** Namespaces whose labels match get the ConfigMap; `{}` matches every namespace. */
  namespaceSelector: MetaV1LabelSelector;
  template?: ConfigMapTemplate;
}

export interface ConfigMapSetStatus {
  /** The `metadata.generation` this status was computed from. */
  observedGeneration?: number;
  /** Namespaces the selector matches (terminating ones excluded). */
  matchingNamespaces?: number;
  /** Of those, namespaces whose ConfigMap is as the template says. */
  readyConfigMaps?: number;
  /** `Ready`: every matching namespace has its ConfigMap. */
  conditions?: Condition[];
}

export interface ConfigMapSet extends KubeObject {
  spec: ConfigMapSetSpec;
  status?: ConfigMapSetStatus;
}

export interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
  immutable?: boolean;
}

export interface Namespace extends KubeObject {
  status?: { phase?: string };
}

/** The ConfigMapSet CustomResourceDefinition, as in crd.yaml. */
export function configMapSetCrd(): KubeObject {
  return parse(readFileSync(new URL("./crd.yaml", import.meta.url), "utf8")) as KubeObject;
}

/** A ConfigMapSet object, ready to create. */
export function configMapSet(
  name: string,
  spec: ConfigMapSetSpec,
  labels?: Record<string, string>,
): ConfigMapSet {
  const metadata: KubeObject["metadata"] = { name };
  if (labels) metadata.labels = labels;
  return { apiVersion: ConfigMapSetKind.apiVersion, kind: ConfigMapSetKind.kind, metadata, spec };
}
