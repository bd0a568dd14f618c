/**
 * Checks of a CRD version's openAPIV3Schema as Kubernetes makes them, with its
 * field paths and messages:
 *
 * - OpenAPI v3 as Kubernetes accepts it: known types only, no `$ref`, `id`,
 *   `additionalItems`, `patternProperties`, `definitions`, `dependencies`,
 *   `type: null`, `uniqueItems`; `additionalProperties` and `properties` are
 *   mutually exclusive; list and map markers consistent; no defaults in
 *   top-level metadata;
 * - structural: every node has a `type` (except under
 *   `x-kubernetes-int-or-string` or `x-kubernetes-preserve-unknown-fields`);
 *   arrays have `items`; no `additionalProperties` at the root; `anyOf`, `allOf`,
 *   `oneOf` and `not` only restrict values (no type, default, description,
 *   title, nullable, additionalProperties or Kubernetes extensions) and name only
 *   properties that the structural part declares; metadata at the root restricts
 *   only name and generateName; embedded resources are objects;
 * - defaults: each validates against its own schema and has no unknown fields.
 */

import type { Schema, StatusCause } from "@setpoint/api";
import { deepClone, deepEqual, fieldErrors } from "@setpoint/api";
import { compileSchemaRules, validateRules } from "./cel/index.ts";
import { isObject } from "./paths.ts";
import { regexError } from "./regex.ts";
import { compileSchema, pruneUnknownFields, validateAgainstSchema } from "./schema.ts";

const OPENAPI_TYPES = ["array", "boolean", "integer", "number", "object", "string"];

type Level = "root" | "item" | "field";

type Raw = Schema & Record<string, unknown>;

function join(base: string, part: string): string {
  if (part === "") return base;
  return base === "" ? part : `${base}.${part}`;
}

/** The fields allowed at the root of a schema when the status subresource is on. */
const ROOT_FIELDS_WITH_STATUS = new Set([
  "description",
  "type",
  "format",
  "title",
  "maximum",
  "exclusiveMaximum",
  "minimum",
  "exclusiveMinimum",
  "maxLength",
  "minLength",
  "pattern",
  "maxItems",
  "minItems",
  "uniqueItems",
  "multipleOf",
  "required",
  "items",
  "properties",
  "externalDocs",
  "example",
  "x-kubernetes-preserve-unknown-fields",
  "x-kubernetes-validations",
]);

/**
 * Every problem with a version's schema at `path` (e.g.
 * `spec.versions[0].schema.openAPIV3Schema`), in Kubernetes' order of checks:
 * OpenAPI and structural errors first; defaults and CEL rules only when the schema
 * itself is sound.
 */
export function structuralSchemaCauses(
  schema: Schema,
  path: string,
  statusEnabled: boolean,
): StatusCause[] {
  const causes: StatusCause[] = [];
  const raw = schema as Raw;
  if (statusEnabled) {
    if (raw.type !== undefined && raw.type !== "object") {
      causes.push(
        fieldErrors.invalid(
          `${path}.type`,
          raw.type,
          'only "object" is allowed as the type at the root of the schema if the status subresource is enabled',
        ),
      );
    } else {
      const extra = Object.keys(raw).filter((k) => !ROOT_FIELDS_WITH_STATUS.has(k));
      if (extra.length > 0) {
        causes.push(
          fieldErrors.invalid(
            path,
            schema,
            "only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status subresource is enabled",
          ),
        );
      }
    }
  }
  if (raw.nullable === true) {
    causes.push(fieldErrors.forbidden(`${path}.nullable`, "nullable cannot be true at the root"));
  }
  const structural: StatusCause[] = [];
  invariants(schema, "root", path, structural);
  completeness(schema, path, structural);
  structural.sort((a, b) => {
    const x = `${a.field}: ${a.message}`;
    const y = `${b.field}: ${b.message}`;
    return x < y ? -1 : x > y ? 1 : 0;
  });
  causes.push(...structural);
  const openapi: StatusCause[] = [];
  openApiCauses(schema, path, true, false, undefined, openapi);
  causes.push(...openapi);
  if (structural.length === 0 && openapi.length === 0) {
    causes.push(...defaultCauses(schema, path, true, false));
    if (causes.length === 0) causes.push(...compileSchemaRules(schema, path).issues);
  }
  return causes;
}

