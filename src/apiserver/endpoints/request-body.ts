/**
 * From request body to object: decoding, the apiVersion/kind check against the
 * URL, and field validation (unknown and duplicate fields, wrong JSON types)
 * against the version's schema, with `fieldValidation` deciding between an error
 * (Strict), warnings (Warn, the default) and silence (Ignore). Unknown fields are
 * dropped in every mode.
 */
import type { KubeObject } from "@setpoint/api";
import { errors, fieldErrors, type StatusCause } from "@setpoint/api";
import { isTyped } from "../../registry/types.ts";
import { decodeBodyAsync, parseMediaType } from "../wire/index.ts";
import { checkAgainstSchema } from "../wire/schema-walk.ts";
import type { RequestScope } from "./context.ts";
import { readBody } from "./request.ts";

export type FieldValidation = "Strict" | "Warn" | "Ignore";

/** The kind of options object a write's query parameters form (for 422 messages). */
export type OptionsKind = "CreateOptions" | "UpdateOptions" | "PatchOptions";

/** Reads `fieldValidation` (default Warn); 422 for other values, as Kubernetes answers. */
export function parseFieldValidation(scope: RequestScope, kind: OptionsKind): FieldValidation {
  const v = scope.query.string("fieldValidation") ?? "";
  if (v === "") return "Warn";
  if (v === "Strict" || v === "Warn" || v === "Ignore") return v;
  throw errors.invalid(
    kind,
    "",
    [fieldErrors.notSupported("fieldValidation", v, ["Ignore", "Warn", "Strict"])],
    "meta.k8s.io",
  );
}

/** Longest fieldManager accepted, in characters. */
export const MAX_FIELD_MANAGER_LENGTH = 128;

/**
 * The field manager of a write: the `fieldManager` parameter, or the client's
 * User-Agent up to its first "/" (as Kubernetes defaults it).
 */
export function fieldManager(scope: RequestScope, kind: OptionsKind): string {
  const given = scope.query.string("fieldManager");
  if (given !== undefined && given !== "") {
    const causes: StatusCause[] = [];
    if (given.length > MAX_FIELD_MANAGER_LENGTH) {
      causes.push(fieldErrors.tooLong("fieldManager", MAX_FIELD_MANAGER_LENGTH));
    }
    if (/[\u0000-\u001f\u007f]/.test(given)) {
      causes.push(fieldErrors.invalid("fieldManager", given, "must be printable"));
    }
    if (causes.length > 0) throw errors.invalid(kind, "", causes, "meta.k8s.io");
    return given;
  }
  const ua = scope.req.headers["user-agent"] ?? "";
  const prefix = ua.split("/")[0].slice(0, MAX_FIELD_MANAGER_LENGTH);
  return prefix || "unknown";
}

/** Reads `dryRun`: only "All" is valid; 422 for other values. */
export function parseDryRun(scope: RequestScope, kind: string): boolean {
  const values = scope.query.strings("dryRun").filter((v) => v !== "");
  if (values.length === 0) return false;
  const bad = values.filter((v) => v !== "All");
  if (bad.length > 0) {
    throw errors.invalid(
      kind,
      "",
      [fieldErrors.notSupported("dryRun", bad, ["All"])],
      "meta.k8s.io",
    );
  }
  return true;
}

function cannotHandle(scope: RequestScope, what: string, detail: string) {
  const kind = scope.def.names.kind;
  return errors.badRequest(
    `${what} in version ${JSON.stringify(scope.version.name)} cannot be handled as a ${kind}: ${detail}`,
  );
}

/**
 * Checks a decoded body's apiVersion and kind against the URL (filling them in
 * when left out) and returns it as an object. `alsoAccepted`: other
 * apiVersions read as the URL's (a create subresource's older versions).
 */
