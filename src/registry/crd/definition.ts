/**
 * apiextensions.k8s.io/v1 CustomResourceDefinition, a built-in type: its schema
 * (with Kubernetes' markers; the recursive JSONSchemaProps is described one level
 * deep, its nested schemas kept as they are), its printer columns, and its
 * strategy: defaulting, what create and update reset, and validation with
 * Kubernetes' field paths and messages.
 *
 * Field paths of schema problems follow Kubernetes: when every version has the
 * same schema (one version included), Kubernetes stores it once and names it
 * `spec.validation.openAPIV3Schema`; the same holds for subresources
 * (`spec.subresources`) and printer columns (`spec.additionalPrinterColumns`).
 * Otherwise each is named under its version, `spec.versions[i]...`.
 */

import type { KubeObject, Schema, StatusCause } from "@setpoint/api";
import {
  deepEqual,
  dns1123SubdomainErrors,
  fieldErrors,
  JsonPathError,
  parseJsonPath,
} from "@setpoint/api";
import { array, bool, int64, object, str } from "../builtin/build.ts";
import { kindSchema, time } from "../builtin/meta-schemas.ts";
import { defineSchema, refSchema } from "../definitions.ts";
import type { ResourceDefinition } from "../types.ts";
import { isObject } from "./paths.ts";
import { structuralSchemaCauses } from "./structural.ts";
import {
  APIEXTENSIONS_GROUP,
  type CrdColumn,
  type CrdNames,
  type CrdSpec,
  type CrdStatus,
  type CrdSubresources,
  type CrdVersion,
  crdSpec,
  crdStatus,
} from "./types.ts";

/** The finalizer that keeps a CRD until all its objects are deleted. */
export const CRD_CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io";
/** Longest deprecation warning of a version. */
export const MAX_DEPRECATION_WARNING_LENGTH = 256;

const V1 = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1";

function preserved(description: string, type?: "object" | "array"): Schema {
  const s: Schema = { description, "x-kubernetes-preserve-unknown-fields": true };
  if (type) s.type = type;
  if (type === "array") s.items = { type: "object", "x-kubernetes-preserve-unknown-fields": true };
  return s;
}

const validationRuleSchema = defineSchema(
  `${V1}.ValidationRule`,
  object(
    {
      fieldPath: str(
        "A relative JSON path (e.g. `.spec.replicas`) naming the field the failure is reported on.",
      ),
      message: str("The message shown when the rule fails; default: `failed rule: {rule}`."),
      messageExpression: str("A CEL expression producing the message shown when the rule fails."),
      optionalOldSelf: bool(
        "Whether the rule also runs on create and uncorrelated updates, with oldSelf an optional.",
      ),
      reason: str(
        "The machine-readable reason of a failure: FieldValueInvalid (default), FieldValueForbidden, FieldValueRequired or FieldValueDuplicate.",
      ),
      rule: str(
        "The CEL expression to evaluate: `self` is the value at this node, `oldSelf` the stored value on update.",
      ),
    },
    "ValidationRule describes a validation rule written in the CEL expression language.",
    ["rule"],
  ),
);

/**
 * JSONSchemaProps, described one level deep: its own fields are typed, and the
 * schemas nested in it (properties, items, allOf...) are kept as they are, so the
 * description stays finite (`kubectl explain` works on it).
 */
