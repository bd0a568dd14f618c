/**
 * The options of the client's verbs: what each call may set besides its
 * object (signals, timeouts, selectors, paging, resource versions, field
 * managers, dry runs, patch types, delete propagation), and of raw requests.
 */
import type http from "node:http";
import type { TypeRef } from "./discovery.ts";

/** Options every call takes. */
export interface CallOptions {
  /** Abandons the request when aborted. */
  signal?: AbortSignal | undefined;
}

export interface GetOptions extends CallOptions {
  /** Read at least this fresh ("0": any cached version). */
  resourceVersion?: string | undefined;
  /** Return only `metadata` (as PartialObjectMetadata when the server supports it). */
  metadataOnly?: boolean | undefined;
  /** Read a subresource ("status", "scale") instead of the object. */
  subresource?: string | undefined;
}

export interface ListOptions extends CallOptions {
  /** Only this namespace (all namespaces when unset). */
  namespace?: string | undefined;
  labelSelector?: string | undefined;
  fieldSelector?: string | undefined;
  /** Page size; the answer carries `metadata.continue` when more remain. */
  limit?: number | undefined;
  continue?: string | undefined;
  /** "" or unset: a consistent (quorum) read; "0": any version (served from the watch cache). */
  resourceVersion?: string | undefined;
  resourceVersionMatch?: "NotOlderThan" | "Exact" | undefined;
  /** Return only `metadata` of each item (PartialObjectMetadata when the server supports it). */
  metadataOnly?: boolean | undefined;
}

export interface WatchOptions extends CallOptions {
  namespace?: string | undefined;
  labelSelector?: string | undefined;
  fieldSelector?: string | undefined;
  /** Start after this version (unset: the server's choice, starting with synthetic ADDs). */
  resourceVersion?: string | undefined;
  resourceVersionMatch?: "NotOlderThan" | "Exact" | undefined;
  /** Ask for BOOKMARK events (progress markers carrying only a resourceVersion). */
  allowWatchBookmarks?: boolean | undefined;
  /** The server ends the watch after this long. */
  timeoutSeconds?: number | undefined;
  /** Send the current state as ADDED events first (streaming list). */
  sendInitialEvents?: boolean | undefined;
  metadataOnly?: boolean | undefined;
  /** Fail the stream when no bytes arrive for this long (0: never). */
  idleTimeoutMs?: number | undefined;
  /** Called once the server has accepted the watch (answered 2xx). */
  onOpen?: (() => void) | undefined;
}

export interface WriteOptions extends CallOptions {
  /** Recorded in managedFields as the writer's name. */
  fieldManager?: string | undefined;
  /** Validate and admit, but do not persist. */
  dryRun?: boolean | undefined;
  /** How the server treats unknown or duplicate fields. */
  fieldValidation?: "Strict" | "Warn" | "Ignore" | undefined;
}

export interface CreateOptions extends WriteOptions {
  /**
   * Create through a subresource of an existing object ("binding", "eviction")
   * instead of in the collection; `obj` names that object and its namespace.
   */
  subresource?: string | undefined;
  /** With `subresource`: the kind that has it (a Pod for a Binding). Default: `obj`'s own kind. */
  parentType?: TypeRef | undefined;
}

export interface UpdateOptions extends WriteOptions {
  /** Replace a subresource ("status", "scale", a Namespace's "finalize") instead of the object. */
  subresource?: string | undefined;
  /**
   * With `subresource`: the kind that has the subresource, when `obj` is of
   * another kind (an autoscaling/v1 Scale written to "scale"). `obj` still names
   * the object and its namespace. Default: `obj`'s own kind.
   */
  parentType?: TypeRef | undefined;
}

/** Patch formats: JSON merge patch, JSON patch, strategic merge patch, server-side apply. */
export type PatchType = "merge" | "json" | "strategic" | "apply";

export interface PatchOptions extends WriteOptions {
  type: PatchType;
  /** Server-side apply: take ownership of conflicting fields. */
  force?: boolean | undefined;
  /** Patch a subresource ("status", "scale"). */
  subresource?: string | undefined;
}

export interface ApplyOptions extends CallOptions {
  fieldManager: string;
  force?: boolean | undefined;
  subresource?: string | undefined;
  dryRun?: boolean | undefined;
}

export interface DeleteOptions extends CallOptions {
  propagationPolicy?: "Orphan" | "Background" | "Foreground" | undefined;
  preconditions?: { uid?: string | undefined; resourceVersion?: string | undefined } | undefined;
  gracePeriodSeconds?: number | undefined;
  dryRun?: boolean | undefined;
}

/** Which objects a `deleteCollection` deletes, and how. */
export interface DeleteCollectionOptions extends Omit<DeleteOptions, "preconditions"> {
  /** Only this namespace (for a namespaced kind; unset: all namespaces, where the server allows it). */
  namespace?: string | undefined;
  labelSelector?: string | undefined;
  fieldSelector?: string | undefined;
}

/** HTTP methods a `raw` request may use. */
export type RawMethod = "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE";

export interface RawOptions extends CallOptions {
  /** Added to the path's own query string, if it has one. */
  query?: URLSearchParams | Record<string, string> | undefined;
  /** Sent as JSON (a string is sent as is). */
  body?: unknown | undefined;
  /** Content-Type of the body (default application/json). */
  contentType?: string | undefined;
  /** Accept header (default application/json). */
  accept?: string | undefined;
}

/** The answer to a `raw` request, whatever its status. */
export interface RawResponse {
  /** The HTTP status code. */
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The body as text. */
  text: string;
  /** The body parsed as JSON; undefined when empty or not JSON. */
  json: unknown;
}
