/**
 * Wire types shared by every layer: the parts of Kubernetes' meta/v1 that every
 * object carries. Objects are plain JSON; `KubeObject` types the common envelope.
 */

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean | undefined;
  blockOwnerDeletion?: boolean | undefined;
}

export type FieldsV1 = Record<string, unknown>;

export interface ManagedFieldsEntry {
  manager?: string | undefined;
  operation?: "Apply" | "Update" | undefined;
  apiVersion?: string | undefined;
  time?: string | undefined;
  fieldsType?: "FieldsV1" | undefined;
  fieldsV1?: FieldsV1 | undefined;
  subresource?: string | undefined;
}

export interface ObjectMeta {
  name?: string | undefined;
  generateName?: string | undefined;
  namespace?: string | undefined;
  uid?: string | undefined;
  resourceVersion?: string | undefined;
  generation?: number | undefined;
  creationTimestamp?: string | undefined;
  deletionTimestamp?: string | undefined;
  deletionGracePeriodSeconds?: number | undefined;
  labels?: Record<string, string> | undefined;
  annotations?: Record<string, string> | undefined;
  ownerReferences?: OwnerReference[] | undefined;
  finalizers?: string[] | undefined;
  managedFields?: ManagedFieldsEntry[] | undefined;
}

export interface ListMeta {
  resourceVersion?: string | undefined;
  continue?: string | undefined;
  remainingItemCount?: number | undefined;
}

/** Any API object: apiVersion, kind, metadata, and whatever else its type defines. */
export interface KubeObject {
  apiVersion?: string | undefined;
  kind?: string | undefined;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

export interface KubeList<T extends KubeObject = KubeObject> {
  apiVersion: string;
  kind: string;
  metadata: ListMeta;
  items: T[];
}

/** A condition as in Kubernetes' metav1.Condition. */
export interface Condition {
  type: string;
  status: "True" | "False" | "Unknown";
  observedGeneration?: number | undefined;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

export interface GroupVersionResource {
  group: string;
  version: string;
  resource: string;
}

/** "v1" for the core group, "group/version" otherwise. */
export function apiVersionOf(group: string, version: string): string {
  return group === "" ? version : `${group}/${version}`;
}

/** Splits an apiVersion ("v1", "apps/v1") into group and version. */
export function parseApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf("/");
  if (slash < 0) return { group: "", version: apiVersion };
  return { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

/** The second of the last timestamp made, and its text (writes come many per second). */
let lastSecond = Number.NaN;
let lastTimestamp = "";

/** RFC 3339 timestamp with second precision, as Kubernetes writes metav1.Time. */
export function nowTimestamp(date: Date = new Date()): string {
  const second = Math.floor(date.getTime() / 1000);
  if (second !== lastSecond) {
    lastTimestamp = `${date.toISOString().slice(0, 19)}Z`;
    lastSecond = second;
  }
  return lastTimestamp;
}
