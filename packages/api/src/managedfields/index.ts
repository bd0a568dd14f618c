/**
 * Field management (server-side apply): metadata.managedFields in the FieldsV1
 * format, ownership recorded on every write, conflicts, and merging applied
 * configurations per the schema. Pure logic: the apiserver calls
 * `updateManagedFields` on every non-apply write and `applyServerSide` for
 * `application/apply-patch+yaml` patches; what an object's controller manages
 * (controller.ts).
 */
export { type ApplyOptions, applyServerSide, BEFORE_FIRST_APPLY_MANAGER } from "./apply.ts";
export { type Comparison, compareObjects } from "./compare.ts";
export { ApplyConflicts, type Conflict, conflictError } from "./conflict.ts";
export {
  type ControllerManagement,
  controllerManagement,
  controllingReference,
  deepestPaths,
  entriesOwningReference,
  fieldsOwnedBy,
} from "./controller.ts";
export { extractFields, TypedValueError } from "./extract.ts";
export {
  canonicalPathKey,
  comparePathKeys,
  fieldKey,
  keyKey,
  type Path,
  type PathElement,
  PathElementError,
  type PathKey,
  parsePathElement,
  pathString,
  serializePathElement,
  valueKey,
} from "./field-path.ts";
export { FieldSet, FieldsV1Error } from "./field-set.ts";
export {
  allowedConflictsFromLastApplied,
  KUBECTL_MANAGER,
  LAST_APPLIED_ANNOTATION,
  lastAppliedValue,
  TOTAL_ANNOTATION_SIZE_LIMIT,
} from "./last-applied.ts";
export {
  ANCIENT_CHANGES_MANAGER,
  decodeManagedFields,
  encodeManagedFields,
  isResetManagedFields,
  MAX_UPDATE_MANAGERS,
  type Managed,
  ManagedFieldsError,
  type ManagerEntry,
  managerId,
} from "./managers.ts";
export { mergeObjects } from "./merge.ts";
export { pruneObject, removeFields } from "./prune.ts";
export { type ManagedFieldsOptions, UNTRACKED_FIELDS, updateManagedFields } from "./update.ts";
