/** events.k8s.io/v1 Event. */
import type { KubeObject, StatusCause } from "@setpoint/api";
import { defineSchema, refSchema } from "../definitions.ts";
import type { ResourceDefinition } from "../types.ts";
import { fieldObject, fieldString, int32, object, str } from "./build.ts";
import { immutable, invalid, required } from "./causes.ts";
import { eventsV1View } from "./event-columns.ts";
import {
  clusterEventNamespaceCauses,
  eventDefinition,
  newEventCauses,
  referenceSelectableFields,
} from "./event-definition.ts";
import { kindSchema, microTime, time } from "./meta-schemas.ts";
import { eventSourceSchema, objectReferenceSchema } from "./references.ts";

/** Definition-name prefix of events.k8s.io/v1 types. */
export const EVENTS_V1 = "io.k8s.api.events.v1";

/** Event types the events.k8s.io API accepts. */
export const EVENT_TYPES = ["Normal", "Warning"];

const eventSeriesSchema = defineSchema(
  `${EVENTS_V1}.EventSeries`,
  object(
    {
      count: int32(
        "count is the number of occurrences in this series up to the last heartbeat time.",
      ),
      lastObservedTime: microTime(
        "lastObservedTime is the time when last Event from the series was seen before last heartbeat.",
      ),
    },
    "EventSeries contain information on series of events, i.e. thing that was/is happening continuously for some time. How often to update the EventSeries is up to the event reporters.",
    ["count", "lastObservedTime"],
  ),
);

export const eventsV1EventSchema = kindSchema(
  `${EVENTS_V1}.Event`,
  "Event is a report of an event somewhere in the cluster. It generally denotes some state change in the system. Events have a limited retention time and triggers and messages may evolve with time: do not rely on them for automation.",
  {
    action: str(
      "action is what action was taken/failed regarding to the regarding object. It is machine-readable. This field cannot be empty for new Events and it can have at most 128 characters.",
    ),
    deprecatedCount: int32(
      "deprecatedCount is the deprecated field assuring backward compatibility with core.v1 Event type.",
    ),
    deprecatedFirstTimestamp: time(
      "deprecatedFirstTimestamp is the deprecated field assuring backward compatibility with core.v1 Event type.",
    ),
    deprecatedLastTimestamp: time(
      "deprecatedLastTimestamp is the deprecated field assuring backward compatibility with core.v1 Event type.",
    ),
    deprecatedSource: refSchema(
      eventSourceSchema,
      "deprecatedSource is the deprecated field assuring backward compatibility with core.v1 Event type.",
    ),
    eventTime: microTime(
      "eventTime is the time when this Event was first observed. It is required.",
    ),
    note: str(
      "note is a human-readable description of the status of this operation. Maximal length of the note is 1kB, but libraries should be prepared to handle values up to 64kB.",
    ),
    reason: str(
      "reason is why the action was taken. It is human-readable. This field cannot be empty for new Events and it can have at most 128 characters.",
    ),
    regarding: refSchema(
      objectReferenceSchema,
      "regarding contains the object this Event is about. In most cases it's an Object reporting controller implements, e.g. ReplicaSetController implements ReplicaSets and this event is emitted because it acts on some changes in a ReplicaSet object.",
    ),
    related: refSchema(
      objectReferenceSchema,
      "related is the optional secondary object for more complex actions. E.g. when regarding object triggers a creation or deletion of related object.",
    ),
    reportingController: str(
      "reportingController is the name of the controller that emitted this Event, e.g. `kubernetes.io/kubelet`. This field cannot be empty for new Events.",
    ),
    reportingInstance: str(
      "reportingInstance is the ID of the controller instance, e.g. `kubelet-xyzf`. This field cannot be empty for new Events and it can have at most 128 characters.",
    ),
    series: refSchema(
      eventSeriesSchema,
      "series is data about the Event series this event represents or nil if it's a singleton Event.",
    ),
    type: str(
      "type is the type of this event (Normal, Warning), new types could be added in the future. It is machine-readable. This field cannot be empty for new Events.",
    ),
  },
  ["eventTime"],
);

/** Fields an update may not change (series may: it counts repeats). */
const IMMUTABLE_FIELDS = [
  "regarding",
  "reason",
  "note",
  "deprecatedSource",
  "deprecatedFirstTimestamp",
  "deprecatedLastTimestamp",
  "deprecatedCount",
  "type",
  "eventTime",
  "action",
  "related",
  "reportingController",
  "reportingInstance",
];

/** Kubernetes' strict validation of Events written through events.k8s.io/v1. */
function validateEventsV1(obj: KubeObject, old: KubeObject | undefined): StatusCause[] {
  const causes: StatusCause[] = [
    ...clusterEventNamespaceCauses(obj, "regarding"),
    ...newEventCauses(obj, "reportingController", "note"),
  ];
  if (old) {
    for (const f of IMMUTABLE_FIELDS) causes.push(...immutable(f, obj[f], old[f]));
    return causes;
  }
  const series = fieldObject(obj, "series");
  if (series) {
    if (!(Number(series.count) >= 2)) {
      causes.push(invalid("series.count", "", "should be at least 2"));
    }
    if (!fieldString(series, "lastObservedTime")) causes.push(required("series.lastObservedTime"));
  }
  if (!fieldString(obj, "eventTime")) causes.push(required("eventTime"));
  const type = fieldString(obj, "type");
  if (!EVENT_TYPES.includes(type)) causes.push(invalid("type", "", `has invalid value: ${type}`));
  if (fieldString(obj, "deprecatedFirstTimestamp")) {
    causes.push(invalid("deprecatedFirstTimestamp", "", "needs to be unset"));
  }
  if (fieldString(obj, "deprecatedLastTimestamp")) {
    causes.push(invalid("deprecatedLastTimestamp", "", "needs to be unset"));
  }
  if (Number(obj.deprecatedCount ?? 0) !== 0) {
    causes.push(invalid("deprecatedCount", "", "needs to be unset"));
  }
  const source = fieldObject(obj, "deprecatedSource");
  if (fieldString(source, "component") || fieldString(source, "host")) {
    causes.push(invalid("deprecatedSource", "", "needs to be unset"));
  }
  return causes;
}

export const eventsV1EventDefinition: ResourceDefinition = eventDefinition({
  group: "events.k8s.io",
  protobufMessage: "k8s.io.api.events.v1.Event",
  schema: eventsV1EventSchema,
  view: eventsV1View,
  validate: validateEventsV1,
  selectableFields: {
    ...referenceSelectableFields("regarding"),
    reason: (obj) => fieldString(obj, "reason"),
    reportingController: (obj) => fieldString(obj, "reportingController"),
    type: (obj) => fieldString(obj, "type"),
  },
});
