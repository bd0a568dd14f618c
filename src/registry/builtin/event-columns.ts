/**
 * Table columns shared by core/v1 and events.k8s.io/v1 Events: both print like
 * `kubectl get events` (LAST SEEN, TYPE, REASON, OBJECT, MESSAGE; SUBOBJECT, SOURCE,
 * FIRST SEEN, COUNT and NAME with -o wide).
 */
import type { KubeObject } from "@setpoint/api";
import type { PrinterColumn } from "../types.ts";
import { fieldObject, fieldString } from "./build.ts";

/** An Event read through the core/v1 field names. */
export interface EventView {
  firstTimestamp: string;
  lastTimestamp: string;
  eventTime: string;
  seriesCount?: number;
  seriesLastObserved: string;
  count: number;
  type: string;
  reason: string;
  objectKind: string;
  objectName: string;
  fieldPath: string;
  sourceComponent: string;
  sourceHost: string;
  reportingController: string;
  reportingInstance: string;
  message: string;
}

/** Shown for a time that is not set, as kubectl shows it. */
export const UNKNOWN_TIME = "<unknown>";

function firstSeen(e: EventView): string {
  return e.firstTimestamp || e.eventTime || UNKNOWN_TIME;
}

function lastSeen(e: EventView): string {
  if (e.seriesCount !== undefined) return e.seriesLastObserved || UNKNOWN_TIME;
  return e.lastTimestamp || firstSeen(e);
}

function source(e: EventView): string {
  const component = e.sourceComponent || e.reportingController;
  const instance = e.sourceHost || e.reportingInstance;
  return instance ? `${component}, ${instance}` : component;
}

function target(e: EventView): string {
  const kind = e.objectKind.toLowerCase();
  return e.objectName ? `${kind}/${e.objectName}` : kind;
}

function count(e: EventView): number {
  if (e.seriesCount !== undefined) return e.seriesCount;
  return e.count === 0 ? 1 : e.count;
}

/** Printer columns of an Event kind, given how to read one. Times are "date" columns. */
export function eventColumns(view: (obj: KubeObject) => EventView): PrinterColumn[] {
  return [
    {
      name: "Last Seen",
      type: "date",
      priority: 0,
      description: "The time at which the most recent occurrence of this event was recorded.",
      value: (obj) => lastSeen(view(obj)),
    },
    {
      name: "Type",
      type: "string",
      priority: 0,
      description: "Type of this event (Normal, Warning).",
      value: (obj) => view(obj).type,
    },
    {
      name: "Reason",
      type: "string",
      priority: 0,
      description: "Why the action was taken: a short, machine-understandable string.",
      value: (obj) => view(obj).reason,
    },
    {
      name: "Object",
      type: "string",
      priority: 0,
      description: "The object this event is about.",
      value: (obj) => target(view(obj)),
    },
    {
      name: "Subobject",
      type: "string",
      priority: 1,
      description: "The part of the object the event is about (a field path), if any.",
      value: (obj) => view(obj).fieldPath,
    },
    {
      name: "Source",
      type: "string",
      priority: 1,
      description: "The component (and instance) reporting this event.",
      value: (obj) => source(view(obj)),
    },
    {
      name: "Message",
      type: "string",
      priority: 0,
      description: "A human-readable description of the status of this operation.",
      value: (obj) => view(obj).message.trim(),
    },
    {
      name: "First Seen",
      type: "date",
      priority: 1,
      description: "The time at which the event was first recorded.",
      value: (obj) => firstSeen(view(obj)),
    },
    {
      name: "Count",
      type: "integer",
      priority: 1,
      description: "The number of times this event has occurred.",
      value: (obj) => count(view(obj)),
    },
    {
      name: "Name",
      type: "string",
      format: "name",
      priority: 1,
      description: "Name of the event object.",
      value: (obj) => obj.metadata.name ?? "",
    },
  ];
}

/** The names an Event version gives the fields a view reads. */
interface EventFieldNames {
  firstTimestamp: string;
  lastTimestamp: string;
  count: string;
  /** The ObjectReference to the object the event is about. */
  reference: string;
  /** The EventSource (component, host). */
  source: string;
  reportingController: string;
  message: string;
}

/** How an Event version with these field names reads, in core/v1 terms. */
function eventView(names: EventFieldNames): (obj: KubeObject) => EventView {
  return (obj) => {
    const series = fieldObject(obj, "series");
    return {
      firstTimestamp: fieldString(obj, names.firstTimestamp),
      lastTimestamp: fieldString(obj, names.lastTimestamp),
      eventTime: fieldString(obj, "eventTime"),
      seriesCount: series ? Number(series.count ?? 0) : undefined,
      seriesLastObserved: fieldString(series, "lastObservedTime"),
      count: Number(obj[names.count] ?? 0) || 0,
      type: fieldString(obj, "type"),
      reason: fieldString(obj, "reason"),
      objectKind: fieldString(obj, names.reference, "kind"),
      objectName: fieldString(obj, names.reference, "name"),
      fieldPath: fieldString(obj, names.reference, "fieldPath"),
      sourceComponent: fieldString(obj, names.source, "component"),
      sourceHost: fieldString(obj, names.source, "host"),
      reportingController: fieldString(obj, names.reportingController),
      reportingInstance: fieldString(obj, "reportingInstance"),
      message: fieldString(obj, names.message),
    };
  };
}

/** How a core/v1 Event reads. */
export const coreEventView = eventView({
  firstTimestamp: "firstTimestamp",
  lastTimestamp: "lastTimestamp",
  count: "count",
  reference: "involvedObject",
  source: "source",
  reportingController: "reportingComponent",
  message: "message",
});

/** How an events.k8s.io/v1 Event reads, in core/v1 terms. */
export const eventsV1View = eventView({
  firstTimestamp: "deprecatedFirstTimestamp",
  lastTimestamp: "deprecatedLastTimestamp",
  count: "deprecatedCount",
  reference: "regarding",
  source: "deprecatedSource",
  reportingController: "reportingController",
  message: "note",
});
