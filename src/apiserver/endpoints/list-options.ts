/**
 * The query options of list and watch requests, parsed and validated as
 * Kubernetes' ListOptions are: selectors, resourceVersion semantics, paging, and
 * the watch-only options.
 */
import {
  checkFieldSelectorFields,
  errors,
  type FieldSelector,
  fieldErrors,
  isEverything,
  isEverythingFields,
  type LabelSelector,
  parseFieldSelector,
  parseLabelSelector,
  type StatusCause,
  StatusError,
} from "@setpoint/api";
import { selectableFields } from "../../registry/field-selectors.ts";
import type { ResourceDefinition } from "../../registry/types.ts";
import type { Query } from "./request.ts";

export type ResourceVersionMatch = "Exact" | "NotOlderThan";

export interface ListOptions {
  labelSelector: LabelSelector;
  fieldSelector: FieldSelector;
  /** Whether either selector selects less than everything. */
  filtered: boolean;
  /** The raw resourceVersion parameter ("" when absent). */
  resourceVersion: string;
  resourceVersionMatch?: ResourceVersionMatch;
  limit: number;
  continue?: string;
  watch: boolean;
  allowWatchBookmarks: boolean;
  timeoutSeconds?: number;
  sendInitialEvents?: boolean;
}

function gvrString(def: ResourceDefinition, version: string): string {
  return `${def.group ? `${def.group}/` : "/"}${version}, Resource=${def.names.plural}`;
}

function invalidListOptions(causes: StatusCause[]): StatusError {
  return errors.invalid("ListOptions", "", causes, "meta.k8s.io");
}

/** Parses and validates list/watch options for `def`; 400/422 as Kubernetes answers. */
export function parseListOptions(
  q: Query,
  def: ResourceDefinition,
  version: string,
  watchRequested: boolean,
): ListOptions {
  const labelText = q.string("labelSelector") ?? "";
  const fieldText = q.string("fieldSelector") ?? "";
  const labelSelector = parseLabelSelector(labelText);
  const fieldSelector = parseFieldSelector(fieldText);
  try {
    checkFieldSelectorFields(fieldSelector, selectableFields(def));
  } catch (err) {
    if (err instanceof StatusError) {
      throw errors.badRequest(
        `Unable to find ${JSON.stringify(gvrString(def, version))} that match label selector ${JSON.stringify(labelText)}, field selector ${JSON.stringify(fieldText)}: ${err.message}`,
      );
    }
    throw err;
  }
  const watch = watchRequested || q.bool("watch") === true;
  const opts: ListOptions = {
    labelSelector,
    fieldSelector,
    filtered: !isEverything(labelSelector) || !isEverythingFields(fieldSelector),
    resourceVersion: q.string("resourceVersion") ?? "",
    limit: Math.max(0, q.int("limit") ?? 0),
    watch,
    allowWatchBookmarks: q.bool("allowWatchBookmarks") === true,
  };
  const cont = q.string("continue");
  if (cont) opts.continue = cont;
  const timeout = q.int("timeoutSeconds");
  if (timeout !== undefined && timeout > 0) opts.timeoutSeconds = timeout;
  const sie = q.bool("sendInitialEvents");
  if (sie !== undefined) opts.sendInitialEvents = sie;

  const causes: StatusCause[] = [];
  const match = q.string("resourceVersionMatch") ?? "";
  if (match === "Exact" || match === "NotOlderThan") opts.resourceVersionMatch = match;
  if (watch) {
    if (opts.sendInitialEvents !== undefined) {
      if (match !== "NotOlderThan") {
        causes.push(
          fieldErrors.forbidden(
            "resourceVersionMatch",
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
          ),
        );
      }
      if (opts.sendInitialEvents && !opts.allowWatchBookmarks) {
        causes.push(
          fieldErrors.forbidden(
            "allowWatchBookmarks",
            "sendInitialEvents requires setting allowWatchBookmarks to true",
          ),
        );
      }
    }
    if (match !== "") {
      if (opts.sendInitialEvents === undefined) {
        causes.push(
          fieldErrors.forbidden(
            "resourceVersionMatch",
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
          ),
        );
      }
      if (match !== "NotOlderThan") {
        causes.push(fieldErrors.notSupported("resourceVersionMatch", match, ["NotOlderThan"]));
      }
      if (opts.continue) {
        causes.push(
          fieldErrors.forbidden(
            "resourceVersionMatch",
            "resourceVersionMatch is forbidden when continue is provided",
          ),
        );
      }
    }
  } else {
    if (match !== "") {
      if (opts.resourceVersion === "") {
        causes.push(
          fieldErrors.forbidden(
            "resourceVersionMatch",
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
          ),
        );
      }
      if (opts.continue) {
        causes.push(
          fieldErrors.forbidden(
            "resourceVersionMatch",
            "resourceVersionMatch is forbidden when continue is provided",
          ),
        );
      }
      if (match === "Exact" && opts.resourceVersion === "0") {
        causes.push(
          fieldErrors.forbidden(
            "resourceVersionMatch",
            'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
          ),
        );
      }
      if (match !== "Exact" && match !== "NotOlderThan") {
        causes.push(
          fieldErrors.notSupported("resourceVersionMatch", match, ["Exact", "NotOlderThan"]),
        );
      }
    }
    if (opts.sendInitialEvents !== undefined) {
      causes.push(
        fieldErrors.forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"),
      );
    }
  }
  if (causes.length > 0) throw invalidListOptions(causes);
  if (opts.continue && opts.resourceVersion !== "" && opts.resourceVersion !== "0") {
    throw errors.badRequest("specifying resource version is not allowed when using continue");
  }
  return opts;
}
