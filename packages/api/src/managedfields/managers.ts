/**
 * metadata.managedFields decoded into per-manager field sets, and encoded back.
 *
 * A manager is identified as Kubernetes identifies it: by name, operation and
 * subresource, plus the apiVersion for Update entries (an updater writing through
 * two versions has two entries; an applier has one whatever version it applies).
 * Entries are written sorted as Kubernetes sorts them: Apply before Update, then by
 * time (oldest first), manager, apiVersion and subresource.
 */

import { isJsonObject } from "../deep-copy.ts";
import type { ManagedFieldsEntry } from "../meta.ts";
import { FieldSet, FieldsV1Error } from "./field-set.ts";
import { compareStrings, goJson, goQuote } from "./value.ts";

/** One manager's ownership. */
export interface ManagerEntry {
  manager: string;
  operation: "Apply" | "Update";
  apiVersion: string;
  subresource?: string | undefined;
  time?: string | undefined;
  set: FieldSet;
}

/** Every manager's ownership, by manager identifier. */
export type Managed = Map<string, ManagerEntry>;

/**
 * At most this many Update entries are kept (Kubernetes' DefaultMaxUpdateManagers);
 * beyond it the oldest are merged into an "ancient-changes" entry per apiVersion.
 */
export const MAX_UPDATE_MANAGERS = 10;

/** The manager that older Update entries are merged into past MAX_UPDATE_MANAGERS. */
export const ANCIENT_CHANGES_MANAGER = "ancient-changes";

/** Thrown when managedFields cannot be decoded. */
export class ManagedFieldsError extends Error {
  override name = "ManagedFieldsError";
}

/** The identifier of a manager (the JSON Kubernetes builds for it). */
export function managerId(e: {
  manager: string;
  operation: "Apply" | "Update";
  apiVersion: string;
  subresource?: string | undefined;
}): string {
  const parts: string[] = [];
  if (e.manager) parts.push(`"manager":${goJson(e.manager)}`);
  parts.push(`"operation":${goJson(e.operation)}`);
  if (e.operation === "Update" && e.apiVersion) parts.push(`"apiVersion":${goJson(e.apiVersion)}`);
  if (e.subresource) parts.push(`"subresource":${goJson(e.subresource)}`);
  return `{${parts.join(",")}}`;
}

/** A manager as conflict messages print it: `"name"`, `"name" using v1`, `"name" with subresource "status"`. */
export function printManager(
  e: Pick<ManagerEntry, "manager" | "operation" | "apiVersion" | "subresource">,
): string {
  let s = goQuote(e.manager);
  if (e.subresource) s += ` with subresource ${goQuote(e.subresource)}`;
  if (e.operation === "Update") s += ` using ${e.apiVersion}`;
  return s;
}

/**
 * True if a managedFields value asks for the entries to be reset: an empty list, or
 * a list holding one empty entry (`[{}]`).
 */
export function isResetManagedFields(list: unknown): boolean {
  if (!Array.isArray(list)) return false;
  if (list.length === 0) return true;
  if (list.length !== 1 || !isJsonObject(list[0])) return false;
  const e = list[0] as ManagedFieldsEntry;
  return (
    !e.manager &&
    !e.operation &&
    !e.apiVersion &&
    !e.time &&
    !e.fieldsType &&
    e.fieldsV1 === undefined &&
    !e.subresource
  );
}

/** Decodes managedFields; throws ManagedFieldsError if an entry is invalid. Absent → empty. */
export function decodeManagedFields(list: unknown): Managed {
  const out: Managed = new Map();
  if (list === undefined || list === null) return out;
  if (!Array.isArray(list)) throw new ManagedFieldsError("managedFields must be a list");
  list.forEach((raw, i) => {
    if (!isJsonObject(raw))
      throw new ManagedFieldsError(`managed fields entry ${i} must be an object`);
    const e = raw as ManagedFieldsEntry;
    if (e.operation !== "Apply" && e.operation !== "Update") {
      throw new ManagedFieldsError("operation must be `Apply` or `Update`");
    }
    if (typeof e.apiVersion !== "string" || e.apiVersion.length === 0) {
      throw new ManagedFieldsError("apiVersion must not be empty");
    }
    if (e.fieldsType === undefined || (e.fieldsType as string) === "") {
      throw new ManagedFieldsError(`missing fieldsType in managed fields entry ${i}`);
    }
    if (e.fieldsType !== "FieldsV1") {
      throw new ManagedFieldsError(
        `invalid fieldsType ${goQuote(String(e.fieldsType))} in managed fields entry ${i}`,
      );
    }
    let set: FieldSet;
    try {
      set = FieldSet.fromFieldsV1(e.fieldsV1 ?? {});
    } catch (err) {
      if (err instanceof FieldsV1Error)
        throw new ManagedFieldsError(`error decoding set: ${err.message}`);
      throw err;
    }
    const entry: ManagerEntry = {
      manager: typeof e.manager === "string" ? e.manager : "",
      operation: e.operation,
      apiVersion: e.apiVersion,
      set,
    };
    if (typeof e.subresource === "string" && e.subresource) entry.subresource = e.subresource;
    if (typeof e.time === "string" && e.time) entry.time = e.time;
    out.set(managerId(entry), entry);
  });
  return out;
}

