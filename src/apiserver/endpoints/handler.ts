/**
 * The Kubernetes REST API: every request under /api, /apis and /openapi/v3 —
 * discovery, OpenAPI, and get/list/watch/create/update/patch/delete/deletecollection
 * on every registered type — with Kubernetes' semantics, on top of a Store. The
 * HTTP(S) server, authentication and the public endpoints live in server.ts.
 */

import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { errors, failure, type StatusError } from "@setpoint/api";
import type { Logger } from "pino";
import { policyExpressionAst } from "../../registry/builtin/admission/policy-cel.ts";
import { type AccessAttributes, MASTERS } from "../../registry/builtin/rbac/index.ts";
import type { Registry } from "../../registry/registry.ts";
import type { ReviewServices } from "../../registry/types.ts";
import {
  type CreateSubresource,
  type ResourceDefinition,
  resourceVerbs,
  storageVersion,
} from "../../registry/types.ts";
import type { Store } from "../../storage/store.ts";
import { AdmissionChain, PolicyStatus } from "../admission/index.ts";
import { auditAnnotate, auditImpersonated } from "../audit/event.ts";
import { ApiAuthorizer, forbidden, impersonate } from "../authz/index.ts";
import {
  aggregatedDiscovery,
  aggregatedDiscoveryContentType,
  apiGroup,
  apiGroupList,
  apiResourceList,
  apiVersions,
  negotiateAggregatedDiscovery,
  OPENAPI_V2_JSON,
  OPENAPI_V2_PROTOBUF_CONTENT_TYPE,
  openapiV2Protobuf,
  openapiV3DocumentJson,
  openapiV3Hash,
  openapiV3Index,
} from "../discovery/index.ts";
import { DecodedObjects } from "../store/decoded-objects.ts";
import { type CacheEntry, ResourceStore, SERVER_USER } from "../store/index.ts";
import { NamespaceLifecycle } from "../store/namespaces.ts";
import { NoopApplies } from "../store/noop-applies.ts";
import { OutputBudget, type OutputBudgetStats } from "../streaming/output-budget.ts";
import { ServiceAccountTokens } from "../tokens/index.ts";
import { WatchCacheSet } from "../watchcache/watch-caches.ts";
import { writeError, writeObject, writeRaw } from "../wire/response.ts";
import type { ApiContext, RequestScope, UserInfo } from "./context.ts";
import { createResource } from "./create.ts";
import { deleteCollection, deleteResource } from "./delete.ts";
import { closeAfterDraining } from "./drain.ts";
import { getResource } from "./get.ts";
import { type ApiLimits, resolveLimits } from "./limits.ts";
import { listResource } from "./list.ts";
import { parseListOptions } from "./list-options.ts";
import { isUpgrade, serveNodeConnect } from "./node-connect.ts";
import { type NodeClient, serveNodeStream } from "./node-stream.ts";
import { createUpdatingParent } from "./parent-update.ts";
import { patchResource } from "./patch.ts";
import { Query, type RequestUrl, requestUrl } from "./request.ts";
import { armDeadline, isTimedOut, requestDeadlineMs } from "./request-deadline.ts";
import { negotiateRenderer, statusMediaType } from "./respond.ts";
import { createReview } from "./review.ts";
import { parseRoute, type ResourceRoute, type Route } from "./routes.ts";
import { getScale, patchScale, updateScale } from "./scale.ts";
import { createServiceAccountToken } from "./token-request.ts";
import { updateResource } from "./update.ts";
import { serveWatch } from "./watch.ts";
import { WatchTracker } from "./watch-tracker.ts";

export type { UserInfo } from "./context.ts";
export type { ApiLimits } from "./limits.ts";
export { DEFAULT_API_LIMITS } from "./limits.ts";

export interface ApiHandlerOptions {
  store: Store;
  registry: Registry;
  logger?: Logger;
  /** Bookmark interval, watch cache window, body limit...: named constants with defaults. */
  limits?: Partial<ApiLimits>;
  /**
   * Issues the tokens of `serviceaccounts/<name>/token`; default: tokens signed
   * with a random key, valid until the process ends.
   */
  serviceAccountTokens?: ServiceAccountTokens;
  /** Answers TokenReviews: the server's own token authentication. */
  reviewToken?: ReviewServices["reviewToken"];
  /** The client certificate presented to the nodes' agents (`pods/log`); none: such requests fail. */
  nodeClient?: NodeClient;
  /** ServiceAccount admission (admission/service-account.ts) on Pod creation (default off). */
  serviceAccountAdmission?: boolean;
}

