/**
 * The schema language of every type: OpenAPI v3 structural schemas with
 * Kubernetes' extensions, as CustomResourceDefinitions write them
 * (apiextensions.k8s.io/v1 JSONSchemaProps). Built-in types are described in the
 * same language, so validation, defaulting, pruning, strategic merge patch,
 * server-side apply and `/openapi/v3` all read one description of each type.
 */
export interface Schema {
  type?: "object" | "array" | "string" | "integer" | "number" | "boolean" | undefined;
  description?: string | undefined;
  format?: string | undefined;
  title?: string | undefined;
  default?: unknown | undefined;
  nullable?: boolean | undefined;
  enum?: unknown[] | undefined;
  pattern?: string | undefined;
  minLength?: number | undefined;
  maxLength?: number | undefined;
  minimum?: number | undefined;
  maximum?: number | undefined;
  exclusiveMinimum?: boolean | undefined;
  exclusiveMaximum?: boolean | undefined;
  multipleOf?: number | undefined;
  minItems?: number | undefined;
  maxItems?: number | undefined;
  uniqueItems?: boolean | undefined;
  minProperties?: number | undefined;
  maxProperties?: number | undefined;
  required?: string[] | undefined;
  properties?: Record<string, Schema> | undefined;
  additionalProperties?: Schema | boolean | undefined;
  items?: Schema | undefined;
  allOf?: Schema[] | undefined;
  anyOf?: Schema[] | undefined;
  oneOf?: Schema[] | undefined;
  not?: Schema | undefined;
  /** A reference into `components.schemas` (only in published OpenAPI documents). */
  $ref?: string | undefined;

  "x-kubernetes-preserve-unknown-fields"?: boolean | undefined;
  "x-kubernetes-embedded-resource"?: boolean | undefined;
  "x-kubernetes-int-or-string"?: boolean | undefined;
  /** atomic: replaced whole; set: scalar items merged as a set; map: items keyed by list-map-keys. */
  "x-kubernetes-list-type"?: "atomic" | "set" | "map" | undefined;
  "x-kubernetes-list-map-keys"?: string[] | undefined;
  /** atomic: replaced whole; granular (default): merged key by key. */
  "x-kubernetes-map-type"?: "atomic" | "granular" | undefined;
  /** Strategic merge patch: the key that identifies list items (e.g. "name"). */
  "x-kubernetes-patch-merge-key"?: string | undefined;
  /** Strategic merge patch: "merge", "replace", "retainKeys", or "merge,retainKeys". */
  "x-kubernetes-patch-strategy"?: string | undefined;
  "x-kubernetes-validations"?: ValidationRule[] | undefined;
  /** Published in OpenAPI documents on top-level kinds. */
  "x-kubernetes-group-version-kind"?:
    | { group: string; version: string; kind: string }[]
    | undefined;
}

export interface ValidationRule {
  rule: string;
  message?: string | undefined;
  messageExpression?: string | undefined;
  reason?:
    | "FieldValueInvalid"
    | "FieldValueForbidden"
    | "FieldValueRequired"
    | "FieldValueDuplicate"
    | undefined;
  fieldPath?: string | undefined;
  optionalOldSelf?: boolean | undefined;
}

/** The schema of a property of an object schema, or of array items; undefined if unknown. */
export function childSchema(schema: Schema | undefined, key: string | number): Schema | undefined {
  if (!schema) return undefined;
  if (typeof key === "number" || schema.type === "array") return schema.items;
  // Own properties only: a field named "constructor" is not Object.prototype's.
  const props = schema.properties;
  if (props && Object.hasOwn(props, key)) return props[key];
  if (typeof schema.additionalProperties === "object") return schema.additionalProperties;
  return undefined;
}
