/**
 * What every request handler works with: the shared services of the API handler
 * (ApiContext) and the parsed request for one resource (RequestScope), whose
 * resource store does every read and write.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ErrorSubject } from "@setpoint/api";
import type { Logger } from "pino";
import type { Registry } from "../../registry/registry.ts";
import type {
  ResourceDefinition,
  ReviewServices,
  VersionDefinition,
} from "../../registry/types.ts";
import type { Store } from "../../storage/store.ts";
import type { AdmissionChain } from "../admission/index.ts";
import type { ApiAuthorizer } from "../authz/index.ts";
import type { DecodedObjects } from "../store/decoded-objects.ts";
import type { ResourceStore, StoreUser } from "../store/index.ts";
import type { NamespaceLifecycle } from "../store/namespaces.ts";
import type { NoopApplies } from "../store/noop-applies.ts";
import type { OutputBudget } from "../streaming/output-budget.ts";
import type { WatchCacheSet } from "../watchcache/watch-caches.ts";
import type { Renderer } from "../wire/render.ts";
import type { ApiLimits } from "./limits.ts";
import type { Query } from "./request.ts";
import type { WatchTracker } from "./watch-tracker.ts";

/** Who is calling, as authentication established it. */
export type UserInfo = StoreUser;

/** The services shared by every request. */
export interface ApiContext {
  /** Decides what each caller may do (RBAC over the watch caches). */
  authorizer: ApiAuthorizer;
  /** TokenReview's authenticator (absent when authentication is off). */
  reviewToken?: ReviewServices["reviewToken"];
  /** Calls the admission webhooks the stored configurations declare. */
  admission: AdmissionChain;
  store: Store;
  registry: Registry;
  logger?: Logger;
  limits: ApiLimits;
  caches: WatchCacheSet;
  namespaces: NamespaceLifecycle;
  watches: WatchTracker;
  /** Answers of applies that changed nothing, for their repeats. */
  noopApplies: NoopApplies;
  /** Objects recently decoded or written, for the updates that start from them. */
  decoded: DecodedObjects;
  /** Bytes of streamed responses in flight, over all requests (see streaming/). */
  output: OutputBudget;
}

/** One request for a resource, resolved against the registry. */
export interface RequestScope {
  ctx: ApiContext;
  /** The resource store for this request's scope: every read and write goes through it. */
  store: ResourceStore;
  req: IncomingMessage;
  res: ServerResponse;
  user: UserInfo;
  def: ResourceDefinition;
  /** The version the request addressed. */
  version: VersionDefinition;
  /** "v1" or "group/version" of the request. */
  apiVersion: string;
  namespace?: string;
  name?: string;
  subresource?: string;
  query: Query;
  /** Warnings to send with the response. */
  warnings: string[];
  /** What errors are about: the resource, its group and the object's name. */
  subject: ErrorSubject;
  /** The response representation, negotiated before any work is done (406 early). */
  renderer: Renderer;
}
