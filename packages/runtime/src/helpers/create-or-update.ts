/**
 * createOrUpdate: make an object look the way a controller wants, touching only
 * the fields it owns. `mutate` receives the live object (or, if absent, the
 * given skeleton) and sets the controller's fields on it; everything else (other
 * writers' fields, server defaults, status) is kept. The object is created when
 * absent, updated (with optimistic concurrency on its resourceVersion) when
 * `mutate` changed something, and not written at all when nothing changed, so
 * repeated reconciles are idempotent and quiet.
 */

import type { KubeObject } from "@setpoint/api";
import { deepClone, deepEqual } from "@setpoint/api";
import { type Client, type Reader, typeOf } from "../client/client.ts";
import { isNotFound } from "../client/errors.ts";

/** What createOrUpdate did. */
export type OperationResult = "created" | "updated" | "unchanged";

/** Sets the controller's fields on `obj` (in place). */
export type MutateFn<T extends KubeObject> = (obj: T) => void | Promise<void>;

export interface CreateOrUpdateOptions {
  /**
   * Where to read the current object: the client (default) or a cache reader.
   * Reading the cache saves a GET per object; a stale read is caught by the
   * update's resourceVersion check (409 Conflict, retried by the controller).
   */
  reader?: Pick<Reader, "get"> | undefined;
}

function identity(obj: KubeObject): string {
  return `${obj.metadata.namespace ?? ""}/${obj.metadata.name ?? ""}`;
}

/**
 * Creates or updates `obj` (identified by its apiVersion, kind, namespace and
 * name) after applying `mutate`; returns what happened and the object as written
 * (or as read, when unchanged).
 */
export async function createOrUpdate<T extends KubeObject>(
  client: Pick<Client, "get" | "create" | "update">,
  obj: T,
  mutate: MutateFn<T>,
  opts: CreateOrUpdateOptions = {},
): Promise<{ result: OperationResult; object: T }> {
  const type = typeOf(obj);
  const name = obj.metadata.name;
  if (!name) throw new Error("createOrUpdate needs metadata.name");
  const reader = opts.reader ?? client;
  let current: T | undefined;
  try {
    current = await reader.get<T>(type, name, obj.metadata.namespace);
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
  const want = identity(obj);
  if (!current) {
    const draft = deepClone(obj);
    await mutate(draft);
    if (identity(draft) !== want)
      throw new Error("mutate must not change the object's name or namespace");
    return { result: "created", object: await client.create(draft) };
  }
  const draft = deepClone(current);
  await mutate(draft);
  if (identity(draft) !== want)
    throw new Error("mutate must not change the object's name or namespace");
  if (deepEqual(current, draft)) return { result: "unchanged", object: current };
  return { result: "updated", object: await client.update(draft) };
}
