/**
 * The workload kinds' schemas, made from the generated field facts
 * (src/registry/builtin/generated/workload-types.json, written by
 * scripts/gen-builtin-schemas.mjs from Kubernetes' Go types): one named
 * definition per struct, fields with their types, list and patch markers and
 * required, and a one-line description of each (descriptions.ts, field-descriptions.ts);
 * meta/v1 types are the shared ones of meta-schemas.ts.
 */
import type { Schema } from "@setpoint/api";
import { defineSchema, refSchema } from "../../definitions.ts";
import artifact from "../generated/workload-types.json" with { type: "json" };
import {
  API_VERSION_DESCRIPTION,
  KIND_DESCRIPTION,
  microTimeSchema,
  objectMetaSchema,
  timeSchema,
} from "../meta-schemas.ts";
import { localObjectReferenceSchema, objectReferenceSchema } from "../references.ts";
import { WORKLOAD_DESCRIPTIONS } from "./descriptions.ts";
import { fieldDescription } from "./field-descriptions.ts";
import { labelSelectorSchema, metaConditionSchema } from "./meta-extra.ts";

/** A field's type in the artifact. */
export interface FieldType {
  kind: string;
  ref?: string;
  name?: string;
  items?: FieldType;
  values?: FieldType;
  enum?: string;
}

/** Protobuf facts of a field: wire kind, field number, whether repeated. */
export interface ProtobufFacts {
  wire: string;
  number: number;
  repeated: boolean;
  name?: string;
}

/** A struct field in the artifact. */
export interface FieldFacts {
  /** JSON name ("" for an inline struct, whose fields are the parent's). */
  name: string;
  type: FieldType;
  inline?: boolean;
  required?: boolean;
  optional?: boolean;
  omitempty?: boolean;
  pointer?: boolean;
  listType?: "atomic" | "set" | "map";
  listMapKeys?: string[];
  mapType?: "atomic" | "granular";
  patchStrategy?: string;
  patchMergeKey?: string;
  protobuf?: ProtobufFacts;
}

/** A struct in the artifact. */
export interface StructFacts {
  fields: FieldFacts[];
  structType?: string;
}

/** The generated facts, by Kubernetes definition name (io.k8s.api.core.v1.PodSpec). */
export const WORKLOAD_TYPES: Readonly<Record<string, StructFacts>> = artifact.definitions as Record<
  string,
  StructFacts
>;

/** The kinds the facts were generated from, as "apps/v1.Deployment". */
export const WORKLOAD_ROOTS: readonly string[] = artifact.roots;

/** Definitions the other built-ins already register. */
const EXISTING: Record<string, Schema> = {
  "io.k8s.api.core.v1.ObjectReference": objectReferenceSchema,
  "io.k8s.api.core.v1.LocalObjectReference": localObjectReferenceSchema,
};

const META: Record<string, Schema> = {
  ObjectMeta: objectMetaSchema,
  LabelSelector: labelSelectorSchema,
  Condition: metaConditionSchema,
};

const quantitySchema = defineSchema("io.k8s.apimachinery.pkg.api.resource.Quantity", {
  "x-kubernetes-int-or-string": true,
  anyOf: [{ type: "integer" }, { type: "string" }],
  description:
    "A quantity: a number with an optional suffix (binary Ki/Mi/Gi or decimal k/M/G, m).",
});

const intOrStringSchema = defineSchema("io.k8s.apimachinery.pkg.util.intstr.IntOrString", {
  "x-kubernetes-int-or-string": true,
  anyOf: [{ type: "integer" }, { type: "string" }],
  description: "An integer or a string.",
});

const rawExtensionSchema = defineSchema("io.k8s.apimachinery.pkg.runtime.RawExtension", {
  type: "object",
  description: "Any object, kept as written.",
  "x-kubernetes-preserve-unknown-fields": true,
});

const built = new Map<string, Schema>();

