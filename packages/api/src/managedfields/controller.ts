/**
 * What an object's controller manages: the managers that own its controlling
 * ownerReference (`f:metadata.f:ownerReferences.k:{"uid":...}` in managedFields)
 * are the controller's writers, whether it writes with server-side apply or with
 * plain updates, and the fields they own are the ones it sets back when someone
 * else changes them. The apiserver warns on such changes; `setpoint doctor
 * KIND/NAME` shows them.
 */
import type { KubeObject, ManagedFieldsEntry, OwnerReference } from "../meta.ts";
import { fieldKey, keyKey, type PathKey } from "./field-path.ts";
import { FieldSet } from "./field-set.ts";

/** The controlling ownerReference of `obj`, if any. */
export function controllingReference(obj: KubeObject): OwnerReference | undefined {
  return obj.metadata.ownerReferences?.find((r) => r.controller === true);
}

/** The managedFields entries that own the owner reference with `uid`. */
export function entriesOwningReference(obj: KubeObject, uid: string): ManagedFieldsEntry[] {
  const key = keyKey([["uid", uid]]);
  return (obj.metadata.managedFields ?? []).filter((e) => {
    const meta = (e.fieldsV1 as Record<string, unknown> | undefined)?.[fieldKey("metadata")];
    const refs = (meta as Record<string, unknown> | undefined)?.[fieldKey("ownerReferences")];
    return (refs as Record<string, unknown> | undefined)?.[key] !== undefined;
  });
}

/**
 * The union of the fields the entries of `managers` own, for the main resource
 * (`subresource` undefined) or one subresource. Entries that do not decode own nothing.
 */
export function fieldsOwnedBy(
  obj: KubeObject,
  managers: ReadonlySet<string>,
  subresource?: string,
): FieldSet {
  let set = new FieldSet();
  for (const e of obj.metadata.managedFields ?? []) {
    if (!managers.has(e.manager ?? "")) continue;
    if ((e.subresource || undefined) !== subresource) continue;
    try {
      set = set.union(FieldSet.fromFieldsV1(e.fieldsV1 ?? {}));
    } catch {
      // An entry that does not decode owns nothing that can be named.
    }
  }
  return set;
}

/** The deepest of `paths`: a path that another one extends is left out. */
export function deepestPaths(paths: PathKey[][]): PathKey[][] {
  return paths.filter(
    (p) => !paths.some((q) => q.length > p.length && p.every((k, i) => q[i] === k)),
  );
}

/** An object's controller and what it manages. */
export interface ControllerManagement {
  reference: OwnerReference;
  /** The controller's field managers (sorted), and their entries. */
  managers: string[];
  entries: ManagedFieldsEntry[];
  /** Whether it writes with server-side apply (then it re-applies its fields on every pass). */
  applies: boolean;
  /** The fields it owns on the main resource (its intent; status is its report). */
  fields: FieldSet;
}

/** The controller of `obj` and what it manages; undefined when it has no controller reference. */
export function controllerManagement(obj: KubeObject): ControllerManagement | undefined {
  const reference = controllingReference(obj);
  if (!reference?.uid) return undefined;
  const entries = entriesOwningReference(obj, reference.uid);
  const managers = [...new Set(entries.map((e) => e.manager ?? ""))].sort();
  return {
    reference,
    managers,
    entries,
    applies: entries.some((e) => e.operation === "Apply"),
    fields: fieldsOwnedBy(obj, new Set(managers)),
  };
}
