/**
 * Definitions every OpenAPI v3 group-version document refers to besides the kinds
 * themselves: meta/v1 Status, DeleteOptions, WatchEvent, Patch, APIResourceList,
 * and autoscaling/v1 Scale for scale subresources.
 */
import type { Schema } from "@setpoint/api";
import { array, bool, int32, int64, object, str } from "../../registry/builtin/build.ts";
import {
  API_VERSION_DESCRIPTION,
  KIND_DESCRIPTION,
  listMetaSchema,
  META_V1,
  objectMetaProperty,
} from "../../registry/builtin/meta-schemas.ts";
import { defineSchema, refSchema } from "../../registry/definitions.ts";

const statusCauseSchema = defineSchema(
  `${META_V1}.StatusCause`,
  object(
    {
      field: str(
        'The field of the resource that has caused this error, as named by its JSON serialization, e.g. "name" or "items[0].name".',
      ),
      message: str("A human-readable description of the cause of the error."),
      reason: str("A machine-readable description of the cause of the error."),
    },
    "StatusCause provides more information about an api.Status failure, including cases when multiple errors are encountered.",
  ),
);

const statusDetailsSchema = defineSchema(
  `${META_V1}.StatusDetails`,
  object(
    {
      causes: array(
        refSchema(statusCauseSchema),
        "The Causes array includes more details associated with the StatusReason failure.",
        { listType: "atomic" },
      ),
      group: str("The group attribute of the resource associated with the status StatusReason."),
      kind: str("The kind attribute of the resource associated with the status StatusReason."),
      name: str("The name attribute of the resource associated with the status StatusReason."),
      retryAfterSeconds: int32(
        "If specified, the time in seconds before the operation should be retried.",
      ),
      uid: str("UID of the resource."),
    },
    "StatusDetails is a set of additional properties that MAY be set by the server to provide additional information about a response.",
  ),
);

export const statusSchema: Schema = defineSchema(
  `${META_V1}.Status`,
  object(
    {
      apiVersion: str(API_VERSION_DESCRIPTION),
      code: int32("Suggested HTTP return code for this status, 0 if not set."),
      details: refSchema(
        statusDetailsSchema,
        "Extended data associated with the reason. Each reason may define its own extended details.",
      ),
      kind: str(KIND_DESCRIPTION),
      message: str("A human-readable description of the status of this operation."),
      metadata: refSchema(listMetaSchema, "Standard list metadata."),
      reason: str("A machine-readable description of why this operation is in the Failure status."),
      status: str('Status of the operation. One of: "Success" or "Failure".'),
    },
    "Status is a return value for calls that don't return other objects.",
  ),
);

const preconditionsSchema = defineSchema(
  `${META_V1}.Preconditions`,
  object(
    {
      resourceVersion: str("Specifies the target ResourceVersion"),
      uid: str("Specifies the target UID."),
    },
    "Preconditions must be fulfilled before an operation (update, delete, etc.) is carried out.",
  ),
);

export const deleteOptionsSchema: Schema = defineSchema(
  `${META_V1}.DeleteOptions`,
  object(
    {
      apiVersion: str(API_VERSION_DESCRIPTION),
      dryRun: array(
        { type: "string" },
        "When present, indicates that modifications should not be persisted. Valid values: All.",
        { listType: "atomic" },
      ),
      gracePeriodSeconds: int64(
        "The duration in seconds before the object should be deleted. Zero means delete immediately.",
      ),
      ignoreStoreReadErrorWithClusterBreakingPotential: bool(
        "If set to true, an object whose stored data cannot be read (decryption or decoding failure) is deleted anyway, without the usual checks: dangerous, and only for such corrupt objects.",
      ),
      kind: str(KIND_DESCRIPTION),
      orphanDependents: bool(
        "Deprecated: use propagationPolicy. Should the dependent objects be orphaned.",
      ),
      preconditions: refSchema(
        preconditionsSchema,
        "Must be fulfilled before a deletion is carried out. If not possible, a 409 Conflict status will be returned.",
      ),
      propagationPolicy: str(
        "Whether and how garbage collection will be performed: 'Orphan', 'Background' or 'Foreground'.",
      ),
    },
    "DeleteOptions may be provided when deleting an API object.",
  ),
);

