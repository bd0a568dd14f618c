/**
 * Field ownership (metadata.managedFields) on the write paths: `recordUpdate` on
 * every write that is not an apply, `applyObject` for PATCH with
 * application/apply-patch+yaml. The logic lives in src/api/managedfields.
 */

import type { Schema } from "@setpoint/api";
import { type KubeObject, nowTimestamp } from "@setpoint/api";
import { applyServerSide, updateManagedFields } from "@setpoint/api/managedfields";

export interface ManagerInfo {
  manager: string;
  /** The apiVersion the manager wrote in. */
  apiVersion: string;
  subresource?: string;
  now: Date;
}

/**
 * Records that `info.manager` wrote `next` over `live` (null on create), updating
 * next.metadata.managedFields in place.
 */
export function recordUpdate(
  live: KubeObject | null,
  next: KubeObject,
  schema: Schema,
  info: ManagerInfo,
): void {
  const entries = updateManagedFields(live ?? undefined, next, schema, {
    manager: info.manager,
    apiVersion: info.apiVersion,
    time: nowTimestamp(info.now),
    ...(info.subresource ? { subresource: info.subresource } : {}),
  });
  if (entries.length > 0) next.metadata.managedFields = entries;
  else delete next.metadata.managedFields;
}

/**
 * The object after `info.manager` applies `applied` to `live` (null: the object is
 * created), managedFields included. 409 on conflicts with other managers unless
 * `force`.
 */
export function applyObject(
  live: KubeObject | null,
  applied: KubeObject,
  schema: Schema,
  info: ManagerInfo & { force: boolean },
): KubeObject {
  return applyServerSide(live ?? undefined, applied, schema, {
    manager: info.manager,
    apiVersion: info.apiVersion,
    time: nowTimestamp(info.now),
    force: info.force,
    ...(info.subresource ? { subresource: info.subresource } : {}),
  });
}