/** The named schema of a generated struct (built once). */
export function workloadSchema(name: string): Schema {
  const existing = EXISTING[name] ?? built.get(name);
  if (existing) return existing;
  const facts = WORKLOAD_TYPES[name];
  if (!facts) throw new Error(`workload schema ${name} is not generated`);
  const properties: Record<string, Schema> = {};
  const required: string[] = [];
  collectFields(name, facts, properties, required);
  // Kinds embed TypeMeta; templates (PodTemplateSpec, PersistentVolumeClaimTemplate)
  // have metadata without it.
  if (WORKLOAD_ROOTS.includes(name)) {
    properties.apiVersion = { type: "string", description: API_VERSION_DESCRIPTION };
    properties.kind = { type: "string", description: KIND_DESCRIPTION };
  }
  const sorted: Record<string, Schema> = {};
  for (const k of Object.keys(properties).sort()) sorted[k] = properties[k];
  const s: Schema = { type: "object" };
  const description = WORKLOAD_DESCRIPTIONS[name];
  if (description) s.description = description;
  if (required.length) s.required = required.sort();
  s.properties = sorted;
  if (facts.structType === "atomic") s["x-kubernetes-map-type"] = "atomic";
  const schema = defineSchema(name, s);
  built.set(name, schema);
  return schema;
}

function collectFields(
  struct: string,
  facts: StructFacts,
  properties: Record<string, Schema>,
  required: string[],
) {
  for (const f of facts.fields) {
    if (f.inline) {
      if (f.type.kind !== "ref" || !f.type.ref) continue;
      const inner = WORKLOAD_TYPES[f.type.ref];
      if (inner) collectFields(f.type.ref, inner, properties, required);
      continue;
    }
    const s = fieldSchema(f);
    const description = fieldDescription(struct.replace(/^io\.k8s\.api\./, ""), f.name);
    if (description) s.description = description;
    properties[f.name] = s;
    if (f.required) required.push(f.name);
  }
}

function fieldSchema(f: FieldFacts): Schema {
  const s = typeSchema(f.type);
  if (f.listType) s["x-kubernetes-list-type"] = f.listType;
  if (f.listMapKeys) s["x-kubernetes-list-map-keys"] = f.listMapKeys;
  if (f.mapType) s["x-kubernetes-map-type"] = f.mapType;
  if (f.patchMergeKey) s["x-kubernetes-patch-merge-key"] = f.patchMergeKey;
  if (f.patchStrategy) s["x-kubernetes-patch-strategy"] = f.patchStrategy;
  return s;
}

function typeSchema(t: FieldType): Schema {
  switch (t.kind) {
    case "string":
      return { type: "string" };
    case "bool":
      return { type: "boolean" };
    case "int32":
      return { type: "integer", format: "int32" };
    case "int64":
      return { type: "integer", format: "int64" };
    case "double":
      return { type: "number", format: "double" };
    case "float":
      return { type: "number", format: "float" };
    case "bytes":
      return { type: "string", format: "byte" };
    case "array":
      return { type: "array", items: typeSchema(t.items as FieldType) };
    case "map":
      return { type: "object", additionalProperties: typeSchema(t.values as FieldType) };
    case "time":
      return refSchema(timeSchema);
    case "microTime":
      return refSchema(microTimeSchema);
    case "quantity":
      return refSchema(quantitySchema);
    case "intOrString":
      return refSchema(intOrStringSchema);
    case "raw":
      return refSchema(rawExtensionSchema);
    case "meta": {
      // meta/v1 DeleteOptions (in an Eviction) is the apiserver's own definition.
      if (t.name === "DeleteOptions") {
        return { type: "object", "x-kubernetes-preserve-unknown-fields": true };
      }
      const m = META[t.name ?? ""];
      if (!m) throw new Error(`workload schema: meta/v1 ${t.name} has no schema here`);
      return refSchema(m);
    }
    case "ref": {
      const target = workloadSchema(t.ref as string);
      return refSchema(target, WORKLOAD_DESCRIPTIONS[t.ref as string]);
    }
    default:
      throw new Error(`workload schema: unknown field type ${t.kind}`);
  }
}