export interface ApiHandler {
  /**
   * Serves /api, /apis, /openapi/v3 (and /openapi/v2) requests; returns false if the
   * path is not one of those (the server then 404s). With `maxDeadlineMs` (a request
   * that is not long-running), the request is answered 504 Timeout if it is not
   * answered within that time or the shorter `?timeout=` it asks for
   * (request-deadline.ts); the promise settles when its work is done in any case.
   */
  handle(
    req: IncomingMessage,
    res: ServerResponse,
    user: UserInfo,
    maxDeadlineMs?: number,
  ): Promise<boolean>;
  /** True once the watch caches are primed. */
  ready(): boolean;
  /** Objects and client watches per type, as the watch caches hold them (for metrics). */
  typeStats(): { resource: string; objects: number; watchers: number }[];
  /**
   * The uid of the ServiceAccount, Pod or Secret `namespace/name` as the watch cache
   * holds it; undefined when there is none, it is being deleted, or the cache is not
   * primed yet (then nobody can tell). No storage read: cheap enough for every request.
   */
  liveUid(
    plural: "serviceaccounts" | "pods" | "secrets",
    namespace: string,
    name: string,
  ): string | undefined;
  /**
   * A resource store for the server's own reads and writes of `def`'s objects
   * (optionally one namespace's, or one object), as the system user.
   */
  systemStore(def: ResourceDefinition, namespace?: string, name?: string): ResourceStore;
  /** The accounting of streamed responses' bytes in flight (lists, watches' initial events). */
  outputStats(): OutputBudgetStats;
  /** Number of open watches. */
  openWatches(): number;
  /** Ends every open watch cleanly and stops the watch caches. */
  close(): Promise<void>;
}

/** Kubernetes' message for a path that names nothing served. */
export const NOT_FOUND_MESSAGE = "the server could not find the requested resource";

function notFound(): StatusError {
  return failure(404, "NotFound", NOT_FOUND_MESSAGE, {});
}

function methodNotAllowed(): StatusError {
  return failure(
    405,
    "MethodNotAllowed",
    "the server does not allow this method on the requested resource",
    {},
  );
}

/** What a create subresource is served by: `scope` addresses the parent object. */
type SubresourceCreator = (scope: RequestScope, sub: CreateSubresource) => Promise<void>;

/** The create subresources the handler implements, by `<group>/<plural>/<name>`. */
type SubresourceCreators = ReadonlyMap<string, SubresourceCreator>;

function creatorKey(group: string, plural: string, name: string): string {
  return `${group}/${plural}/${name}`;
}

/** What authentication needs of a cached ServiceAccount, parsed once per cached state. */
const accountUids = new WeakMap<CacheEntry, string | null>();

function accountUid(entry: CacheEntry): string | undefined {
  let uid = accountUids.get(entry);
  if (uid === undefined) {
    const meta = (JSON.parse(entry.json) as { metadata?: Record<string, unknown> }).metadata;
    uid = typeof meta?.uid === "string" && !meta.deletionTimestamp ? meta.uid : null;
    accountUids.set(entry, uid);
  }
  return uid ?? undefined;
}

