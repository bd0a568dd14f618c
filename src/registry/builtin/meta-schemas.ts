/**
 * Schemas shared by every type: meta/v1 ObjectMeta, OwnerReference,
 * ManagedFieldsEntry, ListMeta, Time, MicroTime and FieldsV1, with the list and
 * patch markers Kubernetes publishes for them; and `kindSchema`, which gives a
 * top-level kind its apiVersion, kind and metadata.
 */
import type { Schema } from "@setpoint/api";
import { defineSchema, refSchema } from "../definitions.ts";
import { array, bool, int64, object, str, stringMap } from "./build.ts";

/** Definition-name prefix of apimachinery's meta/v1 types. */
export const META_V1 = "io.k8s.apimachinery.pkg.apis.meta.v1";

export const timeSchema: Schema = defineSchema(`${META_V1}.Time`, {
  type: "string",
  format: "date-time",
  description:
    "Time is a timestamp in RFC 3339 form (UTC, second precision), e.g. 2024-01-02T15:04:05Z.",
});

export const microTimeSchema: Schema = defineSchema(`${META_V1}.MicroTime`, {
  type: "string",
  format: "date-time",
  description:
    "MicroTime is a timestamp in RFC 3339 form with microsecond precision, e.g. 2024-01-02T15:04:05.000000Z.",
});

export const fieldsV1Schema: Schema = defineSchema(`${META_V1}.FieldsV1`, {
  type: "object",
  description:
    'FieldsV1 stores a set of fields in a JSON trie: each key is "." (the field itself), "f:<name>" (a field of a map or struct), "v:<value>" (a list item by value), "k:<keys>" (a list item by its map keys) or "i:<index>" (a list item by position), and each value is the subset of fields below it, or empty.',
  "x-kubernetes-preserve-unknown-fields": true,
});

/** A meta/v1 Time property. */
export function time(description: string): Schema {
  return refSchema(timeSchema, description);
}

/** A meta/v1 MicroTime property. */
export function microTime(description: string): Schema {
  return refSchema(microTimeSchema, description);
}

export const ownerReferenceSchema: Schema = defineSchema(`${META_V1}.OwnerReference`, {
  ...object(
    {
      apiVersion: str("API version of the referent."),
      blockOwnerDeletion: bool(
        'If true, and the owner has the "foregroundDeletion" finalizer, the owner cannot be deleted from storage until this reference is removed. Setting it requires delete permission on the owner. Defaults to false.',
      ),
      controller: bool("If true, this reference points to the managing controller."),
      kind: str("Kind of the referent."),
      name: str("Name of the referent."),
      uid: str("UID of the referent."),
    },
    "OwnerReference identifies an owning object by UID: the owner must be in the same namespace as the dependent, or cluster-scoped.",
    ["apiVersion", "kind", "name", "uid"],
  ),
  "x-kubernetes-map-type": "atomic",
});

export const managedFieldsEntrySchema: Schema = defineSchema(
  `${META_V1}.ManagedFieldsEntry`,
  object(
    {
      apiVersion: str(
        'The version of the resource this field set applies to, in "group/version" form like the top-level apiVersion; field sets are not converted between versions.',
      ),
      fieldsType: str(
        'The format of the fields: the only value is "FieldsV1", described by fieldsV1.',
      ),
      fieldsV1: refSchema(fieldsV1Schema, "The set of fields the manager owns, in FieldsV1 form."),
      manager: str("Identifies the workflow managing these fields."),
      operation: str("The kind of operation that last changed this entry: 'Apply' or 'Update'."),
      subresource: str(
        "The subresource used to update the object, or empty for the main resource. Managers with the same name but different subresources are distinct.",
      ),
      time: time(
        "When the entry was last changed: set when a field is added or changed or the manager removes a field, not when another manager takes a field over.",
      ),
    },
    "ManagedFieldsEntry is one manager's (and one operation's) ownership of a set of fields of an object.",
  ),
);

