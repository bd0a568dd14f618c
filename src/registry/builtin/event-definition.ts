/**
 * What core/v1 and events.k8s.io/v1 Events share beyond their table columns
 * (event-columns.ts): the definition's shape (resource "events", short name "ev",
 * one version v1, created on PUT, no status subresource), the validation rules of
 * events that carry eventTime, the namespace rule for an event about an object
 * without a namespace, and the field selectors of the referenced object. Each
 * version names the referenced object and a few fields differently; those names are
 * the parameters here.
 */
import type { KubeObject, Schema, StatusCause } from "@setpoint/api";
import type { ResourceDefinition, Strategy } from "../types.ts";
import { fieldString } from "./build.ts";
import { invalid, qualifiedNameErrors, required } from "./causes.ts";
import { type EventView, eventColumns } from "./event-columns.ts";

/** Longest reportingInstance, action and reason of an Event (Kubernetes' limits). */
export const EVENT_FIELD_LENGTH_LIMIT = 128;
/** Longest message (note) of an Event: 1 kB. */
export const EVENT_NOTE_LENGTH_LIMIT = 1024;

/** Namespaces an event about an object without a namespace may be recorded in. */
const CLUSTER_EVENT_NAMESPACES = ["default", "kube-system"];

/** The fields of an ObjectReference a field selector can name (`<reference>.<field>`). */
const REFERENCE_FIELDS = [
  "kind",
  "namespace",
  "name",
  "uid",
  "apiVersion",
  "resourceVersion",
  "fieldPath",
];

/**
 * The rules for events that carry eventTime, with the field names of the
 * request's version: the reporting controller (`controllerField`) is required
 * and a qualified name; reportingInstance, action and reason are required and
 * bounded; the message (`noteField`) is bounded.
 */
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

/**
 * An event (with eventTime) about an object without a namespace (`reference`'s
 * namespace empty) must be recorded in "default" or "kube-system".
 */
export function clusterEventNamespaceCauses(obj: KubeObject, reference: string): StatusCause[] {
  const referenceNs = fieldString(obj, reference, "namespace");
  if (referenceNs !== "" || CLUSTER_EVENT_NAMESPACES.includes(obj.metadata.namespace ?? "")) {
    return [];
  }
  return [invalid(`${reference}.namespace`, referenceNs, "does not match event.namespace")];
}

/** Field selectors `<reference>.kind`, `<reference>.name`, ... of the referenced object. */
export function referenceSelectableFields(
  reference: string,
): Record<string, (obj: KubeObject) => string> {
  return Object.fromEntries(
    REFERENCE_FIELDS.map((f) => [
      `${reference}.${f}`,
      (obj: KubeObject) => fieldString(obj, reference, f),
    ]),
  );
}

/** What differs between the two Event definitions. */
export interface EventDefinitionParts {
  group: string;
  protobufMessage: string;
  schema: Schema;
  /** How the version reads in core/v1 terms, for the table columns. */
  view: (obj: KubeObject) => EventView;
  validate: NonNullable<Strategy["validate"]>;
  selectableFields: NonNullable<Strategy["selectableFields"]>;
}

/** The definition of an Event type (served as version v1 of `parts.group`). */
export function eventDefinition(parts: EventDefinitionParts): ResourceDefinition {
  return {
    group: parts.group,
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
    strategicMergePatch: true,
    protobufMessage: parts.protobufMessage,
    versions: [
      {
        name: "v1",
        served: true,
        storage: true,
        schema: parts.schema,
        statusSubresource: false,
        printerColumns: eventColumns(parts.view),
        ageColumn: false,
      },
    ],
    strategy: {
      allowUnconditionalUpdate: true,
      allowCreateOnUpdate: true,
      tracksGeneration: false,
      validate: parts.validate,
      selectableFields: parts.selectableFields,
    },
  };
}