export const jsonSchemaPropsSchema: Schema = defineSchema(`${V1}.JSONSchemaProps`, {
  ...object(
    {
      $ref: str("Not supported."),
      $schema: str("Not supported."),
      additionalItems: preserved("Not supported."),
      additionalProperties: preserved(
        "The schema of additional properties (a map's values), or a boolean.",
      ),
      allOf: preserved("Value validations that must all hold.", "array"),
      anyOf: preserved("Value validations of which at least one must hold.", "array"),
      default: preserved(
        "The default of an absent field; must validate against its schema and have no unknown fields.",
      ),
      definitions: preserved("Not supported.", "object"),
      dependencies: preserved("Not supported.", "object"),
      description: str("A description of the field."),
      enum: {
        ...preserved("The allowed values.", "array"),
        items: { "x-kubernetes-preserve-unknown-fields": true },
      },
      example: preserved("An example value."),
      exclusiveMaximum: bool("Whether maximum is exclusive."),
      exclusiveMinimum: bool("Whether minimum is exclusive."),
      externalDocs: preserved("External documentation.", "object"),
      format: str(
        "The format of a string (date, date-time, duration, byte, uuid, email, hostname, ipv4, ipv6, cidr, mac, uri, password...) or number (int32, int64, float, double).",
      ),
      id: str("Not supported."),
      items: preserved("The schema of array items."),
      maxItems: int64("Largest number of items."),
      maxLength: int64("Longest string, in characters."),
      maxProperties: int64("Largest number of properties."),
      maximum: { type: "number", format: "double", description: "Largest value." },
      minItems: int64("Smallest number of items."),
      minLength: int64("Shortest string, in characters."),
      minProperties: int64("Smallest number of properties."),
      minimum: { type: "number", format: "double", description: "Smallest value." },
      multipleOf: {
        type: "number",
        format: "double",
        description: "The value must be a multiple of this.",
      },
      not: preserved("A value validation that must not hold.", "object"),
      nullable: bool("Whether null is a valid value."),
      oneOf: preserved("Value validations of which exactly one must hold.", "array"),
      pattern: str("A regular expression strings must match."),
      patternProperties: preserved("Not supported.", "object"),
      properties: preserved("The schemas of the object's fields, by name.", "object"),
      required: array({ type: "string" }, "Fields that must be present.", { listType: "atomic" }),
      title: str("A title."),
      type: str("The JSON type: object, array, string, integer, number or boolean."),
      uniqueItems: bool("Not supported (quadratic)."),
      "x-kubernetes-embedded-resource": bool(
        "The value is a resource of its own: apiVersion, kind and metadata are allowed and checked.",
      ),
      "x-kubernetes-int-or-string": bool("The value is an integer or a string."),
      "x-kubernetes-list-map-keys": array(
        { type: "string" },
        "The keys identifying items of a `map` list.",
        { listType: "atomic" },
      ),
      "x-kubernetes-list-type": str("How a list merges: atomic, set or map."),
      "x-kubernetes-map-type": str("How a map merges: granular or atomic."),
      "x-kubernetes-preserve-unknown-fields": bool(
        "Fields not in the schema are kept, not pruned.",
      ),
      "x-kubernetes-validations": array(
        refSchema(validationRuleSchema),
        "CEL validation rules of this node.",
        { listType: "map", mapKeys: ["rule"], patchMergeKey: "rule", patchStrategy: "merge" },
      ),
    },
    "JSONSchemaProps is a JSON-Schema following Specification Draft 4 (http://json-schema.org/).",
  ),
});

const namesSchema = defineSchema(
  `${V1}.CustomResourceDefinitionNames`,
  object(
    {
      categories: array(
        { type: "string" },
        "Groups of resources this one belongs to (e.g. `all`).",
        {
          listType: "atomic",
        },
      ),
      kind: str("The serialized kind, CamelCase (e.g. WebApp)."),
      listKind: str("The kind of lists; defaults to `<kind>List`."),
      plural: str("The plural name used in URLs (e.g. webapps); must be lowercase."),
      shortNames: array({ type: "string" }, "Short names for `kubectl get` (e.g. wa).", {
        listType: "atomic",
      }),
      singular: str("The singular name; defaults to the lowercased kind."),
    },
    "CustomResourceDefinitionNames indicates the names to serve this CustomResourceDefinition",
    ["plural", "kind"],
  ),
);

const columnSchema = defineSchema(
  `${V1}.CustomResourceColumnDefinition`,
  object(
    {
      description: str("A human readable description of this column."),
      format: str("An optional OpenAPI format of the column (e.g. name, date)."),
      jsonPath: str("A simple JSONPath evaluated against each object for the column's value."),
      name: str("The column's header."),
      priority: {
        type: "integer",
        format: "int32",
        description: "0 shows by default; more only with -o wide.",
      },
      type: str("The OpenAPI type of the column: integer, number, string, boolean or date."),
    },
    "CustomResourceColumnDefinition specifies a column for server side printing.",
    ["name", "type", "jsonPath"],
  ),
);

