/**
 * Names and schemas of the OpenAPI v3 documents: Kubernetes' definition names
 * (io.k8s.api.core.v1.ConfigMap; custom resources by reversed group,
 * com.example.v1.Widget), the operation-id and tag spellings, and
 * `components.schemas`, where every named schema is emitted once and referred to
 * with `$ref`, with each kind's list beside it.
 */
import type { Schema } from "@setpoint/api";
import {
  API_VERSION_DESCRIPTION,
  KIND_DESCRIPTION,
  listMetaSchema,
  objectMetaProperty,
} from "../../registry/builtin/meta-schemas.ts";
import { refSchema, schemaDefinition } from "../../registry/definitions.ts";
import { isTyped, type ResourceDefinition, type VersionDefinition } from "../../registry/types.ts";

export type Json = Record<string, unknown>;

/** "example.com" → "com.example". */
function reverseGroup(group: string): string {
  return group.split(".").reverse().join(".");
}

/** The definition name of a kind's schema (and, with "List", of its list). */
export function definitionName(def: ResourceDefinition, version: VersionDefinition): string {
  const named = schemaDefinition(version.schema);
  if (isTyped(def) && named?.canonical) return named.name;
  const prefix = def.group ? reverseGroup(def.group) : "io.k8s.api.core";
  return `${prefix}.${version.name}.${def.names.kind}`;
}

export function capitalize(s: string): string {
  return s ? s[0].toUpperCase() + s.slice(1) : s;
}

/** The group as operation ids spell it: "" → Core, coordination.k8s.io → Coordination. */
export function groupWord(group: string): string {
  if (group === "") return "Core";
  const g = group.endsWith(".k8s.io") ? group.slice(0, -".k8s.io".length) : group;
  return g
    .split(/[.-]/)
    .map((p) => capitalize(p))
    .join("");
}

export function tagOf(group: string, version: string): string {
  const w = groupWord(group);
  return `${w[0].toLowerCase()}${w.slice(1)}_${version}`;
}

export function ref(name: string): Json {
  return { $ref: `#/components/schemas/${name}` };
}

/** Collects definitions while converting inline schemas into $ref form. */
export class Components {
  readonly schemas = new Map<string, Json>();

  /** Emits a named definition (once) and returns its name. */
  define(name: string, target: Schema): string {
    if (!this.schemas.has(name)) {
      this.schemas.set(name, {});
      this.schemas.set(name, this.body(target));
    }
    return name;
  }

  /** A property/items schema: a reference when the schema is (or refers to) a definition. */
  convert(schema: Schema): Json {
    const named = schemaDefinition(schema);
    if (named) {
      this.define(named.name, named.target);
      const out: Json = { allOf: [ref(named.name)] };
      if (!named.canonical && schema.description) out.description = schema.description;
      if (schema.default !== undefined) out.default = schema.default;
      return out;
    }
    return this.body(schema);
  }

  /** The schema's own keywords, with sub-schemas converted. */
  body(schema: Schema): Json {
    const out: Json = {};
    for (const [k, v] of Object.entries(schema)) {
      if (v === undefined) continue;
      switch (k) {
        case "properties": {
          const props: Json = {};
          for (const [name, p] of Object.entries(v as Record<string, Schema>)) {
            props[name] = this.convert(p);
          }
          out.properties = props;
          break;
        }
        case "items":
          out.items = this.convert(v as Schema);
          break;
        case "additionalProperties":
          out.additionalProperties = typeof v === "boolean" ? v : this.convert(v as Schema);
          break;
        case "allOf":
        case "anyOf":
        case "oneOf":
          out[k] = (v as Schema[]).map((s) => this.convert(s));
          break;
        case "not":
          out.not = this.convert(v as Schema);
          break;
        default:
          out[k] = v;
      }
    }
    return out;
  }

  toJSON(): Json {
    const out: Json = {};
    for (const k of [...this.schemas.keys()].sort()) out[k] = this.schemas.get(k);
    return out;
  }
}

/**
 * A custom resource's schema as published: apiVersion, kind and metadata get the
 * standard descriptions and metadata refers to ObjectMeta, as Kubernetes does.
 */
function publishedCustomSchema(schema: Schema): Schema {
  const props = { ...(schema.properties ?? {}) };
  props.apiVersion = { ...(props.apiVersion ?? { type: "string" }) };
  props.apiVersion.description ??= API_VERSION_DESCRIPTION;
  props.kind = { ...(props.kind ?? { type: "string" }) };
  props.kind.description ??= KIND_DESCRIPTION;
  props.metadata = objectMetaProperty();
  return { ...schema, type: schema.type ?? "object", properties: props };
}

export function emitKind(
  c: Components,
  def: ResourceDefinition,
  version: VersionDefinition,
): string {
  const name = definitionName(def, version);
  if (c.schemas.has(name)) return name;
  const source = isTyped(def) ? version.schema : publishedCustomSchema(version.schema);
  c.schemas.set(name, {});
  const body = c.body(source);
  body["x-kubernetes-group-version-kind"] = [
    { group: def.group, kind: def.names.kind, version: version.name },
  ];
  c.schemas.set(name, body);
  const listName = `${name.slice(0, name.length - def.names.kind.length)}${def.names.listKind}`;
  c.schemas.set(listName, {
    description: `${def.names.listKind} is a list of ${def.names.kind}.`,
    type: "object",
    required: ["items"],
    properties: {
      apiVersion: { description: API_VERSION_DESCRIPTION, type: "string" },
      items: {
        description: `List of ${def.names.plural}.`,
        type: "array",
        items: { allOf: [ref(name)], default: {} },
      },
      kind: { description: KIND_DESCRIPTION, type: "string" },
      metadata: c.convert(refSchema(listMetaSchema, "Standard list metadata.")),
    },
    "x-kubernetes-group-version-kind": [
      { group: def.group, kind: def.names.listKind, version: version.name },
    ],
  });
  return name;
}
