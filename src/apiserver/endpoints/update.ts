/**
 * PUT on an object, its status, or another subresource. What an update stores is
 * decided by the resource store (src/apiserver/store/update-decision.ts).
 */

import type { KubeObject } from "@setpoint/api";
import { errors } from "@setpoint/api";
import { convertToStorage } from "../wire/codec.ts";
import type { RequestScope } from "./context.ts";
import { bindNamespace } from "./create.ts";
import { fieldManager, parseDryRun, parseFieldValidation, readObject } from "./request-body.ts";
import { respondObject } from "./respond.ts";

/** 400 unless the body names the object the URL names. */
export function checkName(scope: RequestScope, obj: KubeObject): void {
  const name = obj.metadata.name ?? "";
  if (name !== scope.name) {
    throw errors.badRequest(
      `the name of the object (${name}) does not match the name on the URL (${scope.name ?? ""})`,
    );
  }
}

/** Whether a PUT to a missing object of this type creates it. */
export function allowsCreateOnUpdate(scope: RequestScope): boolean {
  return scope.def.strategy.allowCreateOnUpdate === true;
}

/** Handles PUT on an object or one of its subresources. */
export async function updateResource(scope: RequestScope): Promise<void> {
  const mode = parseFieldValidation(scope, "UpdateOptions");
  const dryRun = parseDryRun(scope, "UpdateOptions");
  const manager = fieldManager(scope, "UpdateOptions");
  const body = await readObject(scope, mode);
  checkName(scope, body);
  bindNamespace(scope, body);
  const candidate = convertToStorage(body, scope.def);
  const opts = {
    dryRun,
    manager,
    allowCreate: allowsCreateOnUpdate(scope),
    warnings: scope.warnings,
  };
  const warningsBefore = scope.warnings.length;
  const outcome = await scope.store.update(opts, () => {
    // Warnings are recomputed on each attempt.
    scope.warnings.length = warningsBefore;
    return candidate;
  });
  respondObject(scope, outcome.action === "create" ? 201 : 200, outcome.obj);
}