export const objectMetaSchema: Schema = defineSchema(
  `${META_V1}.ObjectMeta`,
  object(
    {
      annotations: stringMap(
        "Annotations is an unstructured key-value map set by tools to store arbitrary metadata. Not queryable; keep them when modifying objects.",
      ),
      creationTimestamp: time(
        "When the object was created (server time, UTC). Set by the system, read-only. Null for lists.",
      ),
      deletionGracePeriodSeconds: int64(
        "Seconds allowed for the object to terminate gracefully before it is removed. Set only together with deletionTimestamp; may only be shortened. Read-only.",
      ),
      deletionTimestamp: time(
        "When a graceful deletion was requested: the object is removed once its finalizers list is empty. Set by the server on delete, not by clients. Read-only.",
      ),
      finalizers: array(
        { type: "string" },
        "Finalizers must all be removed before the object is deleted from storage. Each names the component that will remove it. Once deletionTimestamp is set, entries can only be removed. They may be processed in any order.",
        { listType: "set", patchStrategy: "merge" },
      ),
      generateName: str(
        "A prefix for the server to generate a unique name from, used only if name is not set. The generated name is the prefix plus a random suffix.",
      ),
      generation: int64(
        "A sequence number of the desired state: incremented by the system on every change to the spec. Read-only.",
      ),
      labels: stringMap(
        "Map of string keys and values used to organize and select objects (label selectors).",
      ),
      managedFields: array(
        refSchema(managedFieldsEntrySchema),
        "ManagedFields records, per manager and operation, the set of fields it manages. Mostly internal: maintained by the server for server-side apply.",
        { listType: "atomic" },
      ),
      name: str(
        "Name is unique within a namespace (or the cluster, for cluster-scoped kinds). Required on create unless generateName is set. Cannot be updated.",
      ),
      namespace: str(
        'Namespace is the space within which the name must be unique. An empty namespace means "default" for namespaced kinds; cluster-scoped objects have none. Must be a DNS label. Cannot be updated.',
      ),
      ownerReferences: array(
        refSchema(ownerReferenceSchema),
        "Objects this object depends on. When all of them are deleted, this object is garbage collected. At most one entry may have controller set to true.",
        { listType: "map", mapKeys: ["uid"], patchMergeKey: "uid", patchStrategy: "merge" },
      ),
      resourceVersion: str(
        "An opaque value identifying the internal version of this object, used for optimistic concurrency, change detection and watch. Clients must pass it back unmodified. Read-only.",
      ),
      selfLink: str(
        "Deprecated: selfLink is a legacy read-only field that is no longer populated by the system.",
      ),
      uid: str(
        "UID is unique in time and space for this object, generated by the server on create. Cannot be changed. Read-only.",
      ),
    },
    "ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.",
  ),
);

export const listMetaSchema: Schema = defineSchema(
  `${META_V1}.ListMeta`,
  object(
    {
      continue: str(
        "Set when a limit was given and more items are available: pass it back to fetch the next page. Its resourceVersion is the first page's.",
      ),
      remainingItemCount: int64(
        "An estimate of the number of items after this page; unset when selectors were used or there are no more items.",
      ),
      resourceVersion: str(
        "The server's internal version of this list, for watch and change detection. Opaque: pass it back unmodified.",
      ),
      selfLink: str(
        "Deprecated: selfLink is a legacy read-only field that is no longer populated by the system.",
      ),
    },
    "ListMeta describes metadata that synthetic resources must have, including lists and various status objects.",
  ),
);

/** Description of every kind's `apiVersion` property. */
export const API_VERSION_DESCRIPTION =
  "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values.";

/** Description of every kind's `kind` property. */
export const KIND_DESCRIPTION =
  "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase.";

/** Description of a kind's `metadata` property. */
export const METADATA_DESCRIPTION = "Standard object's metadata.";

/** The `metadata` property of a kind (ObjectMeta). */
export function objectMetaProperty(description = METADATA_DESCRIPTION): Schema {
  return refSchema(objectMetaSchema, description);
}

/**
 * The schema of a top-level kind, registered under `name`: apiVersion, kind and
 * metadata plus the kind's own properties.
 */
export function kindSchema(
  name: string,
  description: string,
  properties: Record<string, Schema>,
  required?: string[],
): Schema {
  const all: Record<string, Schema> = {
    apiVersion: str(API_VERSION_DESCRIPTION),
    kind: str(KIND_DESCRIPTION),
    metadata: objectMetaProperty(),
    ...properties,
  };
  const sorted: Record<string, Schema> = {};
  for (const k of Object.keys(all).sort()) sorted[k] = all[k];
  return defineSchema(name, object(sorted, description, required));
}