const versionSchema = defineSchema(
  `${V1}.CustomResourceDefinitionVersion`,
  object(
    {
      additionalPrinterColumns: array(refSchema(columnSchema), "Columns of Table output.", {
        listType: "atomic",
      }),
      deprecated: bool("Whether this version is deprecated (a warning is sent on use)."),
      deprecationWarning: str("The warning sent on use of a deprecated version."),
      name: str("The version name, e.g. v1, v2beta1."),
      schema: object(
        {
          openAPIV3Schema: refSchema(
            jsonSchemaPropsSchema,
            "The structural schema of the version.",
          ),
        },
        "The schema used for validation, pruning and defaulting of this version.",
      ),
      selectableFields: array(
        object({ jsonPath: str("A JSONPath to a string, integer or boolean field.") }),
        "Fields usable in field selectors.",
        { listType: "atomic" },
      ),
      served: bool("Whether this version is served."),
      storage: bool("Whether objects are stored in this version; exactly one version is."),
      subresources: object(
        {
          scale: object(
            {
              labelSelectorPath: str(
                "The JSONPath of the label selector (under .spec or .status).",
              ),
              specReplicasPath: str("The JSONPath of the desired replicas (under .spec)."),
              statusReplicasPath: str("The JSONPath of the observed replicas (under .status)."),
            },
            "The scale subresource.",
          ),
          status: {
            type: "object",
            description: "The status subresource.",
            "x-kubernetes-preserve-unknown-fields": true,
          },
        },
        "The subresources of this version.",
      ),
    },
    "CustomResourceDefinitionVersion describes a version for CRD.",
    ["name", "served", "storage"],
  ),
);

const conditionSchema = defineSchema(
  `${V1}.CustomResourceDefinitionCondition`,
  object(
    {
      lastTransitionTime: time("Last time the condition transitioned from one status to another."),
      message: str("A human-readable message with details about the transition."),
      observedGeneration: int64("The generation the condition was set for."),
      reason: str("A unique, one-word, CamelCase reason for the condition's last transition."),
      status: str("True, False or Unknown."),
      type: str(
        "Established, NamesAccepted, NonStructuralSchema, Terminating or KubernetesAPIApprovalPolicyConformant.",
      ),
    },
    "CustomResourceDefinitionCondition contains details for the current condition of this pod.",
    ["type", "status"],
  ),
);

const specSchema = defineSchema(
  `${V1}.CustomResourceDefinitionSpec`,
  object(
    {
      conversion: object(
        {
          strategy: str("None (only apiVersion changes) or Webhook."),
          webhook: preserved("The conversion webhook (not supported here).", "object"),
        },
        "How objects are converted between versions.",
      ),
      group: str("The API group of the resources (e.g. example.com); must contain a dot."),
      names: refSchema(namesSchema, "The resource and kind names of the custom resource."),
      preserveUnknownFields: bool("Deprecated; must be false."),
      scope: str("Cluster or Namespaced."),
      versions: array(
        refSchema(versionSchema),
        "The versions of the resource; exactly one is the storage version.",
        {
          listType: "atomic",
        },
      ),
    },
    "CustomResourceDefinitionSpec describes how a user wants their resource to appear",
    ["group", "names", "scope", "versions"],
  ),
);

const statusSchema = defineSchema(
  `${V1}.CustomResourceDefinitionStatus`,
  object(
    {
      acceptedNames: refSchema(namesSchema, "The names actually being served."),
      conditions: array(refSchema(conditionSchema), "The latest observations of the CRD's state.", {
        listType: "map",
        mapKeys: ["type"],
      }),
      observedGeneration: int64("The generation the status was computed for."),
      storedVersions: array({ type: "string" }, "Versions objects were ever stored in.", {
        listType: "atomic",
      }),
    },
    "CustomResourceDefinitionStatus indicates the state of the CustomResourceDefinition",
  ),
);

export const customResourceDefinitionSchema = kindSchema(
  `${V1}.CustomResourceDefinition`,
  "CustomResourceDefinition represents a resource that should be exposed on the API server. Its name MUST be in the format <.spec.name>.<.spec.group>.",
  {
    spec: refSchema(specSchema, "spec describes how the user wants the resources to appear"),
    status: refSchema(
      statusSchema,
      "status indicates the actual state of the CustomResourceDefinition",
    ),
  },
  ["spec"],
);

