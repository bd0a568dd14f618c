/**
 * Custom resource schemas at run time: validation of an object against a CRD
 * version's structural OpenAPI v3 schema (compiled with ajv once per version),
 * pruning of unknown fields, and structural defaulting, with Kubernetes' field
 * paths and messages.
 *
 * Patterns are RE2 (regex.ts), matched in time linear in the value.
 *
 * Kubernetes' formats are checked (date, date-time, uuid, byte, email, hostname,
 * ipv4, ipv6, cidr, mac, uri, duration...); a format Kubernetes does not know is
 * ignored, as is the format of a number (int32, int64, float, double), which
 * Kubernetes does not range-check either.
 */

import type { Schema, StatusCause } from "@setpoint/api";
import { fieldErrors } from "@setpoint/api";
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import { fullFormats } from "ajv-formats/dist/formats.js";
import { objectMetaSchema } from "../builtin/meta-schemas.ts";
import {
  applyDefaults as applySchemaDefaults,
  fillDefaults,
  defaultsSkeleton as skeletonOfSchema,
} from "../defaulting.ts";
import { MAX_OBJECT_DEPTH, objectLimitsCause } from "../object-limits.ts";
import { childPath, declaredProperty, indexPath, isObject, jsonTypeName } from "./paths.ts";
import { ajvRegExpEngine, regexError } from "./regex.ts";

export { checkObjectLimits, MAX_OBJECT_DEPTH, MAX_OBJECT_NODES } from "../object-limits.ts";
/** How many compiled schemas are kept (one per CRD version and generation). */
export const SCHEMA_CACHE_SIZE = 256;