const rawExtensionSchema = defineSchema("io.k8s.apimachinery.pkg.runtime.RawExtension", {
  type: "object",
  description: "RawExtension holds an embedded object.",
});

export const watchEventSchema: Schema = defineSchema(
  `${META_V1}.WatchEvent`,
  object(
    {
      object: refSchema(
        rawExtensionSchema,
        "Object is: the object from the event (ADDED, MODIFIED), the last state of a deleted object (DELETED), a Status (ERROR), or an object carrying only a resourceVersion (BOOKMARK).",
      ),
      type: str("ADDED, MODIFIED, DELETED, BOOKMARK or ERROR."),
    },
    "Event represents a single event to a watched resource.",
    ["type", "object"],
  ),
);

export const patchSchema: Schema = defineSchema(`${META_V1}.Patch`, {
  type: "object",
  description:
    "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.",
});

const apiResourceSchema = defineSchema(
  `${META_V1}.APIResource`,
  object(
    {
      categories: array({ type: "string" }, "Groupings of resources, e.g. 'all'.", {
        listType: "atomic",
      }),
      group: str("The preferred group of the resource, if it differs from the containing list's."),
      kind: str("The kind for the resource."),
      name: str("The plural name of the resource."),
      namespaced: bool("Whether the resource is namespaced."),
      shortNames: array({ type: "string" }, "Suggested short names of the resource.", {
        listType: "atomic",
      }),
      singularName: str("The singular name of the resource."),
      storageVersionHash: str("A hash of the storage version: changes when it changes."),
      verbs: array({ type: "string" }, "The supported verbs.", { listType: "atomic" }),
      version: str(
        "The preferred version of the resource, if it differs from the containing list's.",
      ),
    },
    "APIResource specifies the name of a resource and whether it is namespaced.",
    ["name", "singularName", "namespaced", "kind", "verbs"],
  ),
);

export const apiResourceListSchema: Schema = defineSchema(
  `${META_V1}.APIResourceList`,
  object(
    {
      apiVersion: str(API_VERSION_DESCRIPTION),
      groupVersion: str("groupVersion is the group and version this APIResourceList is for."),
      kind: str(KIND_DESCRIPTION),
      resources: array(
        refSchema(apiResourceSchema),
        "resources contains the name of the resources and if they are namespaced.",
        { listType: "atomic" },
      ),
    },
    "APIResourceList is a list of APIResource: the resources available in a group-version.",
    ["groupVersion", "resources"],
  ),
);

const scaleSpecSchema = defineSchema(
  "io.k8s.api.autoscaling.v1.ScaleSpec",
  object(
    { replicas: int32("replicas is the desired number of instances for the scaled object.") },
    "ScaleSpec describes the attributes of a scale subresource.",
  ),
);

const scaleStatusSchema = defineSchema(
  "io.k8s.api.autoscaling.v1.ScaleStatus",
  object(
    {
      replicas: int32("replicas is the actual number of observed instances of the scaled object."),
      selector: str("selector is the label query over pods that should match the replicas count."),
    },
    "ScaleStatus represents the current status of a scale subresource.",
    ["replicas"],
  ),
);

export const scaleSchema: Schema = defineSchema(
  "io.k8s.api.autoscaling.v1.Scale",
  object(
    {
      apiVersion: str(API_VERSION_DESCRIPTION),
      kind: str(KIND_DESCRIPTION),
      metadata: objectMetaProperty(),
      spec: refSchema(scaleSpecSchema, "spec defines the behavior of the scale."),
      status: refSchema(scaleStatusSchema, "status is the current status of the scale. Read-only."),
    },
    "Scale represents a scaling request for a resource.",
  ),
);

/** GVK of autoscaling/v1 Scale. */
export const SCALE_GVK = { group: "autoscaling", version: "v1", kind: "Scale" };
