/**
 * Owner references name an object's owners by UID, so the garbage collector
 * deletes dependents when their owner goes, and `owns()` watches map a dependent
 * back to the object that controls it. At most one owner may be the controller.
 */
import type { KubeObject, OwnerReference } from "@setpoint/api";

/** The object already has a different controlling owner. */
export class AlreadyOwnedError extends Error {
  override name = "AlreadyOwnedError";
  constructor(
    readonly object: string,
    readonly owner: OwnerReference,
  ) {
    super(
      `object ${object} is already controlled by ${owner.kind} ${owner.name} (uid ${owner.uid}); an object has at most one controller`,
    );
  }
}

function describe(obj: KubeObject): string {
  const ns = obj.metadata.namespace ? `${obj.metadata.namespace}/` : "";
  return `${obj.kind ?? "object"} ${ns}${obj.metadata.name ?? ""}`;
}

/** The reference to `owner`, checked for what a reference needs (apiVersion, kind, name, uid). */
export function ownerReferenceTo(owner: KubeObject, controller = false): OwnerReference {
  const { apiVersion, kind } = owner;
  const { name, uid } = owner.metadata;
  if (!apiVersion || !kind || !name || !uid) {
    throw new Error(
      `cannot reference ${describe(owner)} as an owner: it needs apiVersion, kind, metadata.name and metadata.uid (read it from the server first)`,
    );
  }
  const ref: OwnerReference = { apiVersion, kind, name, uid };
  if (controller) {
    ref.controller = true;
    ref.blockOwnerDeletion = true;
  }
  return ref;
}

function checkScope(owner: KubeObject, obj: KubeObject): void {
  const ons = owner.metadata.namespace;
  if (ons && ons !== obj.metadata.namespace) {
    throw new Error(
      `${describe(owner)} cannot own ${describe(obj)}: a namespaced owner must be in the same namespace as its dependent`,
    );
  }
}

/** The controlling owner reference of `obj`, if any. */
export function getControllerOf(obj: KubeObject): OwnerReference | undefined {
  return obj.metadata.ownerReferences?.find((r) => r.controller === true);
}

/** Whether `owner` (by UID) is the controller of `obj`. */
export function isControlledBy(obj: KubeObject, owner: KubeObject): boolean {
  return getControllerOf(obj)?.uid === owner.metadata.uid && owner.metadata.uid !== undefined;
}

/**
 * Makes `owner` the controller of `obj` (in place): an owner reference by UID
 * with `controller` and `blockOwnerDeletion` set. An existing reference to the
 * same UID is replaced; a different controlling owner is refused with
 * AlreadyOwnedError. Returns whether `obj` changed.
 */
export function setControllerReference(owner: KubeObject, obj: KubeObject): boolean {
  const ref = ownerReferenceTo(owner, true);
  checkScope(owner, obj);
  const current = getControllerOf(obj);
  if (current && current.uid !== ref.uid) throw new AlreadyOwnedError(describe(obj), current);
  return upsert(obj, ref);
}

/**
 * Adds `owner` as a (non-controlling) owner of `obj` (in place), or refreshes an
 * existing reference to the same UID, keeping its controller flag. Returns whether
 * `obj` changed.
 */
export function setOwnerReference(owner: KubeObject, obj: KubeObject): boolean {
  const ref = ownerReferenceTo(owner, false);
  checkScope(owner, obj);
  const existing = obj.metadata.ownerReferences?.find((r) => r.uid === ref.uid);
  if (existing?.controller) {
    ref.controller = existing.controller;
    if (existing.blockOwnerDeletion !== undefined)
      ref.blockOwnerDeletion = existing.blockOwnerDeletion;
  }
  return upsert(obj, ref);
}

/** Removes every reference to `owner`'s UID; returns whether `obj` changed. */
export function removeOwnerReference(owner: KubeObject, obj: KubeObject): boolean {
  const refs = obj.metadata.ownerReferences;
  const uid = owner.metadata.uid;
  if (!refs || !uid || !refs.some((r) => r.uid === uid)) return false;
  obj.metadata.ownerReferences = refs.filter((r) => r.uid !== uid);
  return true;
}

function same(a: OwnerReference, b: OwnerReference): boolean {
  return (
    a.apiVersion === b.apiVersion &&
    a.kind === b.kind &&
    a.name === b.name &&
    a.uid === b.uid &&
    (a.controller ?? false) === (b.controller ?? false) &&
    (a.blockOwnerDeletion ?? false) === (b.blockOwnerDeletion ?? false)
  );
}

function upsert(obj: KubeObject, ref: OwnerReference): boolean {
  const refs = obj.metadata.ownerReferences ?? [];
  const i = refs.findIndex((r) => r.uid === ref.uid);
  if (i >= 0) {
    if (same(refs[i], ref)) return false;
    obj.metadata.ownerReferences = refs.map((r, j) => (j === i ? ref : r));
    return true;
  }
  obj.metadata.ownerReferences = [...refs, ref];
  return true;
}