/** Formats Kubernetes checks on strings; any other format is ignored. */
const STRING_FORMATS: Record<string, (s: string) => boolean> = {
  date: (s) => test(fullFormats.date, s),
  "date-time": (s) => test(fullFormats["date-time"], s),
  datetime: (s) => test(fullFormats["date-time"], s),
  uuid: (s) =>
    /^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$/.test(s),
  uuid3: (s) => /^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i.test(s),
  uuid4: (s) =>
    /^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$/i.test(s),
  uuid5: (s) =>
    /^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$/i.test(s),
  byte: (s) => /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(s),
  email: (s) => test(fullFormats.email, s),
  hostname: (s) => test(fullFormats.hostname, s),
  ipv4: (s) => test(fullFormats.ipv4, s),
  ipv6: (s) => test(fullFormats.ipv6, s),
  cidr: (s) => isCidr(s),
  mac: (s) => /^([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}$/.test(s),
  uri: (s) => test(fullFormats.uri, s),
  duration: (s) => /^(-?(\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h|d|w))+$/.test(s) || s === "0",
  hexcolor: (s) => /^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/.test(s),
  password: () => true,
};

function test(format: unknown, s: string): boolean {
  if (format instanceof RegExp) return format.test(s);
  if (typeof format === "function") return Boolean((format as (x: string) => boolean)(s));
  if (isObject(format) && typeof format.validate === "function") {
    return Boolean((format.validate as (x: string) => boolean)(s));
  }
  if (isObject(format) && format.validate instanceof RegExp) return format.validate.test(s);
  return true;
}

function isCidr(s: string): boolean {
  const slash = s.lastIndexOf("/");
  if (slash < 0) return false;
  const ip = s.slice(0, slash);
  const bits = s.slice(slash + 1);
  if (!/^\d{1,3}$/.test(bits)) return false;
  if (test(fullFormats.ipv4, ip)) return Number(bits) <= 32;
  if (test(fullFormats.ipv6, ip)) return Number(bits) <= 128;
  return false;
}

/** A schema compiled for validation. */
export interface CompiledSchema {
  /** The structural schema (the CRD's openAPIV3Schema). */
  schema: Schema;
  /** The ajv validator of the whole object. */
  validator: ValidateFunction;
  /** Whether any node is an `x-kubernetes-embedded-resource` (whose apiVersion and kind are checked). */
  embeds: boolean;
}

function hasEmbeddedResource(s: Schema | undefined, depth = 0): boolean {
  if (!s || typeof s !== "object" || depth > MAX_OBJECT_DEPTH) return false;
  if (s["x-kubernetes-embedded-resource"] === true && depth > 0) return true;
  if (s.properties && Object.values(s.properties).some((p) => hasEmbeddedResource(p, depth + 1))) {
    return true;
  }
  if (isObject(s.additionalProperties)) {
    if (hasEmbeddedResource(s.additionalProperties as Schema, depth + 1)) return true;
  }
  return hasEmbeddedResource(s.items, depth + 1);
}

const ajv = new Ajv({
  allErrors: true,
  verbose: true,
  strict: false,
  validateFormats: true,
  unicodeRegExp: false,
  // Patterns run in RE2, as Kubernetes runs them: linear in the value, never backtracking.
  code: { regExp: ajvRegExpEngine },
});
for (const [name, check] of Object.entries(STRING_FORMATS)) {
  ajv.addFormat(name, { type: "string", validate: check });
}

/**
 * `enum`, checked by a lookup in a set of the allowed values made once per schema
 * node: ajv's own enum compiles in time that grows with the square of the number
 * of values (a CRD with 100,000 of them took half a minute, at every start). The
 * set is made when the node first checks a value, not when the schema is
 * compiled: a set of 100,000 values takes some 10 ms to make, which a CRD's
 * creation (and every start) need not wait for when no object is checked yet.
 */
const ENUM_KEYWORD = "x-setpoint-enum";

/** A key equal for equal JSON values (objects compared by their sorted JSON). */
function enumKey(v: unknown): string {
  if (typeof v === "string") return `s${v}`;
  if (typeof v !== "object" || v === null) return `v${String(v)}`;
  return `j${JSON.stringify(v, (_k, x: unknown) =>
    isObject(x)
      ? Object.fromEntries(
          Object.keys(x)
            .sort()
            .map((k) => [k, x[k]]),
        )
      : x,
  )}`;
}

ajv.addKeyword({
  keyword: ENUM_KEYWORD,
  schemaType: "array",
  errors: false,
  compile(values: unknown[]) {
    let allowed: Set<string> | undefined;
    return (data: unknown) => {
      allowed ??= new Set(values.map(enumKey));
      return allowed.has(enumKey(data));
    };
  },
});

const cache = new Map<string, CompiledSchema>();
const byIdentity = new WeakMap<Schema, CompiledSchema>();

/**
 * Compiles a structural schema once: by `cacheKey` when given (e.g. the CRD's
 * uid, generation and version name), else by the schema object's identity.
 */
export function compileSchema(schema: Schema, cacheKey?: string): CompiledSchema {
  const hit = cacheKey ? cache.get(cacheKey) : byIdentity.get(schema);
  if (hit) return hit;
  const validator = ajv.compile(toAjv(schema, true, false));
  const compiled: CompiledSchema = { schema, validator, embeds: hasEmbeddedResource(schema) };
  if (cacheKey) {
    if (cache.size >= SCHEMA_CACHE_SIZE) {
      const oldest = cache.keys().next().value;
      if (oldest !== undefined) cache.delete(oldest);
    }
    cache.set(cacheKey, compiled);
  } else {
    byIdentity.set(schema, compiled);
  }
  return compiled;
}

function isIntOrStringAnyOf(list: Schema[] | undefined): boolean {
  return (
    Array.isArray(list) &&
    list.length === 2 &&
    list[0]?.type === "integer" &&
    list[1]?.type === "string" &&
    Object.keys(list[0]).length === 1 &&
    Object.keys(list[1]).length === 1
  );
}

/** The ajv form of a structural schema node. */
function toAjv(s: Schema, root: boolean, nested: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const intOrString = s["x-kubernetes-int-or-string"] === true;
  if (intOrString) out.type = s.nullable ? ["integer", "string", "null"] : ["integer", "string"];
  else if (s.type) out.type = s.nullable ? [s.type, "null"] : s.type;
  if (s.format && s.type === "string" && STRING_FORMATS[s.format]) out.format = s.format;
  if (s.enum) out[ENUM_KEYWORD] = s.enum;
  if (s.pattern !== undefined) out.pattern = s.pattern;
  for (const k of [
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "multipleOf",
    "uniqueItems",
  ] as const) {
    if (s[k] !== undefined) out[k] = s[k];
  }
  if (s.minimum !== undefined) {
    if (s.exclusiveMinimum === true) out.exclusiveMinimum = s.minimum;
    else out.minimum = s.minimum;
  }
  if (s.maximum !== undefined) {
    if (s.exclusiveMaximum === true) out.exclusiveMaximum = s.maximum;
    else out.maximum = s.maximum;
  }
  if (s.required?.length) out.required = s.required;
  if (s.properties) {
    const props: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(s.properties)) {
      if (root && k === "metadata") {
        // ObjectMeta is validated on its own; the schema may only restrict name/generateName.
        const meta: Record<string, unknown> = {};
        const names: Record<string, unknown> = {};
        for (const n of ["name", "generateName"]) {
          const p = v.properties?.[n];
          if (p) names[n] = toAjv(p, false, false);
        }
        if (Object.keys(names).length) meta.properties = names;
        props[k] = meta;
        continue;
      }
      props[k] = toAjv(v, false, nested);
    }
    out.properties = props;
  }
  if (isObject(s.additionalProperties)) {
    out.additionalProperties = toAjv(s.additionalProperties as Schema, false, nested);
  }
  if (s.items) out.items = toAjv(s.items, false, nested);
  if (s.allOf) out.allOf = s.allOf.map((x) => toAjv(x, false, true));
  if (s.anyOf && !(intOrString && isIntOrStringAnyOf(s.anyOf))) {
    out.anyOf = s.anyOf.map((x) => toAjv(x, false, true));
  }
  if (s.oneOf) out.oneOf = s.oneOf.map((x) => toAjv(x, false, true));
  if (s.not) out.not = toAjv(s.not, false, true);
  return out;
}