// ---------------------------------------------------------------------------
// Strategy.

function ensureObject(parent: Record<string, unknown>, key: string): Record<string, unknown> {
  const v = parent[key];
  if (isObject(v)) return v;
  const fresh: Record<string, unknown> = {};
  parent[key] = fresh;
  return fresh;
}

/** Kubernetes' defaults of a CRD. */
function defaultCrd(obj: KubeObject): void {
  const spec = ensureObject(obj, "spec");
  if (spec.scope === undefined || spec.scope === "") spec.scope = "Namespaced";
  const conversion = ensureObject(spec, "conversion");
  if (!conversion.strategy) conversion.strategy = "None";
  const names = ensureObject(spec, "names");
  if (typeof names.kind === "string" && names.kind !== "") {
    if (!names.singular) names.singular = names.kind.toLowerCase();
    if (!names.listKind) names.listKind = `${names.kind}List`;
  }
  const status = obj.status;
  if (isObject(status) && isObject(status.acceptedNames)) {
    const an = status.acceptedNames;
    if (typeof an.kind === "string" && an.kind !== "") {
      if (!an.singular) an.singular = an.kind.toLowerCase();
      if (!an.listKind) an.listKind = `${an.kind}List`;
    }
  }
  if (Array.isArray(spec.versions)) {
    for (const v of spec.versions) {
      if (!isObject(v)) continue;
      if (v.served === undefined) v.served = false;
      if (v.storage === undefined) v.storage = false;
    }
  }
}

function storageVersionName(spec: CrdSpec): string | undefined {
  return (spec.versions ?? []).find((v) => v.storage === true)?.name;
}

/** Create resets status (storedVersions: the storage version) and adds the cleanup finalizer. */
function prepareForCreate(obj: KubeObject): void {
  const storage = storageVersionName(crdSpec(obj));
  obj.status = { storedVersions: storage ? [storage] : [] };
  const finalizers = obj.metadata.finalizers ?? [];
  if (!finalizers.includes(CRD_CLEANUP_FINALIZER)) {
    obj.metadata.finalizers = [...finalizers, CRD_CLEANUP_FINALIZER];
  }
}

/** Main-resource updates keep status, recording a new storage version in storedVersions. */
function prepareForUpdate(obj: KubeObject, old: KubeObject): void {
  const status: CrdStatus = structuredClone(crdStatus(old));
  const storage = storageVersionName(crdSpec(obj));
  const stored = status.storedVersions ?? [];
  if (storage && !stored.includes(storage)) status.storedVersions = [...stored, storage];
  obj.status = status as Record<string, unknown>;
}

// ---------------------------------------------------------------------------
// Validation.

const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_MESSAGE =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

function dns1035Errors(v: string): string[] {
  const errs: string[] = [];
  if (v.length > 63) errs.push("must be no more than 63 characters");
  if (!DNS1035_LABEL.test(v)) errs.push(DNS1035_MESSAGE);
  return errs;
}

const COLUMN_TYPES = ["boolean", "date", "integer", "number", "string"];
const COLUMN_FORMATS = [
  "byte",
  "date",
  "date-time",
  "double",
  "float",
  "int32",
  "int64",
  "name",
  "password",
];

function namesCauses(names: CrdNames, path: string): StatusCause[] {
  const out: StatusCause[] = [];
  const label = (field: string, v: string | undefined, lower: boolean) => {
    if (!v) return;
    const errs = dns1035Errors(lower ? v.toLowerCase() : v);
    if (errs.length === 0) return;
    out.push(
      fieldErrors.invalid(
        `${path}.${field}`,
        v,
        lower
          ? `may have mixed case, but should otherwise match: ${errs.join(",")}`
          : errs.join(","),
      ),
    );
  };
  label("plural", names.plural, false);
  label("singular", names.singular, false);
  label("kind", names.kind, true);
  label("listKind", names.listKind, true);
  (names.shortNames ?? []).forEach((s, i) => {
    const errs = dns1035Errors(String(s));
    if (errs.length > 0)
      out.push(fieldErrors.invalid(`${path}.shortNames[${i}]`, s, errs.join(",")));
  });
  if (names.kind && names.kind === names.listKind) {
    out.push(
      fieldErrors.invalid(
        `${path}.listKind`,
        names.listKind,
        "kind and listKind may not be the same",
      ),
    );
  }
  (names.categories ?? []).forEach((c, i) => {
    const errs = dns1035Errors(String(c));
    if (errs.length > 0)
      out.push(fieldErrors.invalid(`${path}.categories[${i}]`, c, errs.join(",")));
  });
  return out;
}

