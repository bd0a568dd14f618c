/** core/v1 Event. */
import type { KubeObject } from "../../api/meta.ts";
import type { StatusCause } from "../../api/status.ts";
import { defineSchema, refSchema } from "../definitions.ts";
import type { ResourceDefinition } from "../types.ts";
import { fieldString, int32, object, str } from "./build.ts";
import { invalid, qualifiedNameErrors, required } from "./causes.ts";
import { coreEventView, eventColumns } from "./event-columns.ts";
import { kindSchema, microTime, time } from "./meta.ts";
import { CORE_V1, eventSourceSchema, objectReferenceSchema } from "./references.ts";

/** Longest reportingInstance, action and reason of an Event (Kubernetes' limits). */
export const EVENT_FIELD_LENGTH_LIMIT = 128;
/** Longest message (note) of an Event: 1 kB. */
export const EVENT_NOTE_LENGTH_LIMIT = 1024;

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
  const causes: StatusCause[] = [];
  const ns = obj.metadata.namespace ?? "";
  const involvedNs = fieldString(obj, "involvedObject", "namespace");
  const eventTime = fieldString(obj, "eventTime");
  if (!eventTime) {
    if (involvedNs === "" ? ns !== "" && ns !== "default" : ns !== involvedNs) {
      causes.push(
        invalid("involvedObject.namespace", involvedNs, "does not match event.namespace"),
      );
    }
  } else {
    if (involvedNs === "" && ns !== "default" && ns !== "kube-system") {
      causes.push(
        invalid("involvedObject.namespace", involvedNs, "does not match event.namespace"),
      );
    }
    causes.push(...newEventCauses(obj, "reportingComponent", "message"));
  }
  return causes;
}

/** The rules for events that carry eventTime, with the field names of the request's version. */
export function newEventCauses(
  obj: KubeObject,
  controllerField: string,
  noteField: string,
): StatusCause[] {
  const causes: StatusCause[] = [];
  const controller = fieldString(obj, controllerField);
  if (!controller) causes.push(required(controllerField));
  for (const msg of qualifiedNameErrors(controller)) {
    causes.push(invalid(controllerField, controller, msg));
  }
  for (const f of ["reportingInstance", "action", "reason"]) {
    const v = fieldString(obj, f);
    if (!v) causes.push(required(f));
    if (v.length > EVENT_FIELD_LENGTH_LIMIT) {
      causes.push(invalid(f, "", `can have at most ${EVENT_FIELD_LENGTH_LIMIT} characters`));
    }
  }
  if (fieldString(obj, noteField).length > EVENT_NOTE_LENGTH_LIMIT) {
    causes.push(invalid(noteField, "", `can have at most ${EVENT_NOTE_LENGTH_LIMIT} characters`));
  }
  return causes;
}

const involved = (f: string) => (obj: KubeObject) => fieldString(obj, "involvedObject", f);

export const coreEventDefinition: ResourceDefinition = {
  group: "",
  names: {
    plural: "events",
    singular: "event",
    kind: "Event",
    listKind: "EventList",
    shortNames: ["ev"],
    categories: [],
  },
  namespaced: true,
  custom: false,
  protobufMessage: "k8s.io.api.core.v1.Event",
  versions: [
    {
      name: "v1",
      served: true,
      storage: true,
      schema: coreEventSchema,
      statusSubresource: false,
      printerColumns: eventColumns(coreEventView),
      ageColumn: false,
    },
  ],
  strategy: {
    allowUnconditionalUpdate: true,
    allowCreateOnUpdate: true,
    tracksGeneration: true,
    validate: validateCoreEvent,
    selectableFields: {
      "involvedObject.kind": involved("kind"),
      "involvedObject.namespace": involved("namespace"),
      "involvedObject.name": involved("name"),
      "involvedObject.uid": involved("uid"),
      "involvedObject.apiVersion": involved("apiVersion"),
      "involvedObject.resourceVersion": involved("resourceVersion"),
      "involvedObject.fieldPath": involved("fieldPath"),
      reason: (obj) => fieldString(obj, "reason"),
      reportingComponent: (obj) => fieldString(obj, "reportingComponent"),
      source: (obj) =>
        fieldString(obj, "source", "component") || fieldString(obj, "reportingComponent"),
      type: (obj) => fieldString(obj, "type"),
    },
  },
};
