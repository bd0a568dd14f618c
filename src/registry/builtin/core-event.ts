/** core/v1 Event. */
import type { KubeObject, StatusCause } from "@setpoint/api";
import { defineSchema, refSchema } from "../definitions.ts";
import type { ResourceDefinition } from "../types.ts";
import { fieldString, int32, object, str } from "./build.ts";
import { invalid } from "./causes.ts";
import { coreEventView } from "./event-columns.ts";
import {
  clusterEventNamespaceCauses,
  eventDefinition,
  newEventCauses,
  referenceSelectableFields,
} from "./event-definition.ts";
import { kindSchema, microTime, time } from "./meta-schemas.ts";
import { CORE_V1, eventSourceSchema, objectReferenceSchema } from "./references.ts";

const eventSeriesSchema = defineSchema(
  `${CORE_V1}.EventSeries`,
  object(
    {
      count: int32("Number of occurrences in this series up to the last heartbeat time."),
      lastObservedTime: microTime("Time of the last occurrence observed."),
    },
    "EventSeries contain information on series of events, i.e. thing that was/is happening continuously for some time.",
  ),
);

export const coreEventSchema = kindSchema(
  `${CORE_V1}.Event`,
  "Event is a report of an event somewhere in the cluster. Events have a limited retention time and triggers and messages may evolve with time: do not rely on them for automation.",
  {
    action: str("What action was taken/failed regarding to the Regarding object."),
    count: int32("The number of times this event has occurred."),
    eventTime: microTime("Time when this Event was first observed."),
    firstTimestamp: time(
      "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
    ),
    involvedObject: refSchema(objectReferenceSchema, "The object that this event is about."),
    lastTimestamp: time("The time at which the most recent occurrence of this event was recorded."),
    message: str("A human-readable description of the status of this operation."),
    reason: str(
      "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
    ),
    related: refSchema(
      objectReferenceSchema,
      "Optional secondary object for more complex actions.",
    ),
    reportingComponent: str(
      "Name of the controller that emitted this Event, e.g. `kubernetes.io/kubelet`.",
    ),
    reportingInstance: str("ID of the controller instance, e.g. `kubelet-xyzf`."),
    series: refSchema(
      eventSeriesSchema,
      "Data about the Event series this event represents or nil if it's a singleton Event.",
    ),
    source: refSchema(
      eventSourceSchema,
      "The component reporting this event. Should be a short machine understandable string.",
    ),
    type: str("Type of this event (Normal, Warning), new types could be added in the future"),
  },
  ["metadata", "involvedObject"],
);

/**
 * Kubernetes' validation of Events created through core/v1: the involved object's
 * namespace must agree with the event's; events with eventTime set ("new" events)
 * also need reportingComponent, reportingInstance, action and reason.
 */
function validateCoreEvent(obj: KubeObject): StatusCause[] {
  if (fieldString(obj, "eventTime")) {
    return [
      ...clusterEventNamespaceCauses(obj, "involvedObject"),
      ...newEventCauses(obj, "reportingComponent", "message"),
    ];
  }
  const ns = obj.metadata.namespace ?? "";
  const involvedNs = fieldString(obj, "involvedObject", "namespace");
  if (involvedNs === "" ? ns !== "" && ns !== "default" : ns !== involvedNs) {
    return [invalid("involvedObject.namespace", involvedNs, "does not match event.namespace")];
  }
  return [];
}

export const coreEventDefinition: ResourceDefinition = eventDefinition({
  group: "",
  protobufMessage: "k8s.io.api.core.v1.Event",
  schema: coreEventSchema,
  view: coreEventView,
  validate: validateCoreEvent,
  selectableFields: {
    ...referenceSelectableFields("involvedObject"),
    reason: (obj) => fieldString(obj, "reason"),
    reportingComponent: (obj) => fieldString(obj, "reportingComponent"),
    source: (obj) =>
      fieldString(obj, "source", "component") || fieldString(obj, "reportingComponent"),
    type: (obj) => fieldString(obj, "type"),
  },
});
