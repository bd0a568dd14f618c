/** POST to a collection: create an object (201), with generateName and dryRun. */

import type { KubeObject } from "@setpoint/api";
import { deepClone, errors } from "@setpoint/api";
import { recordUpdate } from "../store/field-manager.ts";
import { objectKey } from "../store/keys.ts";
import { applyDefaults, checkLimits, prepareCreate, validateCreate } from "../store/lifecycle.ts";
import { storeCreate } from "../store/writes.ts";
import { fieldManager, parseDryRun, parseFieldValidation, readObject } from "../wire/body.ts";
import { convertToStorage } from "../wire/codec.ts";
import type { RequestScope } from "./context.ts";
import { respondObject } from "./respond.ts";

/** Times a create with generateName picks a new name after a collision. */
export const GENERATE_NAME_ATTEMPTS = 3;

/**
 * Puts the object in the request's namespace: a namespaced object's namespace must
 * be empty or the URL's (400 otherwise); a cluster-scoped object has none.
 */
export function bindNamespace(scope: RequestScope, obj: KubeObject): void {
  if (scope.def.namespaced) {
    const ns = obj.metadata.namespace;
    if (ns === undefined || ns === "") obj.metadata.namespace = scope.namespace;
    else if (ns !== scope.namespace) {
      throw errors.badRequest(
        "the namespace of the provided object does not match the namespace sent on the request",
      );
    }
  } else {
    delete obj.metadata.namespace;
  }
}

/**
 * Readies a new object (already in the storage version, namespace bound) for
 * storage: namespace admission, server-set metadata, field ownership, defaults and
 * validation. Throws the error a client should get.
 */
export async function prepareNewObject(
  scope: RequestScope,
  obj: KubeObject,
  manager: string,
  now: Date,
  trackFields = true,
): Promise<KubeObject> {
  const { def, version, ctx } = scope;
  if (def.namespaced && scope.namespace) {
    await ctx.namespaces.admit(scope.namespace, "create", {
      ...scope.subject,
      name: obj.metadata.name ?? "",
    });
  }
  // The limits' own check (which builds the cause) only for an object past them.
  checkLimits(obj, def);
  prepareCreate(obj, def, version, now);
  if (trackFields) {
    recordUpdate(null, obj, version.schema, {
      manager,
      apiVersion: scope.apiVersion,
      now,
      ...(scope.subresource ? { subresource: scope.subresource } : {}),
    });
  }
  applyDefaults(obj, def, version);
  validateCreate(obj, def);
  return obj;
}

/** Handles POST on a collection. */
export async function createResource(scope: RequestScope): Promise<void> {
  const mode = parseFieldValidation(scope, "CreateOptions");
  const dryRun = parseDryRun(scope, "CreateOptions");
  const manager = fieldManager(scope, "CreateOptions");
  const body = await readObject(scope, mode);
  bindNamespace(scope, body);
  const generated = !body.metadata.name && Boolean(body.metadata.generateName);
  for (let attempt = 1; ; attempt++) {
    // A generated name may collide: keep the body to try again with another.
    const obj = convertToStorage(generated ? deepClone(body) : body, scope.def);
    await prepareNewObject(scope, obj, manager, new Date());
    const key = objectKey(scope.def, scope.namespace, obj.metadata.name!);
    try {
      const stored = await storeCreate(scope, key, obj, dryRun);
      respondObject(scope, 201, stored);
      return;
    } catch (err) {
      const exists =
        err instanceof Error && (err as { reason?: string }).reason === "AlreadyExists";
      if (!generated || !exists || attempt >= GENERATE_NAME_ATTEMPTS) throw err;
    }
  }
}