/** Creates the handler and starts its watch caches (ready() tells when they are primed). */
export async function createApiHandler(opts: ApiHandlerOptions): Promise<ApiHandler> {
  const limits = resolveLimits(opts.limits);
  const tokens = opts.serviceAccountTokens ?? new ServiceAccountTokens({ key: randomBytes(32) });
  const creators: SubresourceCreators = new Map<string, SubresourceCreator>([
    [
      creatorKey("", "serviceaccounts", "token"),
      (scope, sub) => createServiceAccountToken(scope, sub, tokens),
    ],
  ]);
  const caches = new WatchCacheSet(opts.store, opts.registry, limits, opts.logger);
  const ctx: ApiContext = {
    authorizer: new ApiAuthorizer(opts.registry, caches),
    ...(opts.reviewToken ? { reviewToken: opts.reviewToken } : {}),
    admission: new AdmissionChain(opts.registry, caches, {
      serviceAccount: opts.serviceAccountAdmission === true,
    }),
    store: opts.store,
    registry: opts.registry,
    limits,
    caches,
    namespaces: new NamespaceLifecycle(opts.store, opts.registry, caches),
    watches: new WatchTracker(),
    noopApplies: new NoopApplies(),
    decoded: new DecodedObjects(),
    output: new OutputBudget(limits.streamBudgetBytes),
    ...(opts.logger ? { logger: opts.logger } : {}),
  };
  caches.start();
  let closed = false;
  const systemStore = (def: ResourceDefinition, namespace?: string, name?: string) =>
    new ResourceStore(ctx, {
      definition: def,
      version: storageVersion(def),
      user: SERVER_USER,
      ...(def.namespaced && namespace !== undefined ? { namespace } : {}),
      ...(name !== undefined ? { name } : {}),
    });
  // ValidatingAdmissionPolicies' status (observedGeneration, type checking).
  const policyStatus = new PolicyStatus(
    opts.registry,
    caches,
    async (name, status, generation) => {
      const def = opts.registry.get("admissionregistration.k8s.io", "validatingadmissionpolicies");
      if (!def) return;
      const store = new ResourceStore(ctx, {
        definition: def,
        version: storageVersion(def),
        user: SERVER_USER,
        name,
        subresource: "status",
      });
      await store.update(
        {
          dryRun: false,
          manager: "validatingadmissionpolicy-status-controller",
          allowCreate: false,
        },
        (current) => {
          if (!current) throw errors.notFound({ resource: "validatingadmissionpolicies", name });
          if ((current.metadata.generation ?? 1) !== generation)
            throw errors.conflict(
              { resource: "validatingadmissionpolicies", name },
              "generation moved",
            );
          return { ...current, status } as typeof current;
        },
      );
    },
    policyExpressionAst,
  );
  policyStatus.start();
  return {
    async handle(req, res, user, maxDeadlineMs) {
      const url = requestUrl(req.url ?? "/");
      if (url === null) return false;
      const route = parseRoute(url.pathname);
      if (!route) return false;
      const warnings: string[] = [];
      let disarm: (() => void) | undefined;
      try {
        if (maxDeadlineMs !== undefined) {
          disarm = armDeadline(req, res, requestDeadlineMs(url.searchParams, maxDeadlineMs));
        }
        if (closed) throw errors.unavailable("the server is shutting down");
        const as = await impersonate(req, user, ctx.authorizer);
        if (as !== user) auditImpersonated(req, as);
        await dispatch(ctx, creators, route, req, res, as, url, warnings, opts.nodeClient);
      } catch (err) {
        if (isTimedOut(res)) {
          // Answered at its deadline: what the work says afterwards reaches nobody.
          ctx.logger?.warn(
            { err, method: req.method, url: req.url },
            "request failed after it was answered at its deadline",
          );
        } else {
          respondError(ctx, req, res, err, warnings);
        }
      } finally {
        disarm?.();
      }
      return true;
    },
    ready() {
      return caches.ready();
    },
    typeStats() {
      return caches.stats().map((t) => ({
        resource: t.group ? `${t.resource}.${t.group}` : t.resource,
        objects: t.objects,
        watchers: t.watchers,
      }));
    },
    systemStore,
    liveUid(plural, namespace, name) {
      const def = ctx.registry.get("", plural);
      if (!def || closed) return undefined;
      const entry = systemStore(def, namespace, name).cached();
      return entry ? accountUid(entry) : undefined;
    },
    outputStats() {
      return ctx.output.stats;
    },
    openWatches() {
      return ctx.watches.size;
    },
    async close() {
      closed = true;
      policyStatus.stop();
      ctx.watches.closeAll();
      await caches.close();
    },
  };
}

/**
 * The media type of a request's error Status, once its answer's representation is
 * negotiated: protobuf for clients that asked for it, as kube-apiserver answers.
 */
const statusMedia = new WeakMap<IncomingMessage, string>();

function respondError(
  ctx: ApiContext,
  req: IncomingMessage,
  res: ServerResponse,
  err: unknown,
  warnings: string[],
): void {
  let status: StatusError;
  if (err instanceof Error && err.name === "StatusError") {
    status = err as StatusError;
  } else {
    ctx.logger?.error({ err, method: req.method, url: req.url }, "request failed");
    status = errors.internal(err instanceof Error ? err.message : String(err));
  }
  if (res.headersSent) {
    // A streaming response already started: end it.
    if (!res.writableEnded) res.end();
    return;
  }
  if (status.code === 413) {
    // The rest of an oversized body is not read: answer, then close gracefully.
    res.setHeader("Connection", "close");
    closeAfterDraining(req);
  }
  if (!status.status.details) status.status.details = {};
  writeError(res, status, warnings, statusMedia.get(req));
}

