/**
 * The scale subresource of custom resources (`/scale`): an autoscaling/v1 Scale
 * read from and written to the paths the CRD names (specReplicasPath,
 * statusReplicasPath, labelSelectorPath), as `kubectl scale` and autoscalers use it.
 *
 * - GET answers the Scale (an error when the object has no value at
 *   specReplicasPath; status.replicas defaults to 0, status.selector to "").
 * - PUT takes a Scale: its spec.replicas is written to specReplicasPath (a
 *   resourceVersion in it is a precondition); PATCH (JSON, merge or strategic
 *   merge patch) is applied to the current Scale, then written the same way.
 *
 * A write is an update of the object itself (generation, defaults, schema and
 * rules, field ownership recorded for the "scale" subresource), answered with
 * the Scale of the stored object.
 */

import type { KubeObject } from "@setpoint/api";
import {
  applyJsonPatch,
  applyMergePatch,
  deepClone,
  errors,
  failure,
  fieldErrors,
  StatusError,
} from "@setpoint/api";
import type { ScaleSubresource } from "../../registry/types.ts";
import { decodeJson, unsupportedBodyType } from "../wire/decode.ts";
import { parseMediaType } from "../wire/media-type.ts";
import { writeObject } from "../wire/response.ts";
import type { RequestScope } from "./context.ts";
import { readBody } from "./request.ts";
import { fieldManager, parseDryRun } from "./request-body.ts";
import { checkName } from "./update.ts";

/** apiVersion and kind of the Scale the subresource speaks. */
export const SCALE_API_VERSION = "autoscaling/v1";
export const SCALE_KIND = "Scale";

/** Patch types accepted on `/scale`. */
const SCALE_PATCH_TYPES = [
  "application/json-patch+json",
  "application/merge-patch+json",
  "application/strategic-merge-patch+json",
];

function segments(path: string): string[] {
  return path.replace(/^\./, "").split(".");
}

function readPath(obj: unknown, path: string): unknown {
  let cur = obj;
  for (const s of segments(path)) {
    if (typeof cur !== "object" || cur === null || Array.isArray(cur)) return undefined;
    if (!Object.hasOwn(cur, s)) return undefined;
    cur = (cur as Record<string, unknown>)[s];
  }
  return cur;
}

function writePath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const parts = segments(path);
  let cur = obj;
  for (const s of parts.slice(0, -1)) {
    const next = Object.hasOwn(cur, s) ? cur[s] : undefined;
    if (typeof next !== "object" || next === null || Array.isArray(next)) cur[s] = {};
    cur = cur[s] as Record<string, unknown>;
  }
  cur[parts[parts.length - 1]] = value;
}

function scaleConfig(scope: RequestScope): ScaleSubresource {
  const scale = scope.version.scale;
  if (!scale) throw errors.notFound(scope.subject);
  return scale;
}

/**
 * The Scale of `obj`. With `lenient`, an object without a value at
 * specReplicasPath has 0 replicas (so that a write can set them); otherwise that
 * is an error, as Kubernetes answers a GET.
 */
export function scaleOf(obj: KubeObject, scale: ScaleSubresource, lenient = false): KubeObject {
  const spec = readPath(obj, scale.specReplicasPath);
  if (spec !== undefined && !Number.isInteger(spec)) {
    throw errors.internal(
      `the spec replicas field ${JSON.stringify(scale.specReplicasPath)} is not an integer`,
    );
  }
  if (spec === undefined && !lenient) {
    throw errors.internal(
      `the spec replicas field ${JSON.stringify(scale.specReplicasPath)} does not exist`,
    );
  }
  const statusReplicas = readPath(obj, scale.statusReplicasPath);
  const selector = scale.labelSelector
    ? scale.labelSelector(obj)
    : scale.labelSelectorPath
      ? readPath(obj, scale.labelSelectorPath)
      : undefined;
  const m = obj.metadata;
  const metadata: KubeObject["metadata"] = { name: m.name };
  if (m.namespace !== undefined) metadata.namespace = m.namespace;
  if (m.uid !== undefined) metadata.uid = m.uid;
  if (m.resourceVersion !== undefined) metadata.resourceVersion = m.resourceVersion;
  if (m.creationTimestamp !== undefined) metadata.creationTimestamp = m.creationTimestamp;
  const status: Record<string, unknown> = {
    replicas: Number.isInteger(statusReplicas) ? statusReplicas : 0,
  };
  if (typeof selector === "string" && selector !== "") status.selector = selector;
  return {
    kind: SCALE_KIND,
    apiVersion: SCALE_API_VERSION,
    metadata,
    spec: { replicas: (spec as number | undefined) ?? 0 },
    status,
  };
}

