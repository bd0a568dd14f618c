/**
 * Schema defaulting, one engine for every type (built-in and custom resources),
 * with Kubernetes' structural defaulting rules:
 *
 * - a property with a `default` gets a copy of it when it is absent, or when it
 *   is null and the property is not `nullable` (a nullable null stays null);
 * - likewise an array item or an additionalProperties value that is a
 *   non-nullable null, when the items' (values') schema has a default;
 * - defaults apply inside objects, array items and additionalProperties values,
 *   also inside a value that was itself just defaulted;
 * - before filling, a null whose field is not nullable and has no default is
 *   dropped (Kubernetes prunes those nulls; decoding a built-in type drops every
 *   null already, so there this removes nothing).
 *
 * Walks stop below MAX_OBJECT_DEPTH levels (deeper objects are refused anyway).
 * Filling walks only the part of the schema that leads to a default (its
 * skeleton, made once per schema object), so a schema without defaults costs
 * nothing beyond the null walk.
 */

import type { Schema } from "@setpoint/api";
import { deepClone } from "@setpoint/api";
import { declaredProperty, isObject } from "./crd/paths.ts";
import { MAX_OBJECT_DEPTH } from "./object-limits.ts";

/**
 * Defaults `obj` in place against `schema`: non-nullable nulls without a default
 * dropped, then every default filled. `skeleton` (defaultsSkeleton(schema)) may be
 * passed when the caller keeps it; otherwise it is looked up per schema object.
 */
export function applyDefaults(obj: unknown, schema: Schema, skeleton?: Schema | null): void {
  dropNonNullableNulls(obj, schema);
  const s = skeleton === undefined ? defaultsSkeleton(schema) : skeleton;
  if (s) fillDefaults(obj, s);
}

/** The skeleton of each schema object seen (null: the schema declares no default). */
const skeletons = new WeakMap<Schema, Schema | null>();

/**
 * The part of `schema` that defaulting reads: only the nodes on a path to a
 * `default` (with their `nullable`), or null when the schema has no defaults.
 * Filling with it gives the same result as with the whole schema and walks only
 * the branches that can change. Made once per schema object.
 */
export function defaultsSkeleton(schema: Schema): Schema | null {
  let out = skeletons.get(schema);
  if (out === undefined) {
    out = skeletonOf(schema, 0) ?? null;
    skeletons.set(schema, out);
  }
  return out;
}

function skeletonOf(s: Schema, depth: number): Schema | undefined {
  if (depth > MAX_OBJECT_DEPTH) return undefined;
  const out: Schema = {};
  let useful = false;
  if (s.default !== undefined) {
    out.default = s.default;
    useful = true;
  }
  if (s.nullable) out.nullable = true;
  const extra = isObject(s.additionalProperties)
    ? skeletonOf(s.additionalProperties as Schema, depth + 1)
    : undefined;
  if (extra) {
    out.additionalProperties = extra;
    useful = true;
  }
  if (s.properties) {
    const props: Record<string, Schema> = {};
    let any = false;
    for (const [k, v] of Object.entries(s.properties)) {
      const child = skeletonOf(v, depth + 1);
      if (child) {
        props[k] = child;
        any = true;
      } else if (extra) {
        // Declared properties are never defaulted as additional ones: keep them known.
        props[k] = {};
      }
    }
    if (any || extra) out.properties = props;
    if (any) useful = true;
  }
  if (s.items) {
    const items = skeletonOf(s.items, depth + 1);
    if (items) {
      out.items = items;
      useful = true;
    }
  }
  return useful ? out : undefined;
}

/**
 * Fills absent (or non-nullable null) fields with their defaults, in place;
 * `schema` is a schema or its skeleton. Nothing is dropped (this is what
 * reading a custom resource from storage does).
 */
export function fillDefaults(obj: unknown, schema: Schema): void {
  fill(obj, schema, 0);
}

/** Drops, in place, nulls whose field is not nullable and has no default. */
export function dropNonNullableNulls(obj: unknown, schema: Schema): void {
  dropNulls(obj, schema, 0);
}

function childSchemaOf(s: Schema | undefined, key: string): Schema | undefined {
  if (!s) return undefined;
  const p = declaredProperty(s, key);
  if (p) return p;
  return isObject(s.additionalProperties) ? (s.additionalProperties as Schema) : undefined;
}

function dropNulls(value: unknown, s: Schema | undefined, depth: number): void {
  if (!s || depth > MAX_OBJECT_DEPTH) return;
  if (Array.isArray(value)) {
    for (const v of value) dropNulls(v, s.items, depth + 1);
    return;
  }
  if (!isObject(value)) return;
  for (const key in value) {
    const v = value[key];
    // Only nulls and containers (which may hold nulls) need the field's schema.
    if (v === null) {
      const child = childSchemaOf(s, key);
      if (child && !child.nullable && child.default === undefined) delete value[key];
    } else if (typeof v === "object") {
      dropNulls(v, childSchemaOf(s, key), depth + 1);
    }
  }
}

function nonNullableNull(v: unknown, s: Schema | undefined): boolean {
  return v === null && s !== undefined && !s.nullable;
}

function fill(value: unknown, s: Schema | undefined, depth: number): void {
  if (!s || depth > MAX_OBJECT_DEPTH) return;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      if (nonNullableNull(value[i], s.items) && s.items?.default !== undefined) {
        value[i] = deepClone(s.items.default);
      }
      fill(value[i], s.items, depth + 1);
    }
    return;
  }
  if (!isObject(value)) return;
  const props = s.properties;
  if (props) {
    for (const k in props) {
      const prop = props[k];
      if (prop.default === undefined) continue;
      if (!Object.hasOwn(value, k) || nonNullableNull(value[k], prop)) {
        value[k] = deepClone(prop.default);
      }
    }
  }
  const extra = isObject(s.additionalProperties) ? (s.additionalProperties as Schema) : undefined;
  if (!extra) {
    // Only declared fields can have defaults below them: walk those the value has.
    if (!props) return;
    for (const k in props) {
      if (Object.hasOwn(props, k) && Object.hasOwn(value, k)) fill(value[k], props[k], depth + 1);
    }
    return;
  }
  for (const k of Object.keys(value)) {
    const prop = declaredProperty(s, k);
    if (prop) {
      fill(value[k], prop, depth + 1);
    } else {
      if (nonNullableNull(value[k], extra) && extra.default !== undefined) {
        value[k] = deepClone(extra.default);
      }
      fill(value[k], extra, depth + 1);
    }
  }
}