function simpleJsonPathCauses(s: string, path: string): StatusCause[] {
  if (s.length === 0) return [fieldErrors.invalid(path, s, "must not be empty")];
  if (s[0] !== ".")
    return [fieldErrors.invalid(path, s, "must be a simple json path starting with .")];
  return [];
}

function columnCauses(col: CrdColumn, path: string): StatusCause[] {
  const out: StatusCause[] = [];
  if (!col.name) out.push(fieldErrors.required(`${path}.name`, ""));
  const types = `must be one of ${COLUMN_TYPES.join(",")}`;
  if (!col.type) out.push(fieldErrors.required(`${path}.type`, types));
  else if (!COLUMN_TYPES.includes(col.type))
    out.push(fieldErrors.invalid(`${path}.type`, col.type, types));
  if (col.format && !COLUMN_FORMATS.includes(col.format)) {
    out.push(
      fieldErrors.invalid(
        `${path}.format`,
        col.format,
        `must be one of ${COLUMN_FORMATS.join(",")}`,
      ),
    );
  }
  if (!col.jsonPath) {
    out.push(fieldErrors.required(`${path}.JSONPath`, ""));
  } else {
    const simple = simpleJsonPathCauses(col.jsonPath, `${path}.JSONPath`);
    out.push(...simple);
    if (simple.length === 0) {
      try {
        parseJsonPath(col.jsonPath);
      } catch (err) {
        const why = err instanceof JsonPathError ? err.message : String(err);
        out.push(
          fieldErrors.invalid(`${path}.JSONPath`, col.jsonPath, `must be a valid JSONPath: ${why}`),
        );
      }
    }
  }
  return out;
}

function subresourceCauses(sub: CrdSubresources | undefined, path: string): StatusCause[] {
  const out: StatusCause[] = [];
  const scale = sub?.scale;
  if (!scale) return out;
  const check = (
    field: string,
    value: string | undefined,
    prefixes: string[],
    what: string,
    required: boolean,
  ) => {
    const p = `${path}.scale.${field}`;
    if (!value) {
      if (required) out.push(fieldErrors.required(p, ""));
      return;
    }
    const errs = simpleJsonPathCauses(value, p);
    if (errs.length > 0) out.push(...errs);
    else if (!prefixes.some((x) => value.startsWith(x)))
      out.push(fieldErrors.invalid(p, value, what));
  };
  check(
    "specReplicasPath",
    scale.specReplicasPath,
    [".spec."],
    "should be a json path under .spec",
    true,
  );
  check(
    "statusReplicasPath",
    scale.statusReplicasPath,
    [".status."],
    "should be a json path under .status",
    true,
  );
  check(
    "labelSelectorPath",
    scale.labelSelectorPath,
    [".spec.", ".status."],
    "should be a json path under either .spec or .status",
    false,
  );
  return out;
}

function allSame<T>(versions: CrdVersion[], get: (v: CrdVersion) => T): boolean {
  if (versions.length === 0) return false;
  const first = get(versions[0]);
  return versions.every((v) => deepEqual(get(v) ?? null, first ?? null));
}