/** Walks a JSON pointer through `obj`, building Kubernetes' field path. */
function pointerToPath(obj: unknown, pointer: string): { path: string; value: unknown } {
  let path = "";
  let cur: unknown = obj;
  if (pointer === "") return { path, value: cur };
  for (const raw of pointer.slice(1).split("/")) {
    const seg = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (Array.isArray(cur)) {
      path = indexPath(path, Number(seg));
      cur = cur[Number(seg)];
    } else {
      path = childPath(path, seg);
      cur = isObject(cur) ? cur[seg] : undefined;
    }
  }
  return { path, value: cur };
}

/** Go's %v of a float64 bound. */
function num(n: unknown): string {
  return String(n);
}

function errorCause(obj: unknown, e: ErrorObject): StatusCause | undefined {
  const { path, value } = pointerToPath(obj, e.instancePath);
  const p = e.params as Record<string, unknown>;
  const name = path;
  switch (e.keyword) {
    case "required": {
      const missing = String(p.missingProperty);
      return fieldErrors.required(childPath(path, missing));
    }
    case "type": {
      const t = jsonTypeName(value);
      const want = String(p.type)
        .split(",")
        .filter((x) => x !== "null")
        .join(",");
      return fieldErrors.typeInvalid(path, t, `${name} in body must be of type ${want}: "${t}"`);
    }
    case "format":
      return fieldErrors.typeInvalid(
        path,
        value,
        `${name} in body must be of type ${String(p.format)}: ${JSON.stringify(value)}`,
      );
    case "enum":
    case ENUM_KEYWORD: {
      const allowed = ((e.schema as unknown[]) ?? []).map((x) =>
        typeof x === "string" ? x : JSON.stringify(x),
      );
      return fieldErrors.notSupported(path, value, allowed);
    }
    case "pattern": {
      const pattern = String(p.pattern);
      const broken = regexError(pattern);
      const shown = broken ? `${pattern}, but pattern is invalid: ${broken}` : pattern;
      return fieldErrors.invalid(path, value, `${name} in body should match '${shown}'`);
    }
    case "maxLength":
      return fieldErrors.tooLong(path, Number(p.limit));
    case "minLength":
      return fieldErrors.invalid(
        path,
        value,
        `${name} in body should be at least ${num(p.limit)} chars long`,
      );
    case "maxItems":
      return fieldErrors.tooMany(path, Array.isArray(value) ? value.length : -1, Number(p.limit));
    case "minItems":
      return fieldErrors.invalid(
        path,
        Array.isArray(value) ? value.length : value,
        `${name} in body should have at least ${num(p.limit)} items`,
      );
    case "maxProperties":
      return fieldErrors.tooMany(
        path,
        isObject(value) ? Object.keys(value).length : -1,
        Number(p.limit),
      );
    case "minProperties":
      return fieldErrors.invalid(
        path,
        isObject(value) ? Object.keys(value).length : value,
        `${name} in body should have at least ${num(p.limit)} properties`,
      );
    case "minimum":
      return fieldErrors.invalid(
        path,
        value,
        `${name} in body should be greater than or equal to ${num(p.limit)}`,
      );
    case "exclusiveMinimum":
      return fieldErrors.invalid(
        path,
        value,
        `${name} in body should be greater than ${num(p.limit)}`,
      );
    case "maximum":
      return fieldErrors.invalid(
        path,
        value,
        `${name} in body should be less than or equal to ${num(p.limit)}`,
      );
    case "exclusiveMaximum":
      return fieldErrors.invalid(
        path,
        value,
        `${name} in body should be less than ${num(p.limit)}`,
      );
    case "multipleOf":
      return fieldErrors.invalid(
        path,
        value,
        `${name} in body should be a multiple of ${num(p.multipleOf)}`,
      );
    case "uniqueItems":
      return fieldErrors.invalid(path, value, `${name} in body shouldn't contain duplicates`);
    case "anyOf":
      return fieldErrors.invalid(
        path,
        value,
        `${name} in body must validate at least one schema (anyOf)`,
      );
    case "oneOf":
      return fieldErrors.invalid(
        path,
        value,
        `${name} in body must validate one and only one schema (oneOf)`,
      );
    case "not":
      return fieldErrors.invalid(path, value, `${name} in body must not validate the schema (not)`);
    default:
      return fieldErrors.invalid(path, value, `${name} ${e.message ?? "is invalid"}`);
  }
}

