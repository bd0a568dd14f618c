/**
 * PATCH on an object or its status: JSON patch (RFC 6902), JSON merge patch,
 * strategic merge patch (for definitions that accept it, the built-in types: 415
 * for custom resources, as Kubernetes answers), and server-side apply (which may create the object). The
 * patch is applied to the current object in the request's version, the result
 * goes through the same rules as a PUT, and the patch is re-applied to the newer
 * object when a concurrent write wins the race.
 */

import type { KubeObject } from "@setpoint/api";
import {
  applyJsonPatch,
  applyMergePatch,
  applyStrategicMergePatch,
  deepClone,
  errors,
  failure,
  fieldErrors,
  StatusError,
} from "@setpoint/api";
import { applyObject } from "../store/field-manager.ts";
import { checkLimits } from "../store/lifecycle.ts";
import { NoopApplies } from "../store/noop-applies.ts";
import { convertToStorage, convertToVersion } from "../wire/codec.ts";
import {
  type Decoded,
  decodeJsonAsync,
  decodeYamlAsync,
  unsupportedBodyType,
} from "../wire/decode.ts";
import { parseMediaType } from "../wire/media-type.ts";
import { renderOne } from "../wire/render.ts";
import { writeRaw } from "../wire/response.ts";
import type { RequestScope } from "./context.ts";
import { bindNamespace } from "./create.ts";
import { readBody } from "./request.ts";
import {
  checkTypeMeta,
  type FieldValidation,
  fieldManager,
  parseDryRun,
  parseFieldValidation,
  validateFields,
} from "./request-body.ts";
import { respondObject } from "./respond.ts";
import { checkName } from "./update.ts";

export type PatchType = "json" | "merge" | "strategic" | "apply";

/** Patch media types, in the order Kubernetes lists them in a 415. */
export const PATCH_MEDIA_TYPES: Record<string, PatchType> = {
  "application/json-patch+json": "json",
  "application/merge-patch+json": "merge",
  "application/apply-patch+yaml": "apply",
  "application/strategic-merge-patch+json": "strategic",
};

/**
 * The patch type of a Content-Type, or 415 naming the accepted ones (strategic
 * merge patch only where the definition accepts it).
 */
export function patchTypeOf(contentType: string | undefined, strategic: boolean): PatchType {
  const media = parseMediaType(contentType);
  const type = PATCH_MEDIA_TYPES[media.type];
  const accepted = Object.keys(PATCH_MEDIA_TYPES).filter(
    (t) => strategic || PATCH_MEDIA_TYPES[t] !== "strategic",
  );
  if (!type || (!strategic && type === "strategic")) throw unsupportedBodyType(accepted);
  return type;
}

async function decodePatch(type: PatchType, body: Buffer): Promise<Decoded> {
  // A large JSON patch is parsed off the event loop, as a large body is.
  const decoded =
    type === "apply" ? await decodeYamlAsync(body.toString("utf8")) : await decodeJsonAsync(body);
  const v = decoded.value;
  if (type === "json") {
    if (!Array.isArray(v)) {
      throw errors.badRequest(
        "json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp",
      );
    }
  } else if (typeof v !== "object" || v === null || Array.isArray(v)) {
    throw errors.badRequest(
      `json: cannot unmarshal ${Array.isArray(v) ? "array" : v === null ? "null" : typeof v} into Go value of type map[string]interface {}`,
    );
  }
  return decoded;
}

function applyPatch(
  type: Exclude<PatchType, "apply">,
  current: KubeObject,
  patch: unknown,
  scope: RequestScope,
): unknown {
  try {
    switch (type) {
      case "json":
        return applyJsonPatch(current, patch);
      case "merge":
        return applyMergePatch(current, patch);
      case "strategic":
        return applyStrategicMergePatch(current, patch, scope.version.schema);
    }
  } catch (err) {
    if (err instanceof StatusError) throw err;
    throw failure(422, "Invalid", err instanceof Error ? err.message : String(err));
  }
}

/**
 * The configuration of an apply without what the addressed (sub)resource resets
 * (Kubernetes' reset fields): `.status` on the main resource of a version with a
 * status subresource, everything but `.status` on `/status`. The applier neither
 * sets nor owns those fields.
 */
function withoutResetFields(scope: RequestScope, applied: KubeObject): KubeObject {
  if (scope.subresource === "status") {
    const { name, namespace, resourceVersion } = applied.metadata;
    const out: KubeObject = {
      apiVersion: applied.apiVersion,
      kind: applied.kind,
      metadata: {
        ...(name !== undefined ? { name } : {}),
        ...(namespace !== undefined ? { namespace } : {}),
        ...(resourceVersion !== undefined ? { resourceVersion } : {}),
      },
    };
    if (applied.status !== undefined) out.status = applied.status;
    return out;
  }
  if (scope.subresource === undefined && scope.version.statusSubresource) delete applied.status;
  return applied;
}

