/**
 * Readying a new object for storage (create, and an update or apply that
 * creates): namespace admission, server-set metadata, field ownership, defaults,
 * mutating admission, validation and validating admission.
 */

import type { KubeObject } from "@setpoint/api";
import { canonicalizeObject } from "../wire/canonical.ts";
import { recordUpdate } from "./field-manager.ts";
import {
  applyDefaults,
  authorizeWrite,
  checkLimits,
  prepareCreate,
  validateCreate,
} from "./lifecycle.ts";
import type { StoreContext } from "./scope.ts";

/**
 * Readies `obj` (in the storage version, namespace bound) in place, as written by
 * `manager` at `now`; with `trackFields` false its field ownership is left as it
 * is (an apply recorded it). Throws the error a client should get.
 */
export async function prepareNewObject(
  ctx: StoreContext,
  obj: KubeObject,
  manager: string,
  now: Date,
  trackFields = true,
  dryRun = false,
): Promise<KubeObject> {
  const { def, version, scope } = ctx;
  if (def.namespaced && scope.namespace) {
    await ctx.services.namespaces.admit(scope.namespace, "create", {
      ...ctx.subject,
      name: obj.metadata.name ?? "",
    });
  }
  // The limits' own check (which builds the cause) only for an object past them.
  checkLimits(obj, def);
  prepareCreate(obj, def, version, now);
  if (trackFields) {
    recordUpdate(null, obj, version.schema, {
      manager,
      apiVersion: ctx.apiVersion,
      now,
      ...(scope.subresource ? { subresource: scope.subresource } : {}),
    });
  }
  applyDefaults(obj, def, version);
  canonicalizeObject(obj, def, version);
  const admission = ctx.services.admission;
  const mutated = await admission?.mutate(ctx, { operation: "CREATE", object: obj, dryRun });
  if (mutated) {
    replaceContents(obj, mutated);
    applyDefaults(obj, def, version);
    canonicalizeObject(obj, def, version);
  }
  validateCreate(obj, def);
  authorizeWrite(ctx, obj, undefined);
  await admission?.validate(ctx, { operation: "CREATE", object: obj, dryRun });
  return obj;
}

/** Makes `target` hold what `source` holds (a webhook's changes, in place). */
export function replaceContents(target: KubeObject, source: KubeObject): void {
  const t = target as unknown as Record<string, unknown>;
  for (const k of Object.keys(t)) delete t[k];
  Object.assign(t, source);
}
