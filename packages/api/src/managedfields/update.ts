/**
 * Field ownership for non-apply writes (create, update, patch, status update): the
 * fields whose values a write sets or changes become the writer's (an "Update"
 * entry for the manager, the request's apiVersion and subresource) and stop being
 * anybody else's; fields the write removes stop being anybody's.
 *
 * Which managedFields the write starts from is Kubernetes' rule:
 * - a write through a subresource always starts from the live object's;
 * - otherwise the request's own managedFields count when they are valid and not
 *   empty (this is how a client rewrites them, e.g. kubectl's client-side → server-side
 *   apply migration, see last-applied.ts); `[]` or `[{}]` resets them to nothing; absent
 *   or invalid ones fall back to the live object's;
 * - an existing object without managedFields (never tracked, or reset) is not
 *   tracked by updates: the result stays empty until the next apply. Creates are
 *   always tracked.
 */

import { isJsonObject } from "../deep-copy.ts";
import type { KubeObject, ManagedFieldsEntry } from "../meta.ts";
import type { Schema } from "../schema.ts";
import { compareObjects } from "./compare.ts";
import { createdFieldsV1 } from "./created.ts";
import { fieldKey } from "./field-path.ts";
import { FieldSet } from "./field-set.ts";
import {
  capUpdateManagers,
  decodeManagedFields,
  decodeManagedFieldsOrEmpty,
  encodeManagedFields,
  isResetManagedFields,
  type Managed,
  ManagedFieldsError,
  type ManagerEntry,
  managerId,
} from "./managers.ts";

/** Who writes, and when: the inputs both entry points need besides the objects. */
export interface ManagedFieldsOptions {
  /** fieldManager; the default is chosen by the caller. */
  manager: string;
  /** The request's apiVersion ("v1", "apps/v1"). */
  apiVersion: string;
  /** "status" for writes to /status; absent for the main resource. */
  subresource?: string | undefined;
  /** RFC 3339 time of the write, supplied by the caller. */
  time: string;
}

const meta = (name: string) => [fieldKey("metadata"), fieldKey(name)];

/**
 * Fields never tracked in managedFields (Kubernetes strips these): apiVersion, kind,
 * the metadata node itself, and metadata.name, namespace, creationTimestamp,
 * selfLink, uid, clusterName, generation, managedFields and resourceVersion.
 */
export const UNTRACKED_FIELDS: FieldSet = FieldSet.of(
  [fieldKey("apiVersion")],
  [fieldKey("kind")],
  [fieldKey("metadata")],
  meta("name"),
  meta("namespace"),
  meta("creationTimestamp"),
  meta("selfLink"),
  meta("uid"),
  meta("clusterName"),
  meta("generation"),
  meta("managedFields"),
  meta("resourceVersion"),
);

/** The identity of a writer: manager name, operation, apiVersion, subresource. */
export type Writer = Pick<ManagerEntry, "manager" | "operation" | "apiVersion" | "subresource">;

/** The writer of a non-apply write with these options. */
export function updateWriter(opts: ManagedFieldsOptions, manager = opts.manager): Writer {
  const w: Writer = { manager, operation: "Update", apiVersion: opts.apiVersion };
  if (opts.subresource) w.subresource = opts.subresource;
  return w;
}

/** `obj` without metadata.managedFields (a shallow copy; the input is not changed). */
export function withoutManagedFields(obj: KubeObject): KubeObject {
  if (!isJsonObject(obj.metadata) || !Object.hasOwn(obj.metadata, "managedFields")) return obj;
  const { managedFields: _, ...metadata } = obj.metadata;
  return { ...obj, metadata };
}

/**
 * Records a write from `live` (undefined: nothing) to `next` by `writer` at `time`:
 * the changed fields leave every manager's set and join the writer's Update entry
 * (its time set); removed fields leave every set; empty entries are dropped.
 */
export function recordUpdate(
  managed: Managed,
  live: KubeObject | undefined,
  next: KubeObject,
  schema: Schema | undefined,
  writer: Writer,
  time: string,
): Managed {
  const c = compareObjects(live, next, schema);
  const changed = c.modified.empty ? c.added : c.modified.union(c.added);
  const out: Managed = new Map();
  for (const [id, e] of managed) {
    const set = e.set.difference(changed).difference(c.removed);
    if (!set.empty) out.set(id, { ...e, set });
  }
  const own = changed.difference(UNTRACKED_FIELDS);
  if (!own.empty) {
    const id = managerId(writer);
    const previous = out.get(id);
    out.set(id, { ...writer, time, set: previous ? own.union(previous.set) : own });
  }
  return out;
}

function startingManaged(
  live: KubeObject | undefined,
  next: KubeObject,
  opts: ManagedFieldsOptions,
): Managed {
  const liveManaged = () => decodeManagedFieldsOrEmpty(live?.metadata?.managedFields);
  if (opts.subresource) return liveManaged();
  const requested: unknown = next.metadata?.managedFields;
  if (isResetManagedFields(requested)) return new Map();
  try {
    const m = decodeManagedFields(requested);
    if (m.size > 0) return m;
  } catch (e) {
    if (!(e instanceof ManagedFieldsError)) throw e;
  }
  return liveManaged();
}

/**
 * A non-apply write (create, update, patch, status update): the fields whose values
 * the write changed or set become owned by `opts.manager` with operation "Update";
 * removed from other managers' sets. Returns the new managedFields list (entries
 * with empty sets dropped; an empty list means the object carries none). When
 * nothing changed, the result equals the starting list, times included.
 */
export function updateManagedFields(
  live: KubeObject | undefined,
  next: KubeObject,
  schema: Schema,
  opts: ManagedFieldsOptions,
): ManagedFieldsEntry[] {
  const managed = startingManaged(live, next, opts);
  const creating = live === undefined || !live.metadata?.uid;
  if (managed.size === 0 && !creating) return [];
  if (managed.size === 0 && live === undefined) {
    // A new object: every field it has is the writer's.
    const fieldsV1 = createdFieldsV1(withoutManagedFields(next), schema, UNTRACKED_FIELDS);
    if (fieldsV1 === undefined) return [];
    const entry: ManagedFieldsEntry = {};
    if (opts.manager) entry.manager = opts.manager;
    entry.operation = "Update";
    entry.apiVersion = opts.apiVersion;
    if (opts.time) entry.time = opts.time;
    entry.fieldsType = "FieldsV1";
    entry.fieldsV1 = fieldsV1;
    if (opts.subresource) entry.subresource = opts.subresource;
    return [entry];
  }
  const from = live && withoutManagedFields(live);
  const updated = recordUpdate(
    managed,
    from,
    withoutManagedFields(next),
    schema,
    updateWriter(opts),
    opts.time,
  );
  return encodeManagedFields(capUpdateManagers(updated));
}
