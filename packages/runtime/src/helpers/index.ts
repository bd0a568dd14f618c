/**
 * Reconcile helpers: conditions, createOrUpdate, finalizers, owner references,
 * status written only when it changed, bounded concurrency (mapLimit), and
 * one-shot side effects with an idempotency key (runOneShot).
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
  ActionNotPerformedError,
  ActionRefusedError,
  MAX_ONE_SHOT_RESULT_BYTES,
  ONE_SHOT_ANNOTATION_PREFIX,
  type OneShotAction,
  type OneShotClient,
  type OneShotOutcome,
  type OneShotRecord,
  type OneShotRetry,
  oneShotAnnotation,
  oneShotKey,
  readOneShotRecord,
  runOneShot,
} from "./one-shot.ts";
export {
  AlreadyOwnedError,
  getControllerOf,
  isControlledBy,
  removeOwnerReference,
  setControllerReference,
  setOwnerReference,
} from "./owner-references.ts";
export { updateStatusIfChanged, type WithStatus } from "./status.ts";
