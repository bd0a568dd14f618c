/**
 * Server-side apply: merging a manager's applied configuration into the live object
 * and recording that the manager now owns exactly the fields of that configuration.
 *
 * Steps, as Kubernetes takes them:
 * 1. An object that has no managedFields yet gets its existing fields attributed to
 *    "before-first-apply" (an Update entry), so that they can conflict.
 * 2. The configuration is merged into the live object (merge.ts).
 * 3. Fields the manager applied last time and leaves out now are removed, unless
 *    some manager still owns them (prune.ts). Unlike Kubernetes, nodes the
 *    configuration contains are never removed, owned or not (Kubernetes would drop,
 *    say, an empty list the configuration sets when it sits in a map the manager no
 *    longer owns anything of, and add it back on the next apply).
 * 4. The result is compared with the live object: every field whose value changes
 *    (or that appears) and that another manager owns is a conflict: 409, unless
 *    `force`, which takes those fields from their owners. Applying a value equal to
 *    the live one is no change, so the field becomes shared instead.
 * 5. The manager's Apply entry becomes the configuration's field set; removed fields
 *    leave every set; entries left empty are dropped. The entry's time moves when the
 *    object changes (and is set on a new entry).
 * Client-side apply's annotation is handled as described in last-applied.ts.
 */

import { deepEqual, isJsonObject, setMember } from "../deep-copy.ts";
import type { KubeObject } from "../meta.ts";
import { parseApiVersion } from "../meta.ts";
import type { Schema } from "../schema.ts";
import { errors, type StatusError } from "../status.ts";
import { type Comparison, compareObjects } from "./compare.ts";
import { ApplyConflicts, conflictError, conflictsOf } from "./conflict.ts";
import { extractFields, extractNodes, TypedValueError } from "./extract.ts";
import { FieldSet } from "./field-set.ts";
import {
  allowedConflictsFromLastApplied,
  KUBECTL_MANAGER,
  lastAppliedOf,
  syncLastApplied,
} from "./last-applied.ts";
import {
  capUpdateManagers,
  decodeManagedFieldsOrEmpty,
  encodeManagedFields,
  type Managed,
  type ManagerEntry,
  managerId,
  sameManaged,
} from "./managers.ts";
import { mergeObjects } from "./merge.ts";
import { pruneObject } from "./prune.ts";
import {
  type ManagedFieldsOptions,
  recordUpdate,
  UNTRACKED_FIELDS,
  updateWriter,
  type Writer,
} from "./update.ts";
import { cloneJson } from "./value.ts";

/** The manager existing fields are attributed to when an object is applied to for the first time. */
export const BEFORE_FIRST_APPLY_MANAGER = "before-first-apply";

/**
 * metadata fields the server sets: the result of an apply keeps the live object's
 * values (and drops whatever the configuration says, e.g. `creationTimestamp: null`).
 * resourceVersion is not among them: a configuration that carries one keeps it,
 * so that a write with it fails on a stale object, as in Kubernetes.
 */
const SYSTEM_METADATA = ["uid", "creationTimestamp", "generation", "selfLink"] as const;

/** Options of an apply: the writer, and whether to take conflicting fields. */
export type ApplyOptions = ManagedFieldsOptions & { force: boolean };

function gvkString(obj: KubeObject): string {
  const { group, version } = parseApiVersion(
    typeof obj.apiVersion === "string" ? obj.apiVersion : "",
  );
  return `${group}/${version}, Kind=${typeof obj.kind === "string" ? obj.kind : ""}`;
}

function badConfig(applied: KubeObject, err: TypedValueError): StatusError {
  const m = isJsonObject(applied.metadata) ? applied.metadata : {};
  const ns = typeof m.namespace === "string" ? m.namespace : "";
  const name = typeof m.name === "string" ? m.name : "";
  return errors.badRequest(
    `failed to create typed patch object (${ns}/${name}; ${gvkString(applied)}): ${err.message}`,
  );
}

function checkApplied(applied: KubeObject, opts: ApplyOptions): void {
  if (!isJsonObject(applied))
    throw errors.badRequest("the applied configuration must be an object");
  const version = typeof applied.apiVersion === "string" ? applied.apiVersion : "";
  if (version !== opts.apiVersion) {
    throw errors.badRequest(
      `Incorrect version specified in apply patch. Specified patch version: ${version}, expected: ${opts.apiVersion}`,
    );
  }
  const mf = isJsonObject(applied.metadata) ? applied.metadata.managedFields : undefined;
  if (mf !== undefined && mf !== null)
    throw errors.badRequest("metadata.managedFields must be nil");
}

/** The merged object with the live object's system metadata. */
function withSystemMetadata(
  merged: Record<string, unknown>,
  live: KubeObject | undefined,
): Record<string, unknown> {
  if (!isJsonObject(merged.metadata)) return merged;
  const metadata: Record<string, unknown> = { ...merged.metadata };
  const liveMeta: Record<string, unknown> =
    live && isJsonObject(live.metadata) ? live.metadata : {};
  for (const k of SYSTEM_METADATA) {
    if (Object.hasOwn(liveMeta, k)) setMember(metadata, k, liveMeta[k]);
    else delete metadata[k];
  }
  return { ...merged, metadata };
}

const NO_CHANGE: Comparison = {
  added: new FieldSet(),
  modified: new FieldSet(),
  removed: new FieldSet(),
};

function union(managed: Managed): FieldSet {
  let out = new FieldSet();
  for (const e of managed.values()) out = out.union(e.set);
  return out;
}