async function dispatch(
  ctx: ApiContext,
  creators: SubresourceCreators,
  route: Route,
  req: IncomingMessage,
  res: ServerResponse,
  user: UserInfo,
  url: RequestUrl,
  warnings: string[],
  nodeClient: NodeClient | undefined,
): Promise<void> {
  const method = req.method ?? "GET";
  if (route.kind === "resource") {
    await serveResource(ctx, creators, route, req, res, user, url, warnings, nodeClient);
    return;
  }
  await authorize(ctx, req, user, { verb: method.toLowerCase(), path: url.pathname });
  if (method !== "GET") throw methodNotAllowed();
  const reg = ctx.registry;
  const accept = req.headers.accept;
  switch (route.kind) {
    case "api":
    case "apis": {
      const v = negotiateAggregatedDiscovery(accept);
      if (v) {
        writeObject(res, 200, aggregatedDiscovery(reg, route.kind, v), {
          contentType: aggregatedDiscoveryContentType(v),
        });
      } else {
        writeObject(res, 200, route.kind === "api" ? apiVersions() : apiGroupList(reg));
      }
      return;
    }
    case "apiVersion": {
      const doc = apiResourceList(reg, "", route.version);
      if (!doc) throw notFound();
      writeObject(res, 200, doc);
      return;
    }
    case "group": {
      const doc = apiGroup(reg, route.group);
      if (!doc) throw notFound();
      writeObject(res, 200, doc);
      return;
    }
    case "groupVersion": {
      const doc = apiResourceList(reg, route.group, route.version);
      if (!doc) throw notFound();
      writeObject(res, 200, doc);
      return;
    }
    case "openapiIndex":
      writeObject(res, 200, openapiV3Index(reg));
      return;
    case "openapiV2": {
      // Protobuf for the clients that ask for it (kubectl), JSON otherwise, as
      // kube-apiserver negotiates it.
      if (!/protobuf/i.test(String(req.headers.accept ?? ""))) {
        writeRaw(res, 200, "application/json", OPENAPI_V2_JSON);
        return;
      }
      const doc = openapiV2Protobuf();
      res.statusCode = 200;
      res.setHeader("Content-Type", OPENAPI_V2_PROTOBUF_CONTENT_TYPE);
      res.setHeader("Content-Length", doc.length);
      res.end(doc);
      return;
    }
    case "openapiDocument": {
      const json = openapiV3DocumentJson(reg, route.group, route.version);
      if (json === undefined) throw notFound();
      const hash = openapiV3Hash(reg, route.group, route.version);
      const asked = url.searchParams.get("hash");
      if (asked && asked !== hash) {
        // A stale pinned URL: send the client to the current one.
        const base = route.group ? `apis/${route.group}` : "api";
        res.statusCode = 301;
        res.setHeader("Location", `/openapi/v3/${base}/${route.version}?hash=${hash}`);
        res.setHeader("Cache-Control", "no-cache, private");
        res.end();
        return;
      }
      res.setHeader("ETag", `"${hash}"`);
      if (req.headers["if-none-match"] === `"${hash}"`) {
        res.statusCode = 304;
        res.end();
        return;
      }
      if (asked) res.setHeader("Cache-Control", "public, immutable, max-age=31536000");
      writeRaw(res, 200, "application/json", json);
      return;
    }
    default:
      throw notFound();
  }
}

/** The audit annotations of an authorization decision, as kube-apiserver names them. */
const DECISION = "authorization.k8s.io/decision";
const REASON = "authorization.k8s.io/reason";

/**
 * 403 unless the caller may do what the request asks (RBAC; system:masters may do
 * anything); the decision and its reason go into the request's audit event.
 */
async function authorize(
  ctx: ApiContext,
  req: IncomingMessage,
  user: UserInfo,
  attrs: AccessAttributes,
): Promise<void> {
  if (user.groups.includes(MASTERS)) {
    auditAnnotate(req, DECISION, "allow");
    auditAnnotate(req, REASON, "");
    return;
  }
  await ctx.authorizer.ready();
  const { allowed, reason } = ctx.authorizer.authorize(user, attrs);
  auditAnnotate(req, DECISION, allowed ? "allow" : "forbid");
  auditAnnotate(req, REASON, reason);
  if (!allowed) throw forbidden(user.name, attrs, reason);
}

