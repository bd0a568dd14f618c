/**
 * The patch types of the Kubernetes API and one entry point that applies any of
 * them (server-side apply lives apart, with managed fields).
 */
import type { Schema } from "../schema.ts";
import { errors } from "../status.ts";
import { applyJsonPatch } from "./json.ts";
import { applyMergePatch } from "./merge.ts";
import { applyStrategicMergePatch } from "./strategic.ts";

export * from "./errors.ts";
export * from "./json.ts";
export * from "./merge.ts";
export * from "./strategic.ts";

/** The patch types, named for their content types. */
export type PatchType = "json" | "merge" | "strategic" | "apply";

/** Content-Type of a PATCH request → patch type. */
export const PATCH_CONTENT_TYPES: Readonly<Record<string, PatchType>> = {
  "application/json-patch+json": "json",
  "application/merge-patch+json": "merge",
  "application/strategic-merge-patch+json": "strategic",
  "application/apply-patch+yaml": "apply",
  "application/apply-patch+cbor": "apply",
};

/** The patch type of a Content-Type header (parameters ignored), if it is one. */
export function patchTypeOf(contentType: string | undefined): PatchType | undefined {
  if (!contentType) return undefined;
  const base = contentType.split(";")[0].trim().toLowerCase();
  return PATCH_CONTENT_TYPES[base];
}

/**
 * Applies a JSON, merge or strategic merge patch. `schema` is the object's schema
 * with strategic merge metadata; without one a strategic merge patch is refused
 * with 415, as Kubernetes refuses it for custom resources.
 */
export function applyPatch(
  type: Exclude<PatchType, "apply">,
  target: unknown,
  patch: unknown,
  schema?: Schema,
): unknown {
  switch (type) {
    case "json":
      return applyJsonPatch(target, patch);
    case "merge":
      return applyMergePatch(target, patch);
    case "strategic":
      if (!schema) {
        throw errors.unsupportedMediaType(
          "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
        );
      }
      return applyStrategicMergePatch(target, patch, schema);
  }
}
