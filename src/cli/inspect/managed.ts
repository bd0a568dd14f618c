/**
 * Who manages an object, for `setpoint doctor KIND/NAME`: its controller (the
 * controlling ownerReference), the controller's field managers and the fields
 * they own (changes to them by anyone else are set back when the controller next
 * reconciles, and the apiserver warns the writer), and the other field managers
 * with theirs. The boundary between what a controller generates and what a
 * person owns, shown rather than found by experiment.
 */
import type { KubeObject } from "@setpoint/api";
import {
  controllerManagement,
  deepestPaths,
  type FieldSet,
  fieldsOwnedBy,
  pathString,
} from "@setpoint/api/managedfields";
import { kindLabel, type ObjectRef, objectLabel } from "./resources.ts";

export interface FieldOwner {
  manager: string;
  operation: string;
  subresource?: string;
  fields: string[];
}

export interface ManagedReport {
  object: ObjectRef;
  /** Absent when the object has no controller reference. */
  controller?: {
    apiVersion: string;
    kind: string;
    name: string;
    uid: string;
    /** Its field managers (empty when no managedFields entry owns the reference). */
    managers: string[];
    /** Whether it writes with server-side apply (its fields are re-applied on every pass). */
    applies: boolean;
    /** The fields it manages on the main resource. */
    fields: string[];
  };
  /** Every other field manager, with the fields it owns. */
  others: FieldOwner[];
}

function fieldList(set: FieldSet): string[] {
  return deepestPaths(set.paths()).map((p) => pathString(p));
}

/** What `obj` (read as `ref`) is managed by. */
export function managedReport(obj: KubeObject, ref: ObjectRef): ManagedReport {
  const mgmt = controllerManagement(obj);
  const mine = new Set(mgmt?.managers ?? []);
  const report: ManagedReport = { object: ref, others: [] };
  if (mgmt) {
    report.controller = {
      apiVersion: mgmt.reference.apiVersion,
      kind: mgmt.reference.kind,
      name: mgmt.reference.name,
      uid: mgmt.reference.uid,
      managers: mgmt.managers,
      applies: mgmt.applies,
      fields: fieldList(mgmt.fields),
    };
  }
  for (const e of obj.metadata.managedFields ?? []) {
    const manager = e.manager ?? "";
    if (mine.has(manager) && !e.subresource) continue;
    const sub = e.subresource || undefined;
    const fields = fieldList(
      fieldsOwnedBy({ metadata: { managedFields: [e] } }, new Set([manager]), sub),
    );
    report.others.push({
      manager,
      operation: e.operation ?? "",
      ...(sub ? { subresource: sub } : {}),
      fields,
    });
  }
  return report;
}

const INDENT = "    ";

/** The report as people read it. */
export function renderManaged(r: ManagedReport): string {
  const lines = [objectLabel(r.object)];
  const c = r.controller;
  if (!c) {
    lines.push(
      "  Controlled by: nothing (no controller ownerReference): no controller sets its fields back; every field is its writers' own",
    );
  } else {
    const owner = `${c.kind}/${c.name}`;
    lines.push(`  Controlled by: ${owner} (${kindLabel(c)}, uid ${c.uid})`);
    if (c.managers.length === 0) {
      lines.push(
        "  Managed fields: unknown (no field manager owns the controller reference in managedFields)",
      );
    } else {
      const names = c.managers.map((m) => JSON.stringify(m)).join(", ");
      const how = c.applies
        ? "server-side apply: set back on every pass"
        : "updates: may be set back";
      lines.push(
        `  Managed by field manager ${names} (${how}); change these fields in ${owner}, not here:`,
      );
      for (const f of c.fields) lines.push(`${INDENT}${f}`);
    }
  }
  if (r.others.length > 0) {
    lines.push(
      c ? "  Other field managers (their fields are theirs to change):" : "  Field managers:",
    );
    for (const o of r.others) {
      const sub = o.subresource ? `, ${o.subresource}` : "";
      lines.push(
        `${INDENT}${o.manager} (${o.operation}${sub}): ${o.fields.join(", ") || "no fields"}`,
      );
    }
  }
  return `${lines.join("\n")}\n`;
}