function deprecationCauses(v: CrdVersion, path: string): StatusCause[] {
  const w = v.deprecationWarning;
  if (w === undefined) return [];
  const p = `${path}.deprecationWarning`;
  if (!v.deprecated) return [fieldErrors.invalid(p, w, "can only be set for deprecated versions")];
  const out: StatusCause[] = [];
  if (w.length > MAX_DEPRECATION_WARNING_LENGTH) {
    out.push(
      fieldErrors.invalid(p, w, `must be <= ${MAX_DEPRECATION_WARNING_LENGTH} characters long`),
    );
  }
  if (w.length === 0) out.push(fieldErrors.invalid(p, w, "must not be an empty string"));
  const bad = /[\u0000-\u001f\u007f]/.exec(w);
  if (bad) {
    out.push(
      fieldErrors.invalid(
        p,
        w,
        `must only contain printable UTF-8 characters; control character found at index ${bad.index}`,
      ),
    );
  }
  return out;
}

/** Every problem with a CRD's spec, with Kubernetes' paths and messages. */
export function specCauses(spec: CrdSpec): StatusCause[] {
  const out: StatusCause[] = [];
  const group = spec.group ?? "";
  if (group === "") out.push(fieldErrors.required("spec.group", ""));
  else {
    const errs = dns1123SubdomainErrors(group);
    if (errs.length > 0) out.push(fieldErrors.invalid("spec.group", group, errs.join(",")));
    else if (group.split(".").length < 2) {
      out.push(
        fieldErrors.invalid("spec.group", group, "should be a domain with at least one dot"),
      );
    }
  }
  const scope = spec.scope ?? "";
  if (scope === "") out.push(fieldErrors.required("spec.scope", ""));
  else if (scope !== "Cluster" && scope !== "Namespaced") {
    out.push(fieldErrors.notSupported("spec.scope", scope, ["Cluster", "Namespaced"]));
  }
  const versions = Array.isArray(spec.versions) ? spec.versions : [];
  const sharedSchema = allSame(versions, (v) => v.schema);
  const sharedSub =
    allSame(versions, (v) => v.subresources) && versions[0]?.subresources !== undefined;
  const sharedCols =
    allSame(versions, (v) => v.additionalPrinterColumns) &&
    (versions[0]?.additionalPrinterColumns?.length ?? 0) > 0;
  const names = new Set<string>();
  let unique = true;
  let storage = 0;
  versions.forEach((v, i) => {
    const vp = `spec.versions[${i}]`;
    if (v.storage === true) storage++;
    const name = v.name ?? "";
    if (names.has(name)) unique = false;
    names.add(name);
    const errs = dns1035Errors(name);
    if (errs.length > 0) out.push(fieldErrors.invalid(`${vp}.name`, name, errs.join(",")));
    out.push(...deprecationCauses(v, vp));
    if (!v.schema?.openAPIV3Schema)
      out.push(fieldErrors.required(`${vp}.schema.openAPIV3Schema`, ""));
    const statusOn = isObject(v.subresources?.status);
    if (v.schema?.openAPIV3Schema && (!sharedSchema || i === 0)) {
      const base = sharedSchema
        ? "spec.validation.openAPIV3Schema"
        : `${vp}.schema.openAPIV3Schema`;
      out.push(...structuralSchemaCauses(v.schema.openAPIV3Schema, base, statusOn));
    }
    if (!sharedSub || i === 0) {
      out.push(
        ...subresourceCauses(
          v.subresources,
          sharedSub ? "spec.subresources" : `${vp}.subresources`,
        ),
      );
    }
    if (!sharedCols || i === 0) {
      (v.additionalPrinterColumns ?? []).forEach((c, j) => {
        const cp = sharedCols
          ? `spec.additionalPrinterColumns[${j}]`
          : `${vp}.additionalPrinterColumns[${j}]`;
        out.push(...columnCauses(c, cp));
      });
    }
  });
  if (!unique)
    out.push(fieldErrors.invalid("spec.versions", versions, "must contain unique version names"));
  if (storage !== 1) {
    out.push(
      fieldErrors.invalid(
        "spec.versions",
        versions,
        "must have exactly one version marked as storage version",
      ),
    );
  }
  const n = spec.names ?? {};
  if (!n.plural) out.push(fieldErrors.required("spec.names.plural", ""));
  if (!n.singular) out.push(fieldErrors.required("spec.names.singular", ""));
  if (!n.kind) out.push(fieldErrors.required("spec.names.kind", ""));
  if (!n.listKind) out.push(fieldErrors.required("spec.names.listKind", ""));
  out.push(...namesCauses(n, "spec.names"));
  const strategy = spec.conversion?.strategy ?? "None";
  if (strategy !== "None" && strategy !== "Webhook") {
    out.push(fieldErrors.notSupported("spec.conversion.strategy", strategy, ["None", "Webhook"]));
  } else if (strategy === "Webhook") {
    out.push(
      fieldErrors.forbidden(
        "spec.conversion.strategy",
        "conversion webhooks are not supported by this server",
      ),
    );
  }
  if (spec.preserveUnknownFields === true) {
    out.push(
      fieldErrors.invalid(
        "spec.preserveUnknownFields",
        true,
        "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
      ),
    );
  }
  return out;
}