interface Applied {
  object: Record<string, unknown>;
  changed: boolean;
  managed: Managed;
}

function applyOnce(
  live: KubeObject | undefined,
  applied: KubeObject,
  appliedSet: FieldSet,
  managed: Managed,
  schema: Schema,
  writer: Writer,
  time: string,
  force: boolean,
): Applied {
  const id = managerId(writer);
  const previous = managed.get(id);
  const merged = withSystemMetadata(mergeObjects(live, applied, schema), live);

  const candidate: Managed = new Map(managed);
  candidate.set(id, { ...writer, set: appliedSet });
  let result = merged;
  if (previous && !previous.set.difference(appliedSet).empty) {
    // Nodes the configuration itself contains are kept even when they are no field of
    // anybody's (an empty list it sets, inside a map it no longer owns anything of),
    // so that applying the configuration again changes nothing.
    const kept = union(candidate).union(extractNodes(applied, schema));
    result = pruneObject(merged, previous.set, kept, schema);
  }

  const changed = !deepEqual(live ?? {}, result);
  const c = changed ? compareObjects(live, result, schema) : NO_CHANGE;
  const changedFields = c.modified.union(c.added);
  const conflicting = new Map<string, { manager: ManagerEntry; fields: FieldSet }>();
  for (const [other, e] of managed) {
    if (other === id) continue;
    const fields = e.set.intersection(changedFields);
    if (!fields.empty) conflicting.set(other, { manager: e, fields });
  }
  if (conflicting.size > 0 && !force) throw new ApplyConflicts(conflictsOf(conflicting));

  const out: Managed = new Map();
  for (const [other, e] of managed) {
    if (other === id) continue;
    let set = conflicting.has(other) ? e.set.difference(changedFields) : e.set;
    set = set.difference(c.removed);
    if (!set.empty) out.set(other, set === e.set ? e : { ...e, set });
  }
  const own = appliedSet.difference(UNTRACKED_FIELDS);
  if (!own.empty) {
    const entry: ManagerEntry = { ...writer, set: own };
    const t = changed || !previous?.time ? time : previous.time;
    entry.time = t;
    out.set(id, entry);
  }
  return { object: result, changed, managed: out };
}

/**
 * Server-side apply of `applied` (a partial object) by `opts.manager` onto `live`
 * (undefined when creating). Returns the merged object with metadata.managedFields
 * updated.
 *
 * Throws StatusError 409 (reason Conflict, details.causes[] each with reason
 * "FieldManagerConflict", field like ".spec.replicas", message like
 * `conflict with "other-manager" using v1`) if the configuration sets a field to a
 * different value than one owned by another manager, unless `force` (then
 * ownership moves to the applier). Throws 400 for a configuration that names
 * another apiVersion, carries managedFields, or has duplicate or unidentifiable
 * list items.
 *
 * Fields the manager applied before and leaves out now are removed from the object
 * unless another manager still owns them. Applying an identical configuration
 * returns an object deep-equal to `live` (so the caller can skip the write).
 *
 * The result keeps the live object's uid, creationTimestamp, generation and
 * selfLink; a resourceVersion in the configuration is kept (it is a precondition
 * for the caller's write), otherwise the live one stays. apiVersion/kind/name are
 * merged like any field but never tracked. Status fields are neither stripped nor
 * special here: the caller removes what the subresource may not change.
 */
export function applyServerSide(
  live: KubeObject | undefined,
  applied: KubeObject,
  schema: Schema,
  opts: ApplyOptions,
): KubeObject {
  checkApplied(applied, opts);
  let appliedSet: FieldSet;
  try {
    appliedSet = extractFields(applied, schema, true);
  } catch (e) {
    if (e instanceof TypedValueError) throw badConfig(applied, e);
    throw e;
  }

  const liveManaged = decodeManagedFieldsOrEmpty(live?.metadata?.managedFields);
  let managed = liveManaged;
  if (managed.size === 0 && live) {
    const writer = updateWriter(opts, BEFORE_FIRST_APPLY_MANAGER);
    managed = capUpdateManagers(recordUpdate(managed, undefined, live, schema, writer, opts.time));
  }

  const writer: Writer = { manager: opts.manager, operation: "Apply", apiVersion: opts.apiVersion };
  if (opts.subresource) writer.subresource = opts.subresource;
  let result: Applied;
  try {
    result = applyOnce(live, applied, appliedSet, managed, schema, writer, opts.time, opts.force);
  } catch (e) {
    if (!(e instanceof ApplyConflicts)) throw e;
    const allowed =
      opts.manager === KUBECTL_MANAGER
        ? allowedConflictsFromLastApplied(live, schema, opts.apiVersion)
        : undefined;
    if (!allowed) throw conflictError(e.conflicts);
    const remaining = e.conflicts.filter((c) => !allowed.has(c.path));
    if (remaining.length > 0) throw conflictError(remaining);
    result = applyOnce(live, applied, appliedSet, managed, schema, writer, opts.time, true);
  }

  const out = cloneJson(
    result.changed || !live ? result.object : (live as Record<string, unknown>),
  ) as KubeObject;
  if (!isJsonObject(out.metadata)) out.metadata = {};
  const entries =
    live?.metadata?.managedFields && sameManaged(result.managed, liveManaged)
      ? cloneJson(live.metadata.managedFields)
      : encodeManagedFields(result.managed);
  if (entries.length > 0) out.metadata.managedFields = entries;
  else delete out.metadata.managedFields;
  if (opts.manager === KUBECTL_MANAGER && lastAppliedOf(out) !== undefined)
    syncLastApplied(out, applied);
  return out;
}
