/**
 * PUT on an object, its status, or another subresource; and the decision every
 * update path (PUT, patch, apply) shares: preconditions, the status split,
 * server-owned metadata, generation, defaults, validation, removal once the last
 * finalizer is gone, and no write at all when nothing changed.
 */

import type { KubeObject } from "@setpoint/api";
import { deepClone, errors, fieldErrors } from "@setpoint/api";
import { recordUpdate } from "../store/field-manager.ts";
import { objectKey } from "../store/keys.ts";
import {
  applyDefaults,
  bumpGeneration,
  checkLimits,
  prepareUpdate,
  readyToRemove,
  sameObject,
  statusUpdate,
  validateUpdate,
} from "../store/lifecycle.ts";
import { conflictError } from "../store/store-errors.ts";
import { guaranteedUpdate, type WriteDecision } from "../store/writes.ts";
import { fieldManager, parseDryRun, parseFieldValidation, readObject } from "../wire/body.ts";
import { convertToStorage } from "../wire/codec.ts";
import type { RequestScope } from "./context.ts";
import { bindNamespace, prepareNewObject } from "./create.ts";
import { respondObject } from "./respond.ts";

export interface UpdatePlan {
  manager: string;
  /** Whether a missing object is created (create-on-update types, apply). */
  allowCreate: boolean;
  /** Server-side apply: field ownership was already recorded by the apply. */
  apply?: boolean;
}

/** 400 unless the body names the object the URL names. */
export function checkName(scope: RequestScope, obj: KubeObject): void {
  const name = obj.metadata.name ?? "";
  if (name !== scope.name) {
    throw errors.badRequest(
      `the name of the object (${name}) does not match the name on the URL (${scope.name ?? ""})`,
    );
  }
}

/** Keeps server-owned metadata from the stored object on a subresource write. */
function keepSystemFields(next: KubeObject, old: KubeObject): void {
  const m = next.metadata;
  const o = old.metadata;
  m.uid = o.uid;
  m.name = o.name;
  if (o.namespace !== undefined) m.namespace = o.namespace;
  m.creationTimestamp = o.creationTimestamp;
  if (o.generation === undefined) delete m.generation;
  else m.generation = o.generation;
  if (o.deletionTimestamp) m.deletionTimestamp = o.deletionTimestamp;
  if (o.deletionGracePeriodSeconds !== undefined) {
    m.deletionGracePeriodSeconds = o.deletionGracePeriodSeconds;
  }
}

/**
 * Decides what an update of `current` to `candidate` (storage version, name and
 * namespace bound) stores, for the main resource or `scope.subresource`.
 */
export async function decideUpdate(
  scope: RequestScope,
  candidate: KubeObject,
  current: KubeObject | null,
  plan: UpdatePlan,
): Promise<WriteDecision> {
  const { def, version } = scope;
  const now = new Date();
  if (!current) {
    if (!plan.allowCreate || scope.subresource) throw errors.notFound(scope.subject);
    const obj = deepClone(candidate);
    delete obj.metadata.resourceVersion;
    const prepared = await prepareNewObject(scope, obj, plan.manager, now, !plan.apply);
    return { action: "create", obj: prepared };
  }
  const requested = candidate.metadata.resourceVersion;
  if (requested) {
    if (requested !== current.metadata.resourceVersion) throw conflictError(scope.subject);
  } else if (!def.strategy.allowUnconditionalUpdate) {
    throw errors.invalid(
      def.names.kind,
      current.metadata.name ?? "",
      [fieldErrors.invalid("metadata.resourceVersion", "0x0", "must be specified for an update")],
      def.group,
    );
  }
  checkLimits(candidate, def);
  let next: KubeObject;
  const sub = scope.subresource;
  if (sub === undefined || sub === "scale") {
    // A scale write is a write of the main resource with only the replicas changed.
    next = deepClone(candidate);
    prepareUpdate(next, current, def, version);
  } else if (sub === "status") {
    next = statusUpdate(deepClone(candidate), current);
    if (plan.apply) {
      // The apply recorded its ownership in the candidate's managedFields.
      const managed = candidate.metadata.managedFields;
      if (managed) next.metadata.managedFields = deepClone(managed);
      else delete next.metadata.managedFields;
    }
  } else {
    const extra = def.subresources?.find((s) => s.name === sub);
    if (!extra) throw errors.notFound(scope.subject);
    next = extra.update(deepClone(candidate), current);
    keepSystemFields(next, current);
  }
  next.metadata.resourceVersion = current.metadata.resourceVersion;
  if (!plan.apply) {
    recordUpdate(current, next, version.schema, {
      manager: plan.manager,
      apiVersion: scope.apiVersion,
      now,
      ...(sub ? { subresource: sub } : {}),
    });
  }
  applyDefaults(next, def, version);
  bumpGeneration(next, current, def, sub);
  const removing = readyToRemove(next, def);
  // An update that changes nothing stores nothing, and is not validated again: the
  // stored object was when it was written (Kubernetes' validation ratcheting
  // likewise accepts what an update leaves as it was).
  if (!removing && sameObject(next, current)) return { action: "noop", obj: current };
  validateUpdate(next, current, def);
  if (removing) return { action: "delete", obj: next };
  return { action: "update", obj: next };
}

/** Whether a PUT to a missing object of this type creates it. */
export function allowsCreateOnUpdate(scope: RequestScope): boolean {
  return scope.def.strategy.allowCreateOnUpdate === true;
}

/** Handles PUT on an object or one of its subresources. */
export async function updateResource(scope: RequestScope): Promise<void> {
  const mode = parseFieldValidation(scope, "UpdateOptions");
  const dryRun = parseDryRun(scope, "UpdateOptions");
  const manager = fieldManager(scope, "UpdateOptions");
  const body = await readObject(scope, mode);
  checkName(scope, body);
  bindNamespace(scope, body);
  const candidate = convertToStorage(body, scope.def);
  const key = objectKey(scope.def, scope.namespace, scope.name!);
  const plan: UpdatePlan = { manager, allowCreate: allowsCreateOnUpdate(scope) };
  const outcome = await guaranteedUpdate(scope, key, dryRun, (current) =>
    decideUpdate(scope, candidate, current, plan),
  );
  respondObject(scope, outcome.action === "create" ? 201 : 200, outcome.obj);
}