type Verb =
  | "get"
  | "list"
  | "watch"
  | "create"
  | "update"
  | "patch"
  | "delete"
  | "deletecollection";

function verbOf(method: string, route: ResourceRoute, watchParam: boolean): Verb | null {
  const named = route.name !== undefined;
  if (route.watchPrefix) return method === "GET" ? "watch" : null;
  switch (method) {
    case "GET":
      if (watchParam) return "watch";
      return named ? "get" : "list";
    case "POST":
      // A POST to an object's subresource creates it (serviceaccounts/<name>/token).
      return !named || route.subresource !== undefined ? "create" : null;
    case "PUT":
      return named ? "update" : null;
    case "PATCH":
      return named ? "patch" : null;
    case "DELETE":
      return named ? "delete" : "deletecollection";
    default:
      return null;
  }
}

/** Verbs of the status subresource. */
const STATUS_VERBS = ["get", "update", "patch"];

/** Verbs of a subresource streamed from a node. */
const STREAM_VERBS = ["get"];

/** Verbs of a create subresource. */
const CREATE_VERBS = ["create"];

/** Verbs of a subresource connected to a node (a GET for WebSockets, a POST for SPDY). */
const CONNECT_VERBS = ["get", "create"];

async function serveResource(
  ctx: ApiContext,
  creators: SubresourceCreators,
  route: ResourceRoute,
  req: IncomingMessage,
  res: ServerResponse,
  user: UserInfo,
  url: RequestUrl,
  warnings: string[],
  nodeClient?: NodeClient,
): Promise<void> {
  const query = new Query(url.searchParams);
  const watchParam = query.bool("watch") === true;
  const verb = verbOf(req.method ?? "GET", route, watchParam);
  if (verb) {
    const fieldSelector =
      verb === "list" || verb === "watch" ? url.searchParams.get("fieldSelector") : null;
    await authorize(ctx, req, user, {
      verb,
      ...(fieldSelector ? { fieldSelector } : {}),
      resource: {
        group: route.group,
        resource: route.plural,
        ...(route.subresource !== undefined ? { subresource: route.subresource } : {}),
        ...(route.name !== undefined ? { name: route.name } : {}),
        ...(route.namespace !== undefined ? { namespace: route.namespace } : {}),
      },
    });
  }
  const found = ctx.registry.lookup(route.group, route.version, route.plural);
  if (!found) throw notFound();
  const { def, version } = found;
  if (!def.namespaced && route.namespace !== undefined) throw notFound();
  if (!verb) throw methodNotAllowed();

  // Which verbs the addressed (sub)resource serves.
  let served: readonly string[];
  let creates: CreateSubresource | undefined;
  const streamed = route.subresource
    ? def.nodeStreamSubresources?.find((s) => s.name === route.subresource)
    : undefined;
  const connected =
    route.subresource && !streamed
      ? def.nodeConnectSubresources?.find((s) => s.name === route.subresource)
      : undefined;
  if (route.subresource === undefined) served = resourceVerbs(def);
  else if (streamed) served = STREAM_VERBS;
  else if (connected) served = CONNECT_VERBS;
  else if (route.subresource === "status" && version.statusSubresource) served = STATUS_VERBS;
  else if (route.subresource === "scale" && version.scale) served = STATUS_VERBS;
  else {
    const extra = def.subresources?.find((s) => s.name === route.subresource);
    creates = extra ? undefined : def.createSubresources?.find((s) => s.name === route.subresource);
    if (extra) served = extra.verbs;
    else if (
      creates &&
      (creates.updateParent ||
        creates.act ||
        creators.has(creatorKey(def.group, def.names.plural, creates.name)))
    )
      served = CREATE_VERBS;
    else throw notFound();
  }
  if (route.subresource !== undefined && (verb === "watch" || verb === "list")) throw notFound();
  if (!served.includes(verb)) throw methodNotAllowed();
  if (def.namespaced && route.namespace === undefined) {
    // The all-namespaces path only lists and watches.
    if (verb !== "list" && verb !== "watch") {
      throw route.name === undefined ? methodNotAllowed() : notFound();
    }
  }

  if (streamed) {
    const scope = streamScope(ctx, route, req, res, user, query, warnings, def, version);
    return serveNodeStream(scope, streamed, nodeClient);
  }
  if (connected) {
    if (verb === "get" && isUpgrade(req)) {
      // A WebSocket comes as a GET; it runs something all the same, so it needs create
      // too (kube-apiserver's AuthorizePodWebsocketUpgradeCreatePermission, on by default).
      await authorize(ctx, req, user, {
        verb: "create",
        resource: {
          group: route.group,
          resource: route.plural,
          subresource: connected.name,
          ...(route.name !== undefined ? { name: route.name } : {}),
          ...(route.namespace !== undefined ? { namespace: route.namespace } : {}),
        },
      });
    }
    const scope = streamScope(ctx, route, req, res, user, query, warnings, def, version);
    return serveNodeConnect(scope, connected, nodeClient);
  }

  const how =
    verb === "watch" ? "watch" : verb === "list" || verb === "deletecollection" ? "list" : "object";
  // A create subresource answers with an object of its own kind.
  const renderer = creates
    ? negotiateRenderer(req, creates.kind, storageVersion(creates.kind), query, how)
    : negotiateRenderer(req, def, version, query, how);
  statusMedia.set(req, statusMediaType(renderer));
  const store = new ResourceStore(ctx, {
    definition: def,
    version,
    user,
    warnings,
    annotate: (key, value) => auditAnnotate(req, key, value),
    ...(def.namespaced && route.namespace !== undefined ? { namespace: route.namespace } : {}),
    ...(route.name !== undefined ? { name: route.name } : {}),
    ...(route.subresource !== undefined ? { subresource: route.subresource } : {}),
  });
  const scope: RequestScope = {
    ctx,
    store,
    renderer,
    req,
    res,
    user,
    def,
    version,
    apiVersion: store.apiVersion,
    query,
    warnings,
    subject: store.subject,
    ...(def.namespaced && route.namespace !== undefined ? { namespace: route.namespace } : {}),
    ...(route.name !== undefined ? { name: route.name } : {}),
    ...(route.subresource !== undefined ? { subresource: route.subresource } : {}),
  };
  if (version.deprecated) {
    warnings.push(
      version.deprecationWarning ?? `${scope.apiVersion} ${def.names.kind} is deprecated`,
    );
  }

  if (def.review) return createReview(scope, def.review);
  if (creates?.updateParent || creates?.act) return createUpdatingParent(scope, creates);
  if (creates)
    return creators.get(creatorKey(def.group, def.names.plural, creates.name))!(scope, creates);
  if (scope.subresource === "scale") {
    if (verb === "get") return getScale(scope);
    if (verb === "update") return updateScale(scope);
    return patchScale(scope);
  }
  switch (verb) {
    case "get":
      return getResource(scope);
    case "list":
      return listResource(scope, parseListOptions(query, def, version.name, false));
    case "watch":
      return serveWatch(scope, parseListOptions(query, def, version.name, true));
    case "create":
      return createResource(scope);
    case "update":
      return updateResource(scope);
    case "patch":
      return patchResource(scope);
    case "delete":
      return deleteResource(scope);
    case "deletecollection":
      return deleteCollection(scope);
  }
}

/** The scope of a request for a subresource streamed from a node: no representation to negotiate. */
function streamScope(
  ctx: ApiContext,
  route: ResourceRoute,
  req: IncomingMessage,
  res: ServerResponse,
  user: UserInfo,
  query: Query,
  warnings: string[],
  def: ResourceDefinition,
  version: ResourceDefinition["versions"][number],
): RequestScope {
  const store = new ResourceStore(ctx, {
    definition: def,
    version,
    user,
    warnings,
    annotate: (key, value) => auditAnnotate(req, key, value),
    ...(route.namespace !== undefined ? { namespace: route.namespace } : {}),
    ...(route.name !== undefined ? { name: route.name } : {}),
  });
  return {
    ctx,
    store,
    renderer: {
      def,
      version,
      output: { mediaType: "application/json", kind: "object", contentType: "application/json" },
      includeObject: "Metadata",
    },
    req,
    res,
    user,
    def,
    version,
    apiVersion: store.apiVersion,
    query,
    warnings,
    subject: store.subject,
    ...(route.namespace !== undefined ? { namespace: route.namespace } : {}),
    ...(route.name !== undefined ? { name: route.name } : {}),
    ...(route.subresource !== undefined ? { subresource: route.subresource } : {}),
  };
}
