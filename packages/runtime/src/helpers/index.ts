/**
 * Reconcile helpers: conditions, createOrUpdate, finalizers, owner references,
 * status written only when it changed, and bounded concurrency (mapLimit).
 */

export { mapLimit } from "./concurrency.ts";
export {
  type ConditionInput,
  findCondition,
  isConditionTrue,
  removeCondition,
  setCondition,
  setErrorCondition,
  setStatusCondition,
  type WithConditions,
} from "./conditions.ts";
export {
  type CreateOrUpdateOptions,
  createOrUpdate,
  type MutateFn,
  type OperationResult,
} from "./create-or-update.ts";
export {
  addFinalizer,
  hasFinalizer,
  isBeingDeleted,
  removeFinalizer,
} from "./finalizers.ts";
export {
  AlreadyOwnedError,
  getControllerOf,
  isControlledBy,
  removeOwnerReference,
  setControllerReference,
  setOwnerReference,
} from "./owner-references.ts";
export { updateStatusIfChanged, type WithStatus } from "./status.ts";