/** Handles PATCH on an object or one of its subresources. */
export async function patchResource(scope: RequestScope): Promise<void> {
  const { def } = scope;
  const type = patchTypeOf(scope.req.headers["content-type"], def.strategicMergePatch === true);
  const mode: FieldValidation = parseFieldValidation(scope, "PatchOptions");
  const dryRun = parseDryRun(scope, "PatchOptions");
  const force = scope.query.bool("force");
  if (type === "apply") {
    if (!scope.query.string("fieldManager")) {
      throw errors.invalid(
        "PatchOptions",
        "",
        [fieldErrors.required("fieldManager", "is required for apply patch")],
        "meta.k8s.io",
      );
    }
  } else if (force !== undefined) {
    throw errors.invalid(
      "PatchOptions",
      "",
      [fieldErrors.forbidden("force", "may not be specified for non-apply patch")],
      "meta.k8s.io",
    );
  }
  const manager = fieldManager(scope, "PatchOptions");
  const raw = await readBody(scope.req, scope.ctx.limits.maxBodyBytes);
  const key = scope.store.key();
  const r = scope.renderer;
  const noopKey =
    type === "apply" &&
    r.output.kind === "object" &&
    r.output.mediaType === "application/json" &&
    NoopApplies.fits(raw)
      ? NoopApplies.key(key, scope.subresource ?? "", scope.req.url ?? "", raw.toString("utf8"))
      : undefined;
  if (noopKey !== undefined && (await answerRepeatedNoop(scope, noopKey))) return;
  const patch = await decodePatch(type, raw);
  // The walks of an apply (field sets, merge, comparison) only ever see a configuration within the limits.
  if (type === "apply") checkLimits(patch.value, def);
  const opts = {
    dryRun,
    manager,
    allowCreate: type === "apply",
    apply: type === "apply",
    warnings: scope.warnings,
  };
  const warningsBefore = scope.warnings.length;

  const outcome = await scope.store.update(opts, (current) => {
    // Warnings are recomputed on each attempt.
    scope.warnings.length = warningsBefore;
    let patched: unknown;
    if (type === "apply") {
      const applied = withoutResetFields(scope, checkTypeMeta(scope, deepClone(patch.value)));
      validateFields(scope, applied, patch.duplicates, mode);
      checkName(scope, applied);
      bindNamespace(scope, applied);
      const live = current ? convertToVersion(current, def, scope.version.name) : null;
      patched = applyObject(live ? deepClone(live) : null, applied, scope.version.schema, {
        manager,
        apiVersion: scope.apiVersion,
        now: new Date(),
        force: force === true,
        ...(scope.subresource ? { subresource: scope.subresource } : {}),
      });
    } else {
      if (!current) throw errors.notFound(scope.subject);
      const live = deepClone(convertToVersion(current, def, scope.version.name));
      patched = applyPatch(type, live, patch.value, scope);
      // What a patch made is measured before the walks that follow (a JSON patch's
      // copies may have grown it up to their own bound).
      checkLimits(patched, def);
    }
    const obj = checkTypeMeta(scope, patched);
    validateFields(scope, obj, type === "apply" ? [] : patch.duplicates, mode);
    checkName(scope, obj);
    bindNamespace(scope, obj);
    if (current && type === "apply") {
      obj.metadata.resourceVersion ??= current.metadata.resourceVersion;
    }
    return convertToStorage(obj, def);
  });
  if (noopKey !== undefined && outcome.action === "noop") {
    // Answered as respondObject would, and remembered for the next identical apply.
    const json = JSON.stringify(renderOne(r, outcome.obj));
    writeRaw(scope.res, 200, r.output.contentType, json, scope.warnings);
    scope.ctx.noopApplies.set(noopKey, {
      version: scope.version,
      revision: Number(outcome.obj.metadata.resourceVersion),
      json,
      warnings: scope.warnings.slice(warningsBefore),
    });
    return;
  }
  respondObject(scope, outcome.action === "create" ? 201 : 200, outcome.obj);
}

/**
 * Answers an apply that is the repeat of one that changed nothing, when the object
 * is still at the revision it changed nothing at; false otherwise.
 */
async function answerRepeatedNoop(scope: RequestScope, noopKey: string): Promise<boolean> {
  const { ctx } = scope;
  const hit = ctx.noopApplies.get(noopKey, scope.version);
  if (!hit) return false;
  const revision = await scope.store.revision();
  if (revision !== hit.revision) {
    ctx.noopApplies.delete(noopKey);
    return false;
  }
  scope.warnings.push(...hit.warnings);
  writeRaw(scope.res, 200, scope.renderer.output.contentType, hit.json, scope.warnings);
  return true;
}
