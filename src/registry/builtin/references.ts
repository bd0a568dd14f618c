/**
 * core/v1 types shared by several kinds: ObjectReference, LocalObjectReference
 * and EventSource.
 */
import type { Schema } from "@setpoint/api";
import { defineSchema } from "../definitions.ts";
import { object, str } from "./build.ts";

/** Definition-name prefix of core/v1 types. */
export const CORE_V1 = "io.k8s.api.core.v1";

export const objectReferenceSchema: Schema = defineSchema(`${CORE_V1}.ObjectReference`, {
  ...object(
    {
      apiVersion: str("API version of the referent."),
      fieldPath: str(
        'If referring to a piece of an object instead of the whole, a JSON/Go field access statement such as "spec.containers{name}" or "spec.containers[2]".',
      ),
      kind: str("Kind of the referent."),
      name: str("Name of the referent."),
      namespace: str("Namespace of the referent."),
      resourceVersion: str("Specific resourceVersion to which this reference is made, if any."),
      uid: str("UID of the referent."),
    },
    "ObjectReference contains enough information to let you inspect or modify the referred object.",
  ),
  "x-kubernetes-map-type": "atomic",
});

export const localObjectReferenceSchema: Schema = defineSchema(`${CORE_V1}.LocalObjectReference`, {
  ...object(
    {
      name: str(
        "Name of the referent. Effectively required, though an empty value is accepted for backwards compatibility.",
      ),
    },
    "LocalObjectReference contains enough information to let you locate the referenced object inside the same namespace.",
  ),
  "x-kubernetes-map-type": "atomic",
});

export const eventSourceSchema: Schema = defineSchema(
  `${CORE_V1}.EventSource`,
  object(
    {
      component: str("Component from which the event is generated."),
      host: str("Node name on which the event is generated."),
    },
    "EventSource contains information for an event.",
  ),
);