function respondScale(scope: RequestScope, code: number, scale: KubeObject): void {
  writeObject(scope.res, code, scale, { warnings: scope.warnings });
}

/** Handles GET on `/scale`. */
export async function getScale(scope: RequestScope): Promise<void> {
  const scale = scaleConfig(scope);
  respondScale(scope, 200, scaleOf(await scope.store.get(), scale));
}

function invalidScale(scope: RequestScope, causes: ReturnType<typeof fieldErrors.invalid>[]) {
  return errors.invalid(SCALE_KIND, scope.name ?? "", causes, "autoscaling");
}

/** The replicas a Scale body asks for; 422 unless a non-negative integer. */
function requestedReplicas(scope: RequestScope, body: unknown): number {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw errors.badRequest("the body of a scale request must be a Scale object");
  }
  const b = body as Record<string, unknown>;
  if (b.kind !== undefined && b.kind !== SCALE_KIND) {
    throw errors.badRequest(
      `the kind in the data (${String(b.kind)}) does not match the expected kind (${SCALE_KIND})`,
    );
  }
  const spec = b.spec as Record<string, unknown> | undefined;
  const replicas = spec && typeof spec === "object" ? spec.replicas : undefined;
  if (replicas === undefined || replicas === null) return 0;
  if (typeof replicas !== "number" || !Number.isInteger(replicas)) {
    throw invalidScale(scope, [
      fieldErrors.invalid("spec.replicas", replicas, "must be an integer"),
    ]);
  }
  if (replicas < 0) {
    throw invalidScale(scope, [
      fieldErrors.invalid("spec.replicas", replicas, "must be greater than or equal to 0"),
    ]);
  }
  return replicas;
}

/**
 * Writes the Scale that `change` makes of the current one: the replicas go to
 * specReplicasPath of the object, which is updated as a write of the "scale"
 * subresource.
 */
async function writeScale(
  scope: RequestScope,
  change: (current: KubeObject) => unknown,
): Promise<void> {
  const scale = scaleConfig(scope);
  const dryRun = parseDryRun(scope, "UpdateOptions");
  const manager = fieldManager(scope, "UpdateOptions");
  const warningsBefore = scope.warnings.length;
  const opts = { dryRun, manager, allowCreate: false, warnings: scope.warnings };
  const outcome = await scope.store.update(opts, (current) => {
    // Warnings are recomputed on each attempt.
    scope.warnings.length = warningsBefore;
    if (!current) throw errors.notFound(scope.subject);
    const body = change(scaleOf(current, scale, true));
    const replicas = requestedReplicas(scope, body);
    const meta = (body as { metadata?: { name?: unknown; resourceVersion?: unknown } }).metadata;
    if (meta?.name !== undefined && meta.name !== "") {
      checkName(scope, { metadata: { name: String(meta.name) } } as KubeObject);
    }
    const next = deepClone(current);
    writePath(next as Record<string, unknown>, scale.specReplicasPath, replicas);
    // A resourceVersion in the Scale is a precondition; otherwise the write is unconditional.
    const rv = typeof meta?.resourceVersion === "string" ? meta.resourceVersion : "";
    next.metadata.resourceVersion = rv || current.metadata.resourceVersion;
    return next;
  });
  respondScale(scope, 200, scaleOf(outcome.obj, scale, true));
}

async function readScaleBody(scope: RequestScope): Promise<unknown> {
  const raw = await readBody(scope.req, scope.ctx.limits.maxBodyBytes);
  const media = parseMediaType(scope.req.headers["content-type"]);
  if (media.type !== "" && media.type !== "application/json") {
    throw unsupportedBodyType(["application/json"]);
  }
  return decodeJson(raw.toString("utf8")).value;
}

/** Handles PUT on `/scale`. */
export async function updateScale(scope: RequestScope): Promise<void> {
  scaleConfig(scope);
  const body = await readScaleBody(scope);
  await writeScale(scope, () => body);
}

/** Handles PATCH on `/scale`. */
export async function patchScale(scope: RequestScope): Promise<void> {
  scaleConfig(scope);
  const media = parseMediaType(scope.req.headers["content-type"]).type;
  if (!SCALE_PATCH_TYPES.includes(media)) throw unsupportedBodyType(SCALE_PATCH_TYPES);
  const raw = await readBody(scope.req, scope.ctx.limits.maxBodyBytes);
  const patch = decodeJson(raw.toString("utf8")).value;
  await writeScale(scope, (current) => {
    try {
      // A Scale has no lists: a strategic merge patch merges like a merge patch.
      return media === "application/json-patch+json"
        ? applyJsonPatch(current, patch)
        : applyMergePatch(current, patch);
    } catch (err) {
      if (err instanceof StatusError) throw err;
      throw failure(422, "Invalid", err instanceof Error ? err.message : String(err));
    }
  });
}