function validateCrd(obj: KubeObject, old: KubeObject | undefined): StatusCause[] {
  const spec = crdSpec(obj);
  const out: StatusCause[] = [];
  const name = obj.metadata.name ?? "";
  const required = `${spec.names?.plural ?? ""}.${spec.group ?? ""}`;
  if (!old && name !== "" && name !== required) {
    out.push(
      fieldErrors.invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'),
    );
  }
  out.push(...specCauses(spec));
  const status = crdStatus(obj);
  if (status.acceptedNames) out.push(...namesCauses(status.acceptedNames, "status.acceptedNames"));
  if (old) {
    const oldSpec = crdSpec(old);
    const established = (crdStatus(old).conditions ?? []).some(
      (c) => c.type === "Established" && c.status === "True",
    );
    const immutable = (path: string, a: unknown, b: unknown) => {
      if (!deepEqual(a ?? null, b ?? null))
        out.push(fieldErrors.invalid(path, a ?? "", "field is immutable"));
    };
    if (established) {
      immutable("spec.scope", spec.scope, oldSpec.scope);
      immutable("spec.names.kind", spec.names?.kind, oldSpec.names?.kind);
    }
    immutable("spec.group", spec.group, oldSpec.group);
    immutable("spec.names.plural", spec.names?.plural, oldSpec.names?.plural);
    const stored = status.storedVersions ?? [];
    const versions = new Set((spec.versions ?? []).map((v) => v.name));
    stored.forEach((v, i) => {
      if (!versions.has(v)) {
        out.push(
          fieldErrors.invalid(
            `status.storedVersions[${i}]`,
            v,
            `missing from spec.versions; ${v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in ${v} and removes ${v} from status.storedVersions`,
          ),
        );
      }
    });
  }
  return out;
}

function conditionStatus(obj: KubeObject, type: string): string {
  return (crdStatus(obj).conditions ?? []).find((c) => c.type === type)?.status ?? "";
}

/** apiextensions.k8s.io/v1 CustomResourceDefinition, cluster-scoped, with a status subresource. */
export const customResourceDefinitions: ResourceDefinition = {
  group: APIEXTENSIONS_GROUP,
  names: {
    plural: "customresourcedefinitions",
    singular: "customresourcedefinition",
    kind: "CustomResourceDefinition",
    listKind: "CustomResourceDefinitionList",
    shortNames: ["crd", "crds"],
    categories: ["api-extensions"],
  },
  namespaced: false,
  custom: false,
  strategicMergePatch: true,
  versions: [
    {
      name: "v1",
      served: true,
      storage: true,
      schema: customResourceDefinitionSchema,
      statusSubresource: true,
      ageColumn: false,
      printerColumns: [
        {
          name: "Created At",
          type: "date",
          priority: 0,
          description: "When the CustomResourceDefinition was created.",
          value: (obj) => obj.metadata.creationTimestamp ?? "",
          verbatim: true,
        },
      ],
    },
  ],
  strategy: {
    allowUnconditionalUpdate: true,
    tracksGeneration: true,
    // The server writes a new CRD's status right away (src/apiserver/crd/establishing.ts).
    updatedOnCreate: true,
    default: defaultCrd,
    prepareForCreate,
    prepareForUpdate,
    validate: validateCrd,
    selectableFields: {
      "spec.group": (obj) => crdSpec(obj).group,
      "status.established": (obj) => conditionStatus(obj, "Established"),
    },
  },
};
