/**
 * Client-side apply's `kubectl.kubernetes.io/last-applied-configuration` annotation
 * and the move from client-side apply (CSA) to server-side apply (SSA).
 *
 * What a server has to do, as Kubernetes does it:
 *
 * 1. While a CSA-managed object is applied server-side by the manager "kubectl"
 *    (kubectl's default for `apply --server-side`), conflicts with the fields the
 *    CSA writer ("kubectl-client-side-apply", an Update entry) owns are forgiven when
 *    those fields are in the annotation and the live object still has the
 *    annotation's values for them: the user is changing their own configuration, so
 *    the apply is retried with force. Any other conflict is reported as usual.
 * 2. After every successful apply by "kubectl" to an object that carries the
 *    annotation, the annotation is rewritten to the applied configuration (Go's JSON
 *    encoding, keys sorted, with a trailing newline, and the annotation itself left
 *    out), so that going back to client-side apply still works. It is dropped instead
 *    when it would push the annotations past 256 KiB.
 *
 * The rest happens in kubectl (1.26 and later), through ordinary requests, right after
 * its server-side apply:
 * - if no Apply entry owns the annotation, it applies the annotation alone with the
 *   manager "kubectl-last-applied", so later applies do not prune it;
 * - it finds the Update entries owning the annotation (the CSA writers) and sends a
 *   JSON patch that replaces metadata.managedFields: their field sets are merged into
 *   the "kubectl" Apply entry (without the annotation path), the CSA entries removed,
 *   plus a `replace` of metadata.resourceVersion so a concurrent change fails with 409;
 * - when it migrated, it applies again, so fields dropped from the configuration
 *   since the last client-side apply are now removed.
 *
 * For that second step the server must let a non-apply write set managedFields:
 * updateManagedFields starts from the request's managedFields when they are valid
 * and not empty, and leaves them as they are when the write changes nothing else.
 */

import { isJsonObject } from "../deep-copy.ts";
import type { KubeObject } from "../meta.ts";
import type { Schema } from "../schema.ts";
import { compareObjects } from "./compare.ts";
import { extractFields } from "./extract.ts";
import type { FieldSet } from "./field-set.ts";
import { cloneJson, getOwn, goJson } from "./value.ts";

/** The annotation client-side apply keeps its last applied configuration in. */
export const LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration";

/** The only manager whose applies read and maintain the annotation (kubectl's SSA default). */
export const KUBECTL_MANAGER = "kubectl";

/** Kubernetes' limit on the total size (bytes of keys and values) of an object's annotations. */
export const TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024;

function annotationsOf(obj: KubeObject | undefined): Record<string, unknown> | undefined {
  const a = obj?.metadata?.annotations;
  return isJsonObject(a) ? a : undefined;
}

/** The annotation's value, if the object has a non-empty one. */
export function lastAppliedOf(obj: KubeObject | undefined): string | undefined {
  const v = annotationsOf(obj) && getOwn(annotationsOf(obj)!, LAST_APPLIED_ANNOTATION);
  return typeof v === "string" && v.length > 0 ? v : undefined;
}

/**
 * The fields whose conflicts a "kubectl" apply may override: those set in the
 * annotation's configuration that the live object still holds with the same value.
 * Undefined when there is no usable annotation (absent, not JSON, another apiVersion,
 * or not readable as the type).
 */
export function allowedConflictsFromLastApplied(
  live: KubeObject | undefined,
  schema: Schema | undefined,
  apiVersion: string,
): FieldSet | undefined {
  const text = lastAppliedOf(live);
  if (!live || text === undefined) return undefined;
  let last: unknown;
  try {
    last = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isJsonObject(last) || last.apiVersion !== apiVersion) return undefined;
  let set: FieldSet;
  try {
    set = extractFields(last, schema, true);
  } catch {
    return undefined;
  }
  const c = compareObjects(last, live, schema);
  return set.difference(c.modified).difference(c.added).difference(c.removed);
}

/** The annotation value for an applied configuration: Go-encoded JSON without the annotation. */
export function lastAppliedValue(applied: KubeObject): string {
  const copy = cloneJson(applied);
  const annotations = annotationsOf(copy);
  if (annotations) {
    delete annotations[LAST_APPLIED_ANNOTATION];
    if (Object.keys(annotations).length === 0) delete copy.metadata.annotations;
  }
  return `${goJson(copy)}\n`;
}

function annotationsSize(a: Record<string, unknown>): number {
  let n = 0;
  for (const [k, v] of Object.entries(a)) {
    n += Buffer.byteLength(k, "utf8") + (typeof v === "string" ? Buffer.byteLength(v, "utf8") : 0);
  }
  return n;
}

/**
 * Rewrites the annotation of `obj` (changed in place) to `applied`'s configuration,
 * or removes it when the annotations would exceed TOTAL_ANNOTATION_SIZE_LIMIT.
 */
export function syncLastApplied(obj: KubeObject, applied: KubeObject): void {
  const annotations = annotationsOf(obj);
  if (!annotations) return;
  annotations[LAST_APPLIED_ANNOTATION] = lastAppliedValue(applied);
  if (annotationsSize(annotations) > TOTAL_ANNOTATION_SIZE_LIMIT) {
    delete annotations[LAST_APPLIED_ANNOTATION];
  }
}