/** Decodes managedFields, treating invalid ones as none. */
export function decodeManagedFieldsOrEmpty(list: unknown): Managed {
  try {
    return decodeManagedFields(list);
  } catch (e) {
    if (e instanceof ManagedFieldsError) return new Map();
    throw e;
  }
}

function seconds(time: string | undefined): number {
  if (!time) return 0;
  const ms = Date.parse(time);
  return Number.isNaN(ms) ? 0 : Math.floor(ms / 1000);
}

function cmp(a: string, b: string): number {
  return compareStrings(a, b);
}

/** Encodes managers as managedFields entries, sorted as Kubernetes sorts them. */
export function encodeManagedFields(managed: Managed): ManagedFieldsEntry[] {
  const entries = [...managed.values()].filter((e) => !e.set.empty);
  entries.sort(
    (p, q) =>
      cmp(p.operation, q.operation) ||
      seconds(p.time) - seconds(q.time) ||
      cmp(p.manager, q.manager) ||
      cmp(p.apiVersion, q.apiVersion) ||
      cmp(p.subresource ?? "", q.subresource ?? ""),
  );
  return entries.map((e) => {
    const out: ManagedFieldsEntry = {};
    if (e.manager) out.manager = e.manager;
    out.operation = e.operation;
    out.apiVersion = e.apiVersion;
    if (e.time) out.time = e.time;
    out.fieldsType = "FieldsV1";
    out.fieldsV1 = e.set.toFieldsV1();
    if (e.subresource) out.subresource = e.subresource;
    return out;
  });
}

/** True if both hold the same managers with the same versions, times and fields. */
export function sameManaged(a: Managed, b: Managed): boolean {
  if (a.size !== b.size) return false;
  for (const [id, e] of a) {
    const o = b.get(id);
    if (!o || o.apiVersion !== e.apiVersion || o.time !== e.time || !o.set.equals(e.set))
      return false;
  }
  return true;
}

/** A copy of `managed` whose entries can be replaced without touching the original map. */
export function copyManaged(managed: Managed): Managed {
  return new Map(managed);
}

/**
 * Merges the oldest Update entries into "ancient-changes" entries (one per
 * apiVersion) until at most MAX_UPDATE_MANAGERS Update entries remain, as
 * Kubernetes does after every update.
 */
export function capUpdateManagers(managed: Managed, max = MAX_UPDATE_MANAGERS): Managed {
  const updaters = [...managed.entries()].filter(([, e]) => e.operation === "Update");
  if (updaters.length <= max) return managed;
  const out = copyManaged(managed);
  updaters.sort(([ia, a], [ib, b]) => seconds(a.time) - seconds(b.time) || cmp(ia, ib));
  const firstOfVersion = new Map<string, string>();
  let length = updaters.length;
  for (let i = 0; i < updaters.length && length > max; i++) {
    const [id, e] = updaters[i];
    const bucketEntry = {
      manager: ANCIENT_CHANGES_MANAGER,
      operation: "Update" as const,
      apiVersion: e.apiVersion,
    };
    const bucket = managerId(bucketEntry);
    const first = firstOfVersion.get(e.apiVersion);
    if (first === undefined) {
      firstOfVersion.set(e.apiVersion, id);
      continue;
    }
    let into = out.get(bucket);
    if (!into) {
      const firstEntry = out.get(first);
      out.delete(first);
      into = { ...bucketEntry, set: firstEntry?.set ?? new FieldSet() };
      if (firstEntry?.time) into.time = firstEntry.time;
    }
    const merged: ManagerEntry = { ...bucketEntry, set: e.set.union(into.set) };
    if (e.time) merged.time = e.time;
    out.set(bucket, merged);
    out.delete(id);
    length--;
  }
  return out;
}