// ---------------------------------------------------------------------------
// OpenAPI v3 as Kubernetes accepts it.

/** Bounds that count characters, items or properties: none may be negative. */
const COUNT_BOUNDS = [
  "maxLength",
  "minLength",
  "maxItems",
  "minItems",
  "maxProperties",
  "minProperties",
] as const;

function openApiCauses(
  s: Schema,
  path: string,
  root: boolean,
  insideMeta: boolean,
  noDefaultsReason: string | undefined,
  out: StatusCause[],
): void {
  const raw = s as Raw;
  const type: unknown = raw.type;
  if (typeof type === "string" && type !== "" && !OPENAPI_TYPES.includes(type)) {
    if (type === "null") {
      out.push(
        fieldErrors.forbidden(
          `${path}.type`,
          "type cannot be set to null, use nullable as an alternative",
        ),
      );
    } else {
      out.push(fieldErrors.notSupported(`${path}.type`, type, OPENAPI_TYPES));
    }
  }
  if (raw.default !== undefined && noDefaultsReason !== undefined) {
    out.push(fieldErrors.forbidden(`${path}.default`, `must not be set ${noDefaultsReason}`));
  }
  // A negative bound would refuse every value (maxLength: -1) or mean nothing.
  for (const bound of COUNT_BOUNDS) {
    const v = raw[bound];
    if (typeof v === "number" && v < 0) {
      out.push(fieldErrors.invalid(`${path}.${bound}`, v, "must be greater than or equal to 0"));
    }
  }
  const unsupported: [string, string][] = [
    ["id", "id is not supported"],
    ["additionalItems", "additionalItems is not supported"],
    ["patternProperties", "patternProperties is not supported"],
    ["definitions", "definitions is not supported"],
    ["dependencies", "dependencies is not supported"],
    ["$ref", "$ref is not supported"],
  ];
  for (const [k, msg] of unsupported) {
    if (raw[k] !== undefined) out.push(fieldErrors.forbidden(`${path}.${k}`, msg));
  }
  if (Array.isArray(raw.items)) {
    out.push(
      fieldErrors.forbidden(`${path}.items`, "items must be a schema object and not an array"),
    );
  }
  if (insideMeta && raw["x-kubernetes-embedded-resource"] === true) {
    out.push(
      fieldErrors.forbidden(
        `${path}.x-kubernetes-embedded-resource`,
        "must not be used inside of resource meta",
      ),
    );
  }
  if (raw.uniqueItems === true) {
    out.push(
      fieldErrors.forbidden(
        `${path}.uniqueItems`,
        "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
      ),
    );
  }
  if (raw.additionalProperties !== undefined) {
    if (s.properties && Object.keys(s.properties).length > 0) {
      if (raw.additionalProperties === false || isObject(raw.additionalProperties)) {
        out.push(
          fieldErrors.forbidden(
            `${path}.additionalProperties`,
            "additionalProperties and properties are mutual exclusive",
          ),
        );
      }
    }
    if (isObject(raw.additionalProperties)) {
      openApiCauses(
        raw.additionalProperties as Schema,
        `${path}.additionalProperties`,
        false,
        insideMeta,
        insideMeta ? "inside additionalProperties applying to object metadata" : noDefaultsReason,
        out,
      );
    }
  }
  for (const [k, p] of Object.entries(s.properties ?? {})) {
    const meta =
      (root || raw["x-kubernetes-embedded-resource"] === true) &&
      ["metadata", "kind", "apiVersion"].includes(k);
    const reason = meta && root ? `in top-level ${k}` : noDefaultsReason;
    openApiCauses(p, `${path}.properties[${k}]`, false, insideMeta || meta, reason, out);
  }
  if (s.not) openApiCauses(s.not, `${path}.not`, false, insideMeta, noDefaultsReason, out);
  for (const key of ["allOf", "oneOf", "anyOf"] as const) {
    (s[key] ?? []).forEach((x, i) => {
      openApiCauses(x, `${path}.${key}[${i}]`, false, insideMeta, noDefaultsReason, out);
    });
  }
  if (isObject(s.items))
    openApiCauses(s.items, `${path}.items`, false, insideMeta, noDefaultsReason, out);
  if (raw["x-kubernetes-preserve-unknown-fields"] === false) {
    out.push(
      fieldErrors.invalid(
        `${path}.x-kubernetes-preserve-unknown-fields`,
        false,
        "must be true or undefined",
      ),
    );
  }
  const mapType = raw["x-kubernetes-map-type"];
  if (mapType !== undefined) {
    if (s.type !== "object") {
      out.push(
        s.type
          ? fieldErrors.invalid(
              `${path}.type`,
              s.type,
              "must be object if x-kubernetes-map-type is specified",
            )
          : fieldErrors.required(
              `${path}.type`,
              "must be object if x-kubernetes-map-type is specified",
            ),
      );
    }
    if (mapType !== "atomic" && mapType !== "granular") {
      out.push(
        fieldErrors.notSupported(`${path}.x-kubernetes-map-type`, mapType, ["atomic", "granular"]),
      );
    }
  }
  const listType = raw["x-kubernetes-list-type"];
  if (listType !== undefined && s.type !== "array") {
    out.push(
      s.type
        ? fieldErrors.invalid(
            `${path}.type`,
            s.type,
            "must be array if x-kubernetes-list-type is specified",
          )
        : fieldErrors.required(
            `${path}.type`,
            "must be array if x-kubernetes-list-type is specified",
          ),
    );
  } else if (listType === "set" && isObject(s.items)) {
    const it = s.items;
    if (it.type === "object" && it["x-kubernetes-map-type"] !== "atomic") {
      out.push(
        fieldErrors.invalid(
          `${path}.items.x-kubernetes-map-type`,
          listType,
          "must be atomic as item of a list with x-kubernetes-list-type=set",
        ),
      );
    }
    if (
      it.type === "array" &&
      it["x-kubernetes-list-type"] !== undefined &&
      it["x-kubernetes-list-type"] !== "atomic"
    ) {
      out.push(
        fieldErrors.invalid(
          `${path}.items.x-kubernetes-list-type`,
          it["x-kubernetes-list-type"],
          "must be atomic as item of a list with x-kubernetes-list-type=set",
        ),
      );
    }
  }
  if (listType !== undefined && !["atomic", "set", "map"].includes(listType)) {
    out.push(
      fieldErrors.notSupported(`${path}.x-kubernetes-list-type`, listType, [
        "atomic",
        "set",
        "map",
      ]),
    );
  }
  const keys = raw["x-kubernetes-list-map-keys"];
  if (Array.isArray(keys) && keys.length > 0) {
    if (listType === undefined) {
      out.push(
        fieldErrors.required(
          `${path}.x-kubernetes-list-type`,
          "must be map if x-kubernetes-list-map-keys is non-empty",
        ),
      );
    } else if (listType !== "map") {
      out.push(
        fieldErrors.invalid(
          `${path}.x-kubernetes-list-type`,
          listType,
          "must be map if x-kubernetes-list-map-keys is non-empty",
        ),
      );
    }
  }
  if (listType === "map") {
    if (!Array.isArray(keys) || keys.length === 0) {
      out.push(
        fieldErrors.required(
          `${path}.x-kubernetes-list-map-keys`,
          "must not be empty if x-kubernetes-list-type is map",
        ),
      );
    }
    if (!s.items) {
      out.push(
        fieldErrors.required(
          `${path}.items`,
          "must have a schema if x-kubernetes-list-type is map",
        ),
      );
    } else if (s.items.type !== "object") {
      out.push(
        fieldErrors.invalid(
          `${path}.items.type`,
          s.items.type ?? "",
          "must be object if parent array's x-kubernetes-list-type is map",
        ),
      );
    } else {
      const required = new Set(s.items.required ?? []);
      for (const k of keys ?? []) {
        const p = s.items.properties?.[k];
        if (!p) {
          out.push(
            fieldErrors.invalid(
              `${path}.x-kubernetes-list-map-keys`,
              keys,
              "entries must all be names of item properties",
            ),
          );
          continue;
        }
        if (p.type === "array" || p.type === "object") {
          out.push(
            fieldErrors.invalid(
              `${path}.items.properties[${k}].type`,
              s.items.type,
              "must be a scalar type if parent array's x-kubernetes-list-type is map",
            ),
          );
        }
        if (!required.has(k) && p.default === undefined) {
          out.push(
            fieldErrors.required(
              `${path}.items.properties[${k}].default`,
              "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
            ),
          );
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Structural invariants.

function isIntOrStringPattern(list: Schema[] | undefined): boolean {
  return (
    Array.isArray(list) &&
    list.length === 2 &&
    list[0]?.type === "integer" &&
    list[1]?.type === "string" &&
    Object.keys(list[0]).length === 1 &&
    Object.keys(list[1]).length === 1
  );
}

function invariants(s: Schema, level: Level, path: string, out: StatusCause[]): void {
  const raw = s as Raw;
  if (s.type === "array" && !s.items)
    out.push(fieldErrors.required(`${path}.items`, "must be specified"));
  if (isObject(s.items)) invariants(s.items, "item", `${path}.items`, out);
  for (const [k, p] of Object.entries(s.properties ?? {})) {
    invariants(p, "field", `${path}.properties[${k}]`, out);
  }
  if (raw.additionalProperties !== undefined && raw.additionalProperties !== false) {
    if (level === "root") {
      out.push(
        fieldErrors.forbidden(`${path}.additionalProperties`, "must not be used at the root"),
      );
    }
    if (isObject(raw.additionalProperties)) {
      invariants(raw.additionalProperties as Schema, "field", `${path}.additionalProperties`, out);
    }
  }
  const intOrString = raw["x-kubernetes-int-or-string"] === true;
  const preserve = raw["x-kubernetes-preserve-unknown-fields"] === true;
  const embedded = raw["x-kubernetes-embedded-resource"] === true;
  if (intOrString && preserve) {
    out.push(
      fieldErrors.invalid(
        `${path}.x-kubernetes-preserve-unknown-fields`,
        true,
        "must be false if x-kubernetes-int-or-string is true",
      ),
    );
  }
  if (intOrString && embedded) {
    out.push(
      fieldErrors.invalid(
        `${path}.x-kubernetes-embedded-resource`,
        true,
        "must be false if x-kubernetes-int-or-string is true",
      ),
    );
  }
  const skipAnyOf = isIntOrStringPattern(s.anyOf);
  const skipFirstAllOf = Array.isArray(s.allOf) && isIntOrStringPattern(s.allOf[0]?.anyOf);
  if (!skipAnyOf) {
    for (const [i, x] of (s.anyOf ?? []).entries())
      nested(x, `${path}.anyOf[${i}]`, false, true, out);
  }
  for (const [i, x] of (s.allOf ?? []).entries())
    nested(x, `${path}.allOf[${i}]`, skipFirstAllOf && i === 0, false, out);
  for (const [i, x] of (s.oneOf ?? []).entries())
    nested(x, `${path}.oneOf[${i}]`, false, true, out);
  if (s.not) nested(s.not, `${path}.not`, false, true, out);
  patternCauses(s, path, out);
  const checkMetadata = level === "root" || embedded;
  if (embedded && s.type !== "object") {
    out.push(
      s.type
        ? fieldErrors.invalid(
            `${path}.type`,
            s.type,
            "must be object if x-kubernetes-embedded-resource is true",
          )
        : fieldErrors.required(
            `${path}.type`,
            "must be object if x-kubernetes-embedded-resource is true",
          ),
    );
  } else if (!s.type && !intOrString && !preserve) {
    const detail =
      level === "root"
        ? "must not be empty at the root"
        : level === "item"
          ? "must not be empty for specified array items"
          : "must not be empty for specified object fields";
    out.push(fieldErrors.required(`${path}.type`, detail));
  }
  if (embedded && raw.additionalProperties !== undefined) {
    out.push(
      fieldErrors.forbidden(
        `${path}.additionalProperties`,
        "must not be used if x-kubernetes-embedded-resource is set",
      ),
    );
  }
  if (level === "root" && s.type && s.type !== "object") {
    out.push(fieldErrors.invalid(`${path}.type`, s.type, "must be object at the root"));
  }
  for (const k of ["kind", "apiVersion"]) {
    const p = s.properties?.[k];
    if (p && checkMetadata && p.type !== "string") {
      out.push(
        fieldErrors.invalid(`${path}.properties[${k}].type`, p.type ?? "", "must be string"),
      );
    }
  }
  const meta = s.properties?.metadata;
  if (meta) {
    const mpath = `${path}.properties[metadata]`;
    if (checkMetadata && meta.type !== "object") {
      out.push(fieldErrors.invalid(`${mpath}.type`, meta.type ?? "", "must be object"));
    }
    if (level === "root") {
      const rest = { ...(meta as Raw) };
      delete rest.type;
      delete rest.default;
      const props = Object.keys(meta.properties ?? {});
      if (props.every((p) => p === "name" || p === "generateName")) delete rest.properties;
      if (Object.keys(rest).length > 0) {
        out.push(
          fieldErrors.forbidden(
            mpath,
            "must not specify anything other than name and generateName, but metadata is implicitly specified",
          ),
        );
      }
    }
  }
  if (embedded && !preserve && Object.keys(s.properties ?? {}).length === 0) {
    out.push(
      fieldErrors.required(
        `${path}.properties`,
        "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
      ),
    );
  }
}

/** A value validation under allOf/anyOf/oneOf/not. */
/** A `pattern` RE2 cannot compile (lookahead, backreferences, bad syntax), as Kubernetes refuses it. */
function patternCauses(s: Schema, path: string, out: StatusCause[]): void {
  if (typeof s.pattern !== "string" || s.pattern === "") return;
  const broken = regexError(s.pattern);
  if (broken) {
    out.push(
      fieldErrors.invalid(
        `${path}.pattern`,
        s.pattern,
        `must be a valid regular expression, but isn't: ${broken}`,
      ),
    );
  }
}

function nested(
  v: Schema,
  path: string,
  skipAnyOf: boolean,
  noCel: boolean,
  out: StatusCause[],
): void {
  const raw = v as Raw;
  if (!skipAnyOf)
    for (const [i, x] of (v.anyOf ?? []).entries())
      nested(x, `${path}.anyOf[${i}]`, false, true, out);
  for (const [i, x] of (v.allOf ?? []).entries())
    nested(x, `${path}.allOf[${i}]`, false, noCel, out);
  for (const [i, x] of (v.oneOf ?? []).entries())
    nested(x, `${path}.oneOf[${i}]`, false, true, out);
  if (v.not) nested(v.not, `${path}.not`, false, true, out);
  if (isObject(v.items)) nested(v.items, `${path}.items`, false, noCel, out);
  for (const [k, p] of Object.entries(v.properties ?? {}))
    nested(p, `${path}.properties[${k}]`, false, noCel, out);
  patternCauses(v, path, out);
  if (raw.type !== undefined)
    out.push(fieldErrors.forbidden(`${path}.type`, "must be empty to be structural"));
  if (raw.additionalProperties !== undefined) {
    out.push(
      fieldErrors.forbidden(`${path}.additionalProperties`, "must be undefined to be structural"),
    );
  }
  if (raw.default !== undefined)
    out.push(fieldErrors.forbidden(`${path}.default`, "must be undefined to be structural"));
  if (raw.title) out.push(fieldErrors.forbidden(`${path}.title`, "must be empty to be structural"));
  if (raw.description)
    out.push(fieldErrors.forbidden(`${path}.description`, "must be empty to be structural"));
  if (raw.nullable)
    out.push(fieldErrors.forbidden(`${path}.nullable`, "must be false to be structural"));
  const forbiddenTrue: [string, string][] = [
    ["x-kubernetes-preserve-unknown-fields", "must be false to be structural"],
    ["x-kubernetes-embedded-resource", "must be false to be structural"],
    ["x-kubernetes-int-or-string", "must be false to be structural"],
  ];
  for (const [k, msg] of forbiddenTrue)
    if (raw[k] === true) out.push(fieldErrors.forbidden(`${path}.${k}`, msg));
  if (
    Array.isArray(raw["x-kubernetes-list-map-keys"]) &&
    raw["x-kubernetes-list-map-keys"].length > 0
  ) {
    out.push(
      fieldErrors.forbidden(`${path}.x-kubernetes-list-map-keys`, "must be empty to be structural"),
    );
  }
  if (raw["x-kubernetes-list-type"] !== undefined) {
    out.push(
      fieldErrors.forbidden(`${path}.x-kubernetes-list-type`, "must be undefined to be structural"),
    );
  }
  if (raw["x-kubernetes-map-type"] !== undefined) {
    out.push(
      fieldErrors.forbidden(`${path}.x-kubernetes-map-type`, "must be undefined to be structural"),
    );
  }
  if (
    noCel &&
    Array.isArray(raw["x-kubernetes-validations"]) &&
    raw["x-kubernetes-validations"].length > 0
  ) {
    out.push(
      fieldErrors.forbidden(`${path}.x-kubernetes-validations`, "must be empty to be structural"),
    );
  }
  if (v.properties?.metadata) {
    out.push(
      fieldErrors.forbidden(
        `${path}.properties[metadata]`,
        "must not be specified in a nested context",
      ),
    );
  }
}

/** Value validations may only name properties the structural schema declares. */
function completeness(s: Schema, path: string, out: StatusCause[]): void {
  const visit = (v: Schema, node: Schema | undefined, sPath: string, vPath: string) => {
    if (!node) {
      out.push(fieldErrors.required(sPath, `because it is defined in ${vPath}`));
      return;
    }
    for (const key of ["allOf", "anyOf", "oneOf"] as const) {
      for (const [i, x] of (v[key] ?? []).entries()) visit(x, node, sPath, `${vPath}.${key}[${i}]`);
    }
    if (v.not) visit(v.not, node, sPath, `${vPath}.not`);
    if (v.items) visit(v.items, node.items, `${sPath}.items`, `${vPath}.items`);
    for (const [k, p] of Object.entries(v.properties ?? {})) {
      visit(p, node.properties?.[k], `${sPath}.properties[${k}]`, `${vPath}.properties[${k}]`);
    }
  };
  const walk = (node: Schema, p: string) => {
    for (const key of ["allOf", "anyOf", "oneOf"] as const) {
      for (const [i, x] of (node[key] ?? []).entries()) visit(x, node, p, `${p}.${key}[${i}]`);
    }
    if (node.not) visit(node.not, node, p, `${p}.not`);
    for (const [k, c] of Object.entries(node.properties ?? {})) walk(c, `${p}.properties[${k}]`);
    if (node.items) walk(node.items, `${p}.items`);
    if (isObject(node.additionalProperties))
      walk(node.additionalProperties as Schema, `${p}.additionalProperties`);
  };
  walk(s, path);
}

// ---------------------------------------------------------------------------
// Defaults.

function defaultCauses(s: Schema, path: string, root: boolean, insideMeta: boolean): StatusCause[] {
  const out: StatusCause[] = [];
  const raw = s as Raw;
  if (s.default !== undefined && !insideMeta) {
    const dpath = `${path}.default`;
    const pruned = deepClone(s.default);
    const embedded = raw["x-kubernetes-embedded-resource"] === true;
    if (isObject(pruned) || Array.isArray(pruned)) pruneDefault(pruned, s, embedded);
    if (!deepEqual(pruned, s.default)) {
      out.push(fieldErrors.invalid(dpath, s.default, "must not have unknown fields"));
    } else {
      const bare: Schema = { ...s };
      delete bare.default;
      const errs = validateAgainstSchema(s.default, compileSchema(bare));
      if (errs.length > 0) {
        out.push(...errs.map((c) => ({ ...c, field: join(dpath, c.field ?? "") })));
      } else {
        const rules = compileSchemaRules(bare).root;
        for (const c of validateRules(s.default, s.default, rules))
          out.push({ ...c, field: join(dpath, c.field ?? "") });
      }
    }
  }
  for (const [k, p] of Object.entries(s.properties ?? {})) {
    const meta = (root || raw["x-kubernetes-embedded-resource"] === true) && k === "metadata";
    out.push(...defaultCauses(p, `${path}.properties[${k}]`, false, insideMeta || meta));
  }
  if (s.items) out.push(...defaultCauses(s.items, `${path}.items`, false, insideMeta));
  if (isObject(s.additionalProperties)) {
    out.push(
      ...defaultCauses(
        s.additionalProperties as Schema,
        `${path}.additionalProperties`,
        false,
        insideMeta,
      ),
    );
  }
  return out;
}

function pruneDefault(value: unknown, s: Schema, embedded: boolean): void {
  if (embedded) {
    pruneUnknownFields(value, s);
    return;
  }
  // A default is pruned as a value of its own schema, not as a resource root.
  const wrapper: Schema = { type: "object", properties: { v: s } };
  pruneUnknownFields({ v: value }, wrapper);
}