/** Whether an ajv error is a branch error of an anyOf/oneOf/not (reported by its parent). */
function isBranchError(e: ErrorObject): boolean {
  return (
    /\/(anyOf|oneOf|not)(\/|$)/.test(e.schemaPath) && !/\/(anyOf|oneOf|not)$/.test(e.schemaPath)
  );
}

/**
 * Validates `obj` against a compiled schema: the causes, with Kubernetes' field
 * paths and messages (e.g. `spec.replicas: Invalid value: "string": spec.replicas
 * in body must be of type integer: "string"`). Objects past the size limits are
 * refused with one cause before any validation work.
 */
export function validateAgainstSchema(obj: unknown, compiled: CompiledSchema): StatusCause[] {
  const tooBig = objectLimitsCause(obj);
  if (tooBig) return [tooBig];
  return schemaCauses(obj, compiled);
}

/**
 * validateAgainstSchema for an object already known to be within the size limits
 * (checkObjectLimits).
 */
export function schemaCauses(obj: unknown, compiled: CompiledSchema): StatusCause[] {
  const causes: StatusCause[] = [];
  if (!compiled.validator(obj)) {
    const seen = new Set<string>();
    for (const e of compiled.validator.errors ?? []) {
      if (isBranchError(e)) continue;
      const c = errorCause(obj, e);
      if (!c) continue;
      const key = `${c.field}\u0000${c.message}`;
      if (seen.has(key)) continue;
      seen.add(key);
      causes.push(c);
    }
  }
  if (compiled.embeds) causes.push(...embeddedResourceCauses(obj, compiled.schema, "", 0));
  return causes;
}

