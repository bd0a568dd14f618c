/**
 * DELETE on an object, and on a collection (deletecollection). Deletion honours
 * preconditions (uid, resourceVersion); an object with finalizers (or one the
 * propagation policy gives a finalizer) is only marked: deletionTimestamp and
 * deletionGracePeriodSeconds 0 are set and the object is returned; it is removed
 * by the write that empties its finalizers. A Namespace's first deletion marks it
 * Terminating and keeps it until its spec.finalizers are emptied through
 * /finalize.
 */

import type { KubeObject } from "@setpoint/api";
import {
  deepClone,
  errors,
  matchesFields,
  matchesLabels,
  nowTimestamp,
  type Status,
} from "@setpoint/api";
import { collectionPrefix, objectKey } from "../store/keys.ts";
import { isNamespaceType, sameObject } from "../store/lifecycle.ts";
import { TERMINATING } from "../store/namespaces.ts";
import { conflictError, statusFromStorage } from "../store/store-errors.ts";
import { guaranteedUpdate, type WriteDecision } from "../store/writes.ts";
import { decodeStored } from "../wire/codec.ts";
import { renderList } from "../wire/render.ts";
import { writeObject } from "../wire/response.ts";
import type { RequestScope } from "./context.ts";
import { type DeleteOptions, deletionFinalizers, parseDeleteOptions } from "./delete-options.ts";
import { fieldValues, parseListOptions } from "./list-options.ts";
import { parseMediaType, readBody } from "./request.ts";
import { respondObject, respondStatus } from "./respond.ts";

/** Built-in types whose deletion answers with the object, as in Kubernetes. */
const RETURNS_DELETED_OBJECT = new Set(["namespaces", "serviceaccounts"]);

/**
 * Whether a successful deletion answers with the deleted object rather than a
 * Status: the definition says so, or else custom resources, Namespaces and
 * ServiceAccounts do, as in Kubernetes.
 */
export function returnsDeletedObject(scope: RequestScope): boolean {
  const { def } = scope;
  return (
    def.returnDeletedObject ??
    (def.custom || (def.group === "" && RETURNS_DELETED_OBJECT.has(def.names.plural)))
  );
}

function checkPreconditions(scope: RequestScope, obj: KubeObject, o: DeleteOptions): void {
  const p = o.preconditions;
  if (!p) return;
  const subject = { ...scope.subject, name: obj.metadata.name ?? "" };
  if (p.uid !== undefined && p.uid !== obj.metadata.uid) {
    throw conflictError(
      subject,
      `Precondition failed: UID in precondition: ${p.uid}, UID in object meta: ${obj.metadata.uid ?? ""}`,
    );
  }
  if (p.resourceVersion !== undefined && p.resourceVersion !== obj.metadata.resourceVersion) {
    throw conflictError(
      subject,
      `Precondition failed: ResourceVersion in precondition: ${p.resourceVersion}, ResourceVersion in object meta: ${obj.metadata.resourceVersion ?? ""}`,
    );
  }
}

function markDeleting(obj: KubeObject, finalizers: string[], now: Date, grace: boolean): void {
  if (finalizers.length > 0) obj.metadata.finalizers = finalizers;
  else delete obj.metadata.finalizers;
  if (!obj.metadata.deletionTimestamp) {
    obj.metadata.deletionTimestamp = nowTimestamp(now);
    if (grace) obj.metadata.deletionGracePeriodSeconds = 0;
  }
}

