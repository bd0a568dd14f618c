/**
 * Status writes that happen only when the status changed. Writing status
 * unconditionally makes a new resourceVersion, which wakes the controller's own
 * watch, which reconciles and writes again: a hot loop. Comparing first breaks it.
 */

import type { KubeObject } from "@setpoint/api";
import { deepEqual } from "@setpoint/api";
import type { Client } from "../client/client.ts";

/** An object with a status of type S. */
export type WithStatus<S> = KubeObject & { status?: S | undefined };

/**
 * Writes `status` to `current` through the status subresource unless it equals
 * the status `current` already has (JSON equality: key order and undefined
 * members do not count). Returns the written object, or undefined when nothing
 * was written. `current` is the object as read (its resourceVersion guards the
 * write against concurrent changes).
 */
export async function updateStatusIfChanged<T extends WithStatus<unknown>>(
  client: Pick<Client, "updateStatus">,
  current: T,
  status: NonNullable<T["status"]>,
): Promise<T | undefined> {
  if (deepEqual(current.status, status)) return undefined;
  return client.updateStatus<T>({ ...current, status });
}
