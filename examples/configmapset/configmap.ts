/**
 * The fields of a managed ConfigMap that a ConfigMapSet owns, and nothing else:
 * - `data`: exactly the template's data;
 * - the template's labels, plus `SET_LABEL` naming the set; labels the template
 *   no longer lists are removed only if the set had put them there (their keys
 *   are remembered in the `TEMPLATE_LABELS_ANNOTATION` annotation), so labels
 *   other people add survive;
 * - the controller ownerReference to the set (by UID).
 * Everything else (other labels and annotations, binaryData, status-like fields
 * other tools add) is left alone, and a ConfigMap already as wanted is not
 * touched at all, so writing it again is a no-op.
 */
import { deepEqual } from "@setpoint/api";
import { getControllerOf, setControllerReference } from "@setpoint/runtime";
import type { ConfigMap, ConfigMapSet } from "./types.ts";

/** Label on every managed ConfigMap: the name of the set it belongs to (the controller's cache holds only these). */
export const SET_LABEL = "examples.setpoint.dev/configmapset";
/** Annotation on every managed ConfigMap: the template label keys the set put on it, sorted, comma-separated. */
export const TEMPLATE_LABELS_ANNOTATION = "examples.setpoint.dev/template-labels";

/** A ConfigMap of the same name that the set must not take over (another owner, or a user's own). */
export class ForeignConfigMapError extends Error {
  override name = "ForeignConfigMapError";
}

/** The skeleton of the ConfigMap a set keeps in `namespace`. */
export function managedConfigMap(set: ConfigMapSet, namespace: string): ConfigMap {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: set.metadata.name, namespace },
  };
}

/**
 * Whether `set` may manage `cm`: a new object, one it controls (by UID), or an
 * uncontrolled one carrying its label (e.g. its ownerReference was removed by
 * hand). A ConfigMap controlled by something else, or a user's unlabelled one,
 * is not taken over.
 */
export function mayManage(set: ConfigMapSet, cm: ConfigMap): boolean {
  if (!cm.metadata.uid) return true;
  const owner = getControllerOf(cm);
  if (owner) return owner.uid === set.metadata.uid;
  return cm.metadata.labels?.[SET_LABEL] === set.metadata.name;
}

/**
 * Sets the set's fields on `cm` (a mutable copy), changing nothing that is
 * already right. Throws ForeignConfigMapError when `mayManage` says no.
 */
export function applyTemplate(set: ConfigMapSet, cm: ConfigMap): void {
  if (!mayManage(set, cm)) {
    const owner = getControllerOf(cm);
    const by = owner ? `${owner.kind} ${owner.name}` : "no controller (a user's own)";
    throw new ForeignConfigMapError(
      `ConfigMap ${cm.metadata.namespace}/${cm.metadata.name} exists and is controlled by ${by}`,
    );
  }
  setControllerReference(set, cm);

  const data = set.spec.template?.data ?? {};
  if (!deepEqual(cm.data ?? {}, data)) {
    if (Object.keys(data).length === 0) delete cm.data;
    else cm.data = { ...data };
  }

  const templateLabels = set.spec.template?.labels ?? {};
  const previous = (cm.metadata.annotations?.[TEMPLATE_LABELS_ANNOTATION] ?? "")
    .split(",")
    .filter((k) => k !== "");
  const labels = { ...(cm.metadata.labels ?? {}) };
  for (const k of previous) if (!(k in templateLabels)) delete labels[k];
  Object.assign(labels, templateLabels, { [SET_LABEL]: set.metadata.name ?? "" });
  setMap(cm, "labels", labels);

  const keys = Object.keys(templateLabels)
    .filter((k) => k !== SET_LABEL)
    .sort()
    .join(",");
  const annotations = { ...(cm.metadata.annotations ?? {}) };
  if (keys) annotations[TEMPLATE_LABELS_ANNOTATION] = keys;
  else delete annotations[TEMPLATE_LABELS_ANNOTATION];
  setMap(cm, "annotations", annotations);
}

/** Replaces `cm.metadata[field]` with `next` if they differ (an empty map removes the field). */
function setMap(
  cm: ConfigMap,
  field: "labels" | "annotations",
  next: Record<string, string>,
): void {
  if (deepEqual(cm.metadata[field] ?? {}, next)) return;
  if (Object.keys(next).length === 0) delete cm.metadata[field];
  else cm.metadata[field] = next;
}
