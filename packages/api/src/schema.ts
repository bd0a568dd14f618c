/**
 * The schema language of every type: OpenAPI v3 structural schemas with
 * Kubernetes' extensions, as CustomResourceDefinitions write them
 * (apiextensions.k8s.io/v1 JSONSchemaProps). Built-in types are described in the
 * same language, so validation, defaulting, pruning, strategic merge patch,
 * server-side apply and `/openapi/v3` all read one description of each type.
 */
export interface Schema {
  type?: "object" | "array" | "string" | "integer" | "number" | "boolean";
  description?: string;
  format?: string;
  title?: string;
  default?: unknown;
  nullable?: boolean;
  enum?: unknown[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  multipleOf?: number;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  minProperties?: number;
  maxProperties?: number;
  required?: string[];
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema;
  allOf?: Schema[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  not?: Schema;
  /** A reference into `components.schemas` (only in published OpenAPI documents). */
  $ref?: string;

  "x-kubernetes-preserve-unknown-fields"?: boolean;
  "x-kubernetes-embedded-resource"?: boolean;
  "x-kubernetes-int-or-string"?: boolean;
  /** atomic: replaced whole; set: scalar items merged as a set; map: items keyed by list-map-keys. */
  "x-kubernetes-list-type"?: "atomic" | "set" | "map";
  "x-kubernetes-list-map-keys"?: string[];
  /** atomic: replaced whole; granular (default): merged key by key. */
  "x-kubernetes-map-type"?: "atomic" | "granular";
  /** Strategic merge patch: the key that identifies list items (e.g. "name"). */
  "x-kubernetes-patch-merge-key"?: string;
  /** Strategic merge patch: "merge", "replace", "retainKeys", or "merge,retainKeys". */
  "x-kubernetes-patch-strategy"?: string;
  "x-kubernetes-validations"?: ValidationRule[];
  /** Published in OpenAPI documents on top-level kinds. */
  "x-kubernetes-group-version-kind"?: { group: string; version: string; kind: string }[];
}

export interface ValidationRule {
  rule: string;
  message?: string;
  messageExpression?: string;
  reason?:
    | "FieldValueInvalid"
    | "FieldValueForbidden"
    | "FieldValueRequired"
    | "FieldValueDuplicate";
  fieldPath?: string;
  optionalOldSelf?: boolean;
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