/** Embedded resources must name their apiVersion and kind, as Kubernetes checks. */
function embeddedResourceCauses(
  value: unknown,
  s: Schema | undefined,
  path: string,
  depth: number,
): StatusCause[] {
  if (!s || depth > MAX_OBJECT_DEPTH || value === null || value === undefined) return [];
  const out: StatusCause[] = [];
  if (Array.isArray(value)) {
    if (!s.items) return out;
    value.forEach((v, i) => {
      out.push(...embeddedResourceCauses(v, s.items, indexPath(path, i), depth + 1));
    });
    return out;
  }
  if (!isObject(value)) return out;
  if (s["x-kubernetes-embedded-resource"] === true && depth > 0) {
    for (const f of ["apiVersion", "kind"]) {
      if (typeof value[f] !== "string" || value[f] === "") {
        out.push(fieldErrors.required(childPath(path, f), "must not be empty"));
      }
    }
  }
  for (const [k, v] of Object.entries(value)) {
    const child =
      declaredProperty(s, k) ??
      (isObject(s.additionalProperties) ? (s.additionalProperties as Schema) : undefined);
    if (child) out.push(...embeddedResourceCauses(v, child, childPath(path, k), depth + 1));
  }
  return out;
}

/**
 * Removes, in place, every field the schema does not declare (except under
 * `x-kubernetes-preserve-unknown-fields`), keeping apiVersion, kind and metadata
 * (pruned to ObjectMeta) at the root and in embedded resources. Returns the
 * pruned paths, e.g. `spec.foo`.
 */
export function pruneUnknownFields(obj: unknown, schema: Schema): string[] {
  const pruned: string[] = [];
  prune(obj, schema, "", true, pruned, 0);
  return pruned;
}

function prune(
  value: unknown,
  s: Schema | undefined,
  path: string,
  resourceRoot: boolean,
  pruned: string[],
  depth: number,
): void {
  if (!s || depth > MAX_OBJECT_DEPTH) return;
  if (Array.isArray(value)) {
    if (s.items) {
      value.forEach((v, i) => {
        prune(v, s.items, indexPath(path, i), false, pruned, depth + 1);
      });
    }
    return;
  }
  if (!isObject(value)) return;
  const root = resourceRoot || s["x-kubernetes-embedded-resource"] === true;
  const preserve = s["x-kubernetes-preserve-unknown-fields"] === true;
  const extra = s.additionalProperties;
  for (const key of Object.keys(value)) {
    const p = childPath(path, key);
    if (root && (key === "apiVersion" || key === "kind")) continue;
    if (root && key === "metadata") {
      prune(value[key], objectMetaSchema, p, false, pruned, depth + 1);
      continue;
    }
    const known = declaredProperty(s, key);
    if (known) {
      prune(value[key], known, p, false, pruned, depth + 1);
    } else if (isObject(extra)) {
      prune(value[key], extra as Schema, p, false, pruned, depth + 1);
    } else if (extra === true || preserve) {
      // kept as it is
    } else {
      pruned.push(p);
      delete value[key];
    }
  }
}

/**
 * Structural defaulting, in place, as Kubernetes does on create, update and read
 * (the engine in src/registry/defaulting.ts, shared with built-in types).
 */
export function applyDefaults(obj: unknown, schema: Schema): void {
  applySchemaDefaults(obj, schema);
}

/**
 * applyDefaults with the schema's defaultsSkeleton (undefined: the schema has no
 * defaults) for the filling, which then walks only the branches with defaults.
 */
export function applyDefaultsWith(
  obj: unknown,
  schema: Schema,
  skeleton: Schema | undefined,
): void {
  applySchemaDefaults(obj, schema, skeleton ?? null);
}

/**
 * The part of a structural schema that defaulting reads (see
 * src/registry/defaulting.ts), or undefined when the schema has no defaults.
 */
export function defaultsSkeleton(schema: Schema): Schema | undefined {
  return skeletonOfSchema(schema) ?? undefined;
}

/**
 * Fills absent (or non-nullable null) properties with their defaults, in place,
 * as Kubernetes does when it reads a custom resource from storage; `skeleton` is
 * the version's defaultsSkeleton. Unlike applyDefaults, nothing is dropped.
 */
export function fillReadDefaults(obj: unknown, skeleton: Schema): void {
  fillDefaults(obj, skeleton);
}
