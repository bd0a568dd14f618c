/** POST to a collection: create an object (201), with generateName and dryRun. */

import type { KubeObject } from "@setpoint/api";
import { errors, failure } from "@setpoint/api";
import { convertToStorage } from "../wire/codec.ts";
import type { RequestScope } from "./context.ts";
import { fieldManager, parseDryRun, parseFieldValidation, readObject } from "./request-body.ts";
import { respondObject } from "./respond.ts";

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
 * A create naming a resourceVersion was probably sourced from a stored object by
 * mistake: refused as kube-apiserver's storage refuses it (500, no reason). A value
 * that is not a revision number (e.g. "-1") is ignored there, and here.
 */
function refuseResourceVersion(obj: KubeObject): void {
  const rv = obj.metadata.resourceVersion;
  if (typeof rv === "string" && /^\d+$/.test(rv) && !/^0+$/.test(rv)) {
    throw failure(500, "", "resourceVersion should not be set on objects to be created");
  }
}

/** Handles POST on a collection. */
export async function createResource(scope: RequestScope): Promise<void> {
  const mode = parseFieldValidation(scope, "CreateOptions");
  const dryRun = parseDryRun(scope, "CreateOptions");
  const manager = fieldManager(scope, "CreateOptions");
  const body = await readObject(scope, mode);
  bindNamespace(scope, body);
  refuseResourceVersion(body);
  const stored = await scope.store.create(convertToStorage(body, scope.def), { dryRun, manager });
  respondObject(scope, 201, stored);
}
