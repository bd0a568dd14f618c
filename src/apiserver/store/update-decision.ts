/**
 * The decision every update path (PUT, patch, apply, scale) shares: preconditions,
 * the status split, server-owned metadata, generation, defaults, validation,
 * removal once the last finalizer is gone, and no write at all when nothing
 * changed.
 */

import type { KubeObject } from "@setpoint/api";
import { deepClone, errors, fieldErrors } from "@setpoint/api";
import { canonicalizeObject } from "../wire/canonical.ts";
import { recordUpdate } from "./field-manager.ts";
import {
  applyDefaults,
  authorizeWrite,
  bumpGeneration,
  checkLimits,
  prepareUpdate,
  readyToRemove,
  sameObject,
  statusUpdate,
  validateUpdate,
} from "./lifecycle.ts";
import { managedBoundaryWarning } from "./managed-boundary.ts";
import { prepareNewObject } from "./new-object.ts";
import type { StoreContext } from "./scope.ts";
import { conflictError } from "./store-errors.ts";
import type { WriteDecision } from "./writes.ts";

export interface UpdatePlan {
  manager: string;
  /** Whether a missing object is created (create-on-update types, apply). */
  allowCreate: boolean;
  /** Server-side apply: field ownership was already recorded by the apply. */
  apply?: boolean;
  /**
   * Where to add warnings for the writer (the response's Warning headers): a write
   * that changes fields the object's controller manages gets one (managed-boundary.ts).
   */
  warnings?: string[];
  /** A dry run (admission webhooks are told). */
  dryRun?: boolean;
  /**
   * A write straight to storage, as Kubernetes' BindingREST makes one
   * (`storage.GuaranteedUpdate`, not the registry's update): the object's
   * defaults and form are kept, but no field ownership is recorded and the
   * update is neither admitted nor validated as an update of the object.
   */
  storageOnly?: boolean;
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
 * namespace bound) stores, for the main resource or the scope's subresource.
 */
export async function decideUpdate(
  ctx: StoreContext,
  candidate: KubeObject,
  current: KubeObject | null,
  plan: UpdatePlan,
): Promise<WriteDecision> {
  const { def, version } = ctx;
  const sub = ctx.scope.subresource;
  const now = new Date();
  if (!current) {
    if (!plan.allowCreate || sub) throw errors.notFound(ctx.subject);
    const obj = deepClone(candidate);
    delete obj.metadata.resourceVersion;
    const prepared = await prepareNewObject(
      ctx,
      obj,
      plan.manager,
      now,
      !plan.apply,
      plan.dryRun === true,
    );
    return { action: "create", obj: prepared };
  }
  const requested = candidate.metadata.resourceVersion;
  if (requested) {
    if (requested !== current.metadata.resourceVersion) throw conflictError(ctx.subject);
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
    const creates = def.createSubresources?.find((s) => s.name === sub && s.updateParent);
    if (extra) next = extra.update(deepClone(candidate), current);
    // A create subresource that changes its parent made the candidate from it.
    else if (creates) next = deepClone(candidate);
    else throw errors.notFound(ctx.subject);
    keepSystemFields(next, current);
  }
  next.metadata.resourceVersion = current.metadata.resourceVersion;
  if (plan.storageOnly) return storageOnlyUpdate(ctx, next, current);
  if (!plan.apply) {
    recordUpdate(current, next, version.schema, {
      manager: plan.manager,
      apiVersion: ctx.apiVersion,
      now,
      ...(sub ? { subresource: sub } : {}),
    });
  }
  applyDefaults(next, def, version);
  canonicalizeObject(next, def, version);
  const admission = ctx.services.admission;
  const dryRun = plan.dryRun === true;
  const mutated = await admission?.mutate(ctx, {
    operation: "UPDATE",
    object: next,
    oldObject: current,
    dryRun,
  });
  if (mutated) {
    next = mutated;
    applyDefaults(next, def, version);
    canonicalizeObject(next, def, version);
  }
  bumpGeneration(next, current, def, sub);
  const removing = readyToRemove(next, def);
  // An update that changes nothing stores nothing, and is not validated again: the
  // stored object was when it was written (Kubernetes' validation ratcheting
  // likewise accepts what an update leaves as it was).
  if (!removing && sameObject(next, current)) return { action: "noop", obj: current };
  validateUpdate(next, current, def);
  authorizeWrite(ctx, next, current);
  await admission?.validate(ctx, { operation: "UPDATE", object: next, oldObject: current, dryRun });
  if (removing) return { action: "delete", obj: next };
  if (plan.warnings) {
    const warning = managedBoundaryWarning(current, next, plan.manager, sub);
    if (warning !== undefined) plan.warnings.push(warning);
  }
  return { action: "update", obj: next };
}

/** What a write straight to storage stores (UpdatePlan.storageOnly). */
function storageOnlyUpdate(
  ctx: StoreContext,
  next: KubeObject,
  current: KubeObject,
): WriteDecision {
  applyDefaults(next, ctx.def, ctx.version);
  canonicalizeObject(next, ctx.def, ctx.version);
  return sameObject(next, current)
    ? { action: "noop", obj: current }
    : { action: "update", obj: next };
}
