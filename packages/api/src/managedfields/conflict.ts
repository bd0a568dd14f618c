/**
 * Apply conflicts: fields an applier sets to a new value while another manager
 * owns them. They reach the client as a 409 Conflict whose causes each name a field
 * and its manager (reason FieldManagerConflict), which kubectl turns into its
 * "--force-conflicts" advice.
 */
import { CauseType, errors, type StatusCause, type StatusError } from "../status.ts";
import { type Path, pathString } from "./field-path.ts";
import type { FieldSet } from "./field-set.ts";
import { type ManagerEntry, printManager } from "./managers.ts";
import { compareStrings } from "./value.ts";

/** One conflicting field and the manager that owns it. */
export interface Conflict {
  managerId: string;
  manager: ManagerEntry;
  path: Path;
}

/** Thrown inside the apply machinery; converted to a StatusError at the entry point. */
export class ApplyConflicts extends Error {
  override name = "ApplyConflicts";
  constructor(readonly conflicts: Conflict[]) {
    super(`${conflicts.length} apply conflicts`);
  }
}

/** The conflicts of `sets` (conflicting fields by manager id), ordered by manager then path. */
export function conflictsOf(
  sets: Map<string, { manager: ManagerEntry; fields: FieldSet }>,
): Conflict[] {
  const ids = [...sets.keys()].sort(compareStrings);
  const out: Conflict[] = [];
  for (const id of ids) {
    const { manager, fields } = sets.get(id)!;
    for (const path of fields.paths()) out.push({ managerId: id, manager, path });
  }
  return out;
}

/** The 409 Conflict Kubernetes returns for these conflicts. */
export function conflictError(conflicts: Conflict[]): StatusError {
  const causes: StatusCause[] = conflicts.map((c) => ({
    reason: CauseType.FieldManagerConflict,
    message: `conflict with ${printManager(c.manager)}`,
    field: pathString(c.path),
  }));
  return errors.applyConflict(causes);
}