export function checkTypeMeta(
  scope: RequestScope,
  value: unknown,
  alsoAccepted: readonly string[] = [],
): KubeObject {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw errors.badRequest(
      `couldn't get version/kind; json parse error: json: cannot unmarshal ${Array.isArray(value) ? "array" : typeof value} into Go value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }`,
    );
  }
  const obj = value as Record<string, unknown>;
  const { apiVersion, kind } = obj;
  if (apiVersion !== undefined && apiVersion !== null && typeof apiVersion !== "string") {
    throw errors.badRequest(
      "couldn't get version/kind; json parse error: json: cannot unmarshal non-string into Go struct field .apiVersion of type string",
    );
  }
  if (kind !== undefined && kind !== null && typeof kind !== "string") {
    throw errors.badRequest(
      "couldn't get version/kind; json parse error: json: cannot unmarshal non-string into Go struct field .kind of type string",
    );
  }
  if (
    typeof apiVersion === "string" &&
    apiVersion !== "" &&
    apiVersion !== scope.apiVersion &&
    !alsoAccepted.includes(apiVersion)
  ) {
    throw errors.badRequest(
      `the API version in the data (${apiVersion}) does not match the expected API version (${scope.apiVersion})`,
    );
  }
  if (typeof kind === "string" && kind !== "" && kind !== scope.def.names.kind) {
    throw cannotHandle(
      scope,
      kind,
      `the kind in the data (${kind}) does not match the expected kind (${scope.def.names.kind})`,
    );
  }
  obj.apiVersion = scope.apiVersion;
  obj.kind = scope.def.names.kind;
  if (obj.metadata === undefined || obj.metadata === null) obj.metadata = {};
  return obj as KubeObject;
}

/**
 * Field validation of a decoded object, in place: unknown fields are dropped and
 * reported per `mode` together with `duplicates`; wrong JSON types are a 400 for
 * built-in types (custom resources are checked by their schema validation).
 */
export function validateFields(
  scope: RequestScope,
  obj: KubeObject,
  duplicates: string[],
  mode: FieldValidation,
): void {
  const { def, version } = scope;
  const kind = def.names.kind;
  // Metadata is ObjectMeta for every type: decoded strictly, also in a custom resource.
  const result = checkAgainstSchema(obj, version.schema, {
    checkTypes: isTyped(def),
    dropNulls: isTyped(def),
    strictMetadata: !isTyped(def),
    kind,
  });
  if (result.typeErrors.length > 0) throw cannotHandle(scope, kind, result.typeErrors[0]);
  if (typeof obj.metadata !== "object" || obj.metadata === null || Array.isArray(obj.metadata)) {
    throw cannotHandle(
      scope,
      kind,
      `json: cannot unmarshal ${Array.isArray(obj.metadata) ? "array" : typeof obj.metadata} into Go struct field ${kind}.metadata of type v1.ObjectMeta`,
    );
  }
  if (mode === "Ignore") return;
  const problems = [
    ...result.unknown.map((p) => `unknown field ${JSON.stringify(p)}`),
    ...duplicates.map((p) => `duplicate field ${JSON.stringify(p)}`),
  ];
  if (problems.length === 0) return;
  if (mode === "Strict") {
    throw cannotHandle(scope, kind, `strict decoding error: ${problems.join(", ")}`);
  }
  scope.warnings.push(...problems);
}

/**
 * Reads and decodes the body of a create or update into an object of the
 * request's type (in the request's version), field-validated. `alsoAccepted`:
 * other apiVersions of the same shape read as the request's (see checkTypeMeta).
 */
export async function readObject(
  scope: RequestScope,
  mode: FieldValidation,
  alsoAccepted: readonly string[] = [],
): Promise<KubeObject> {
  const body = await readBody(scope.req, scope.ctx.limits.maxBodyBytes);
  const media = parseMediaType(scope.req.headers["content-type"]);
  const decoded = await decodeBodyAsync(body, media, Boolean(scope.def.protobufMessage));
  const obj = checkTypeMeta(scope, decoded.value, alsoAccepted);
  validateFields(scope, obj, decoded.duplicates, mode);
  return obj;
}