/** What deleting `current` with `o` does. */
export function decideDelete(
  scope: RequestScope,
  current: KubeObject | null,
  o: DeleteOptions,
  subjectName: string,
): WriteDecision {
  if (!current) throw errors.notFound({ ...scope.subject, name: subjectName });
  checkPreconditions(scope, current, o);
  const now = new Date();
  const { finalizers, changed } = deletionFinalizers(current, o);
  if (isNamespaceType(scope.def)) {
    if (!current.metadata.deletionTimestamp) {
      const next = deepClone(current);
      markDeleting(next, finalizers, now, false);
      const status = (next.status ?? {}) as Record<string, unknown>;
      next.status = { ...status, phase: TERMINATING };
      return { action: "update", obj: next };
    }
    const spec = current.spec as { finalizers?: unknown[] } | undefined;
    if ((spec?.finalizers?.length ?? 0) > 0) return { action: "noop", obj: current };
  }
  if (finalizers.length > 0) {
    const next = deepClone(current);
    markDeleting(next, finalizers, now, true);
    if (!changed && sameObject(next, current)) return { action: "noop", obj: current };
    return { action: "update", obj: next };
  }
  return { action: "delete", obj: current };
}

/** Deletes (or marks) the object at `key`; returns the outcome. */
async function deleteAt(
  scope: RequestScope,
  key: string,
  name: string,
  o: DeleteOptions,
): Promise<{ obj: KubeObject; deleted: boolean }> {
  const outcome = await guaranteedUpdate(scope, key, o.dryRun, (current) =>
    decideDelete(scope, current, o, name),
  );
  return { obj: outcome.obj, deleted: outcome.action === "delete" };
}

async function readDeleteOptions(scope: RequestScope): Promise<DeleteOptions> {
  const body = await readBody(scope.req, scope.ctx.limits.maxBodyBytes);
  return parseDeleteOptions(body, parseMediaType(scope.req.headers["content-type"]), scope.query);
}

/** Handles DELETE on an object. */
export async function deleteResource(scope: RequestScope): Promise<void> {
  const o = await readDeleteOptions(scope);
  const name = scope.name!;
  if (isNamespaceType(scope.def)) {
    scope.ctx.namespaces.admitDelete(name);
    scope.ctx.namespaces.noteDeleting(name);
  }
  const key = objectKey(scope.def, scope.namespace, name);
  const { obj, deleted } = await deleteAt(scope, key, name, o);
  if (!deleted || returnsDeletedObject(scope)) {
    const accepted = !deleted && o.orphanDependents === false;
    respondObject(scope, accepted ? 202 : 200, obj);
    return;
  }
  const status: Status = {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Success",
    details: {
      name: obj.metadata.name ?? name,
      group: scope.def.group,
      kind: scope.def.names.plural,
      uid: obj.metadata.uid ?? "",
    },
    code: 200,
  };
  respondStatus(scope, status);
}

/** Handles DELETE on a collection: deletes every object the selectors match. */
export async function deleteCollection(scope: RequestScope): Promise<void> {
  const opts = parseListOptions(scope.query, scope.def, scope.version.name, false);
  const o = await readDeleteOptions(scope);
  const { store, limits } = scope.ctx;
  const prefix = collectionPrefix(scope.def, scope.namespace);
  const targets: { key: string; name: string }[] = [];
  let token: string | undefined;
  try {
    do {
      const page = await store.list(prefix, {
        limit: limits.storagePageSize,
        ...(token ? { continue: token } : {}),
      });
      for (const kv of page.items) {
        const obj = decodeStored(kv, scope.def);
        const fields = fieldValues(scope.def, obj);
        if (!matchesLabels(opts.labelSelector, obj.metadata.labels)) continue;
        if (!matchesFields(opts.fieldSelector, (f) => fields[f])) continue;
        targets.push({ key: kv.key, name: obj.metadata.name ?? "" });
      }
      token = page.continue;
    } while (token);
  } catch (err) {
    throw statusFromStorage(err, scope.subject);
  }
  const items: KubeObject[] = [];
  for (const t of targets) {
    try {
      const { obj } = await deleteAt(scope, t.key, t.name, o);
      items.push(obj);
    } catch (err) {
      // Gone in the meantime: someone else deleted it, which is what was asked.
      if (err instanceof Error && (err as { code?: number }).code === 404) continue;
      throw err;
    }
  }
  const r = scope.renderer;
  writeObject(scope.res, 200, renderList(r, items, {}), {
    mediaType: r.output.mediaType,
    contentType: r.output.contentType,
    warnings: scope.warnings,
  });
}
