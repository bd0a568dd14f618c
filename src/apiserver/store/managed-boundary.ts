/**
 * The managed boundary, made explicit on the wire: when a write changes fields of
 * an object that its controller (the owner its controlling ownerReference names)
 * manages, the writer gets a warning (kubectl prints it as `Warning: ...`) that
 * names the controller, the fields, that the change will be reverted, and where
 * to make it instead. The write itself goes through: a warning, not a refusal.
 *
 * The controller's field managers are those that own its controlling
 * ownerReference (@setpoint/api/managedfields' controller.ts). A field they
 * owned before the write and no longer own after it was changed or removed by
 * this writer (an update takes ownership of what it changes; a forced apply of
 * what it conflicted on).
 */

import type { KubeObject } from "@setpoint/api";
import {
  controllingReference,
  deepestPaths,
  entriesOwningReference,
  fieldsOwnedBy,
  pathString,
} from "@setpoint/api/managedfields";

/** Fields named in a warning; more are counted. */
export const MANAGED_BOUNDARY_FIELDS_SHOWN = 3;

/**
 * The warning for `writer`'s write of `current` as `next`, or undefined when it
 * changed nothing the object's controller manages (or the writer is the
 * controller, or the write lets go of the object or deletes it).
 */
export function managedBoundaryWarning(
  current: KubeObject,
  next: KubeObject,
  writer: string,
  subresource: string | undefined,
): string | undefined {
  const ref = controllingReference(current);
  if (!ref?.uid) return undefined;
  // The write lets go of the object (orphaning, adoption by another) or it is going away.
  if (controllingReference(next)?.uid !== ref.uid || next.metadata.deletionTimestamp) {
    return undefined;
  }
  const entries = entriesOwningReference(current, ref.uid);
  const managers = new Set(entries.map((e) => e.manager ?? ""));
  if (managers.size === 0 || managers.has(writer)) return undefined;
  // Status is the controller's report, not its intent: a status write is compared
  // with the controller's status entries, any other with its main-resource entries.
  const sub = subresource === "status" ? "status" : undefined;
  const before = fieldsOwnedBy(current, managers, sub);
  if (before.empty) return undefined;
  const after = fieldsOwnedBy(next, managers, sub);
  const lost = deepestPaths(before.paths().filter((p) => !after.has(p)));
  if (lost.length === 0) return undefined;
  const shown = lost.slice(0, MANAGED_BOUNDARY_FIELDS_SHOWN).map((p) => pathString(p));
  const more = lost.length - shown.length;
  const fields = more > 0 ? `${shown.join(", ")} and ${more} more` : shown.join(", ");
  const names = [...managers]
    .sort()
    .map((m) => JSON.stringify(m))
    .join(", ");
  const applies = entries.some((e) => e.operation === "Apply");
  // Kind/name, as kubectl describe's "Controlled By" names an owner.
  const ns = current.metadata.namespace;
  const self = `${current.kind ?? "object"} ${ns ? `${ns}/` : ""}${current.metadata.name ?? ""}`;
  const owner = `${ref.kind}/${ref.name}`;
  const one = lost.length === 1;
  return (
    `${self} is managed by its controller ${owner} (field manager ${names}); this write changed ` +
    `${one ? "a field" : "fields"} it manages (${fields}), which ${applies ? "will" : "may"} ` +
    `be reverted when the controller next reconciles; to change ${one ? "it" : "them"} for good, change ${owner} instead`
  );
}
