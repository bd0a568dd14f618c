/**
 * Reading an object against its version's schema: unknown fields (reported for
 * `fieldValidation` and pruned, as Kubernetes drops what a type does not declare),
 * values of the wrong JSON type (a decoding error for built-in types), and schema
 * defaults for fields left out.
 */

import type { Schema } from "@setpoint/api";
import { applyDefaults, defaultsSkeleton } from "../../registry/defaulting.ts";

/** Depth past which the walk stops descending (bodies are refused deeper than this). */
export const MAX_SCHEMA_WALK_DEPTH = 128;

export interface SchemaCheck {
  /** Paths of fields the schema does not declare, e.g. "spec.foo" (removed from the object). */
  unknown: string[];
  /** Messages for values of the wrong type, in Go's decoding words. */
  typeErrors: string[];
}

export interface SchemaCheckOptions {
  /** Report values whose JSON type differs from the schema's (built-in types decode strictly). */
  checkTypes: boolean;
  /** Drop fields whose value is null, as decoding into a Go struct does (built-in types). */
  dropNulls: boolean;
  /** The kind, for messages. */
  kind: string;
  /**
   * For a walk that neither checks types nor drops nulls (custom resources): the
   * top-level `metadata`, when the schema declares it, is also read as ObjectMeta
   * is for every type, with its types checked and its nulls dropped, in the same
   * walk. The result is what a second, strict walk of the metadata alone (after
   * this one) would add: its type errors, after this walk's, and its nulls gone.
   */
  strictMetadata?: boolean;
}

/**
 * How a walk treats what it meets: the options, or for metadata read strictly
 * after a lenient walk (strictMetadata), both at once.
 */
interface WalkMode {
  checkTypes: boolean;
  dropNulls: boolean;
  kind: string;
  /**
   * Set for the strict reading of metadata after a lenient walk: the lenient walk
   * reports (and removes) an undeclared field before nulls are dropped, and goes
   * on below a value of the wrong type, in this mode (the strict one stops there).
   */
  afterLenient?: WalkMode;
  /** The mode of the top-level metadata (strictMetadata). */
  metadata?: WalkMode;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function jsonType(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "object") return "object";
  if (typeof v === "boolean") return "bool";
  return typeof v;
}

function goType(s: Schema): string {
  if (s["x-kubernetes-int-or-string"]) return "intstr.IntOrString";
  switch (s.type) {
    case "string":
      return "string";
    case "integer":
      return s.format === "int32" ? "int32" : "int64";
    case "number":
      return "float64";
    case "boolean":
      return "bool";
    case "array":
      return s.items ? `[]${goType(s.items)}` : "[]interface {}";
    case "object":
      return s.properties ? "struct" : s.additionalProperties ? "map[string]string" : "object";
    default:
      return "interface {}";
  }
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

function typeMatches(v: unknown, s: Schema): boolean {
  if (s["x-kubernetes-int-or-string"]) {
    return typeof v === "string" || (typeof v === "number" && Number.isInteger(v));
  }
  switch (s.type) {
    case "string":
      if (typeof v !== "string") return false;
      if (s.format === "date-time" && v !== "" && !RFC3339.test(v)) return false;
      return true;
    case "integer":
      return typeof v === "number" && Number.isInteger(v);
    case "number":
      return typeof v === "number";
    case "boolean":
      return typeof v === "boolean";
    case "array":
      return Array.isArray(v);
    case "object":
      return isObject(v);
    default:
      return true;
  }
}

function join(path: string, key: string): string {
  return path === "" ? key : `${path}.${key}`;
}

/**
 * Walks `obj` against `schema`, removing undeclared fields (and nulls when asked)
 * in place, and returns what it found. Fields under
 * `x-kubernetes-preserve-unknown-fields` are kept as they are.
 */
export function checkAgainstSchema(
  obj: Record<string, unknown>,
  schema: Schema,
  opts: SchemaCheckOptions,
): SchemaCheck {
  const out: SchemaCheck = { unknown: [], typeErrors: [] };
  const mode: WalkMode = {
    checkTypes: opts.checkTypes,
    dropNulls: opts.dropNulls,
    kind: opts.kind,
  };
  const metaSchema = opts.strictMetadata ? schema.properties?.metadata : undefined;
  if (metaSchema !== undefined) {
    mode.metadata = { checkTypes: true, dropNulls: true, kind: opts.kind, afterLenient: mode };
  }
  walk(obj, schema, [], mode, out, 0, true);
  if (mode.metadata !== undefined && metaSchema !== undefined && !Object.hasOwn(obj, "metadata")) {
    // Read strictly, absent metadata is an undefined value (of the wrong type).
    walk(undefined, metaSchema, ["metadata"], mode.metadata, out, 1, false);
  }
  return out;
}

/** The path of a walk's position (built only when something is reported). */
type PathStack = (string | number)[];

function render(path: PathStack): string {
  let out = "";
  for (const seg of path) {
    out = typeof seg === "number" ? `${out}[${seg}]` : join(out, seg);
  }
  return out;
}

function walk(
  value: unknown,
  schema: Schema,
  path: PathStack,
  mode: WalkMode,
  out: SchemaCheck,
  depth: number,
  top: boolean,
): void {
  if (depth > MAX_SCHEMA_WALK_DEPTH) return;
  if (mode.checkTypes && value !== null && !typeMatches(value, schema)) {
    if (schema.format === "date-time" && typeof value === "string") {
      out.typeErrors.push(
        `parsing time ${JSON.stringify(value)} as "2006-01-02T15:04:05Z07:00": cannot parse ${JSON.stringify(value)} as a time in RFC 3339 form`,
      );
    } else {
      out.typeErrors.push(
        `json: cannot unmarshal ${jsonType(value)} into Go struct field ${mode.kind}.${render(path)} of type ${goType(schema)}`,
      );
    }
    if (mode.afterLenient === undefined) return;
    mode = mode.afterLenient;
  }
  if (Array.isArray(value)) {
    const items = schema.items;
    if (items) {
      for (let i = 0; i < value.length; i++) {
        path.push(i);
        walk(value[i], items, path, mode, out, depth + 1, false);
        path.pop();
      }
    }
    return;
  }
  if (!isObject(value)) return;
  const preserve = schema["x-kubernetes-preserve-unknown-fields"] === true;
  const props = schema.properties;
  const extra = schema.additionalProperties;
  const embedded = schema["x-kubernetes-embedded-resource"] === true;
  // Nulls are dropped first, unless undeclared ones are reported first (afterLenient).
  const dropFirst = mode.dropNulls && mode.afterLenient === undefined;
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const child = value[key];
    if (child === null && dropFirst) {
      delete value[key];
      continue;
    }
    const known = props !== undefined && Object.hasOwn(props, key) ? props[key] : undefined;
    const next = known ?? (typeof extra === "object" ? extra : undefined);
    if (
      next === undefined &&
      extra !== true &&
      !preserve &&
      !((embedded || top) && (key === "apiVersion" || key === "kind" || key === "metadata")) &&
      (props !== undefined || schema.type !== undefined) // an untyped schema accepts anything
    ) {
      path.push(key);
      out.unknown.push(render(path));
      path.pop();
      delete value[key];
      continue;
    }
    if (child === null && mode.dropNulls) {
      delete value[key];
      continue;
    }
    if (next !== undefined) {
      path.push(key);
      const childMode =
        top && key === "metadata" && known !== undefined && mode.metadata !== undefined
          ? mode.metadata
          : mode;
      walk(child, next, path, childMode, out, depth + 1, false);
      path.pop();
    }
  }
}

/**
 * Fills schema `default`s into `obj` (structural defaulting, one engine for every
 * type: src/registry/defaulting.ts).
 */
export function applySchemaDefaults(value: unknown, schema: Schema): void {
  applyDefaults(value, schema);
}

/**
 * The part of `schema` on a path to a `default` (see defaultsSkeleton in
 * src/registry/defaulting.ts); null when the schema declares no default.
 */
export function defaultsOnly(schema: Schema): Schema | null {
  return defaultsSkeleton(schema);
}
