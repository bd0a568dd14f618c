/**
 * The paths of an OpenAPI v3 document: for each served resource, its collection,
 * item, watch and subresource paths, each operation with Kubernetes' operation id,
 * parameters, request and response media types, `x-kubernetes-action` and
 * `x-kubernetes-group-version-kind`, as kubectl reads them for `apply` (patch
 * types, the fieldValidation parameter), `create -f` and `explain`.
 */
import { schemaDefinition } from "../../registry/definitions.ts";
import {
  type ResourceDefinition,
  resourceVerbs,
  type VersionDefinition,
} from "../../registry/types.ts";
import {
  type Components,
  capitalize,
  emitKind,
  groupWord,
  type Json,
  ref,
  tagOf,
} from "./openapi-components.ts";
import {
  deleteOptionsSchema,
  patchSchema,
  SCALE_GVK,
  scaleSchema,
  statusSchema,
  watchEventSchema,
} from "./openapi-schemas.ts";

const RESPONSE_TYPES = ["application/json", "application/yaml"];
const WATCH_RESPONSE_TYPES = ["application/json", "application/json;stream=watch"];
const PATCH_TYPES_BASE = [
  "application/apply-patch+yaml",
  "application/json-patch+json",
  "application/merge-patch+json",
];
const STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json";

function queryParam(name: string, description: string, type: string): Json {
  return { name, in: "query", description, schema: { type, uniqueItems: true } };
}

const P = {
  pretty: queryParam(
    "pretty",
    "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget).",
    "string",
  ),
  dryRun: queryParam(
    "dryRun",
    "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed",
    "string",
  ),
  fieldManager: queryParam(
    "fieldManager",
    "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint. Required for apply requests (application/apply-patch).",
    "string",
  ),
  fieldValidation: queryParam(
    "fieldValidation",
    "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields. Valid values are: - Ignore: drops unknown fields silently. - Warn: drops unknown fields and sends a warning header for each (the default). - Strict: fails the request with BadRequest on unknown or duplicate fields.",
    "string",
  ),
  force: queryParam(
    "force",
    'Force is going to "force" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.',
    "boolean",
  ),
  allowWatchBookmarks: queryParam(
    "allowWatchBookmarks",
    'allowWatchBookmarks requests watch events with type "BOOKMARK". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server\'s discretion.',
    "boolean",
  ),
  continue: queryParam(
    "continue",
    "The continue option should be set when retrieving more results from the server: its value is the continue token of the previous page. An expired token yields 410 ResourceExpired.",
    "string",
  ),
  fieldSelector: queryParam(
    "fieldSelector",
    "A selector to restrict the list of returned objects by their fields. Defaults to everything.",
    "string",
  ),
  labelSelector: queryParam(
    "labelSelector",
    "A selector to restrict the list of returned objects by their labels. Defaults to everything.",
    "string",
  ),
  limit: queryParam(
    "limit",
    "limit is a maximum number of responses to return for a list call. If more items exist, the server will set the `continue` field on the list metadata.",
    "integer",
  ),
  resourceVersion: queryParam(
    "resourceVersion",
    "resourceVersion sets a constraint on what resource versions a request may be served from. Defaults to unset (the most recent).",
    "string",
  ),
  resourceVersionMatch: queryParam(
    "resourceVersionMatch",
    "resourceVersionMatch determines how resourceVersion is applied to list calls (NotOlderThan or Exact).",
    "string",
  ),
  sendInitialEvents: queryParam(
    "sendInitialEvents",
    'sendInitialEvents=true may be set together with watch=true: the stream begins with synthetic events for the current state, followed by a BOOKMARK annotated "k8s.io/initial-events-end": "true".',
    "boolean",
  ),
  timeoutSeconds: queryParam(
    "timeoutSeconds",
    "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity.",
    "integer",
  ),
  watch: queryParam(
    "watch",
    "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications.",
    "boolean",
  ),
  gracePeriodSeconds: queryParam(
    "gracePeriodSeconds",
    "The duration in seconds before the object should be deleted. Zero means delete immediately.",
    "integer",
  ),
  orphanDependents: queryParam(
    "orphanDependents",
    "Deprecated: please use the PropagationPolicy. Should the dependent objects be orphaned.",
    "boolean",
  ),
  propagationPolicy: queryParam(
    "propagationPolicy",
    "Whether and how garbage collection will be performed: 'Orphan', 'Background' (the default) or 'Foreground'.",
    "string",
  ),
};

const LIST_PARAMS = [
  P.allowWatchBookmarks,
  P.continue,
  P.fieldSelector,
  P.labelSelector,
  P.limit,
  P.resourceVersion,
  P.resourceVersionMatch,
  P.sendInitialEvents,
  P.timeoutSeconds,
  P.watch,
];
const WRITE_PARAMS = [P.dryRun, P.fieldManager, P.fieldValidation];
const DELETE_PARAMS = [P.dryRun, P.gracePeriodSeconds, P.orphanDependents, P.propagationPolicy];

function pathParam(name: string, description: string): Json {
  return {
    name,
    in: "path",
    description,
    required: true,
    schema: { type: "string", uniqueItems: true },
  };
}

function content(types: string[], schemaName: string): Json {
  const out: Json = {};
  for (const t of types) out[t] = { schema: ref(schemaName) };
  return out;
}

export function responses(codes: string[], schemaName: string, types = RESPONSE_TYPES): Json {
  const out: Json = {};
  for (const code of codes) {
    out[code] = {
      description: code === "201" ? "Created" : code === "202" ? "Accepted" : "OK",
      content: content(types, schemaName),
    };
  }
  out["401"] = { description: "Unauthorized" };
  return out;
}

interface OpContext {
  tag: string;
  gvk: { group: string; version: string; kind: string };
}

function op(
  ctx: OpContext,
  action: string,
  operationId: string,
  description: string,
  fields: Json,
): Json {
  return {
    tags: [ctx.tag],
    description,
    operationId,
    ...fields,
    "x-kubernetes-action": action,
    "x-kubernetes-group-version-kind": ctx.gvk,
  };
}

function requestBody(schemaName: string, types = ["*/*"]): Json {
  return { content: content(types, schemaName), required: true };
}

export function resourcePaths(
  c: Components,
  def: ResourceDefinition,
  version: VersionDefinition,
): Record<string, Json> {
  const kindName = emitKind(c, def, version);
  const listName = `${kindName.slice(0, kindName.length - def.names.kind.length)}${def.names.listKind}`;
  const kind = def.names.kind;
  const prefix = def.group ? `/apis/${def.group}/${version.name}` : `/api/${version.name}`;
  const idBase = `${groupWord(def.group)}${capitalize(version.name)}`;
  const scoped = def.namespaced ? `Namespaced${kind}` : kind;
  const ctx: OpContext = {
    tag: tagOf(def.group, version.name),
    gvk: { group: def.group, version: version.name, kind },
  };
  const verbs = new Set(resourceVerbs(def));
  const nsParam = pathParam(
    "namespace",
    "object name and auth scope, such as for teams and projects",
  );
  const nameParam = pathParam("name", `name of the ${kind}`);
  const collection = def.namespaced
    ? `${prefix}/namespaces/{namespace}/${def.names.plural}`
    : `${prefix}/${def.names.plural}`;
  const item = `${collection}/{name}`;
  const scopeParams = def.namespaced ? [nsParam] : [];
  const patchTypes = def.strategicMergePatch
    ? [...PATCH_TYPES_BASE, STRATEGIC_MERGE_PATCH]
    : PATCH_TYPES_BASE;
  const paths: Record<string, Json> = {};

  const coll: Json = {};
  if (verbs.has("list")) {
    coll.get = op(ctx, "list", `list${idBase}${scoped}`, `list or watch objects of kind ${kind}`, {
      parameters: LIST_PARAMS,
      responses: responses(["200"], listName, [...RESPONSE_TYPES, "application/json;stream=watch"]),
    });
  }
  if (verbs.has("create")) {
    coll.post = op(ctx, "post", `create${idBase}${scoped}`, `create a ${kind}`, {
      parameters: WRITE_PARAMS,
      requestBody: requestBody(kindName),
      responses: responses(["200", "201", "202"], kindName),
    });
  }
  if (verbs.has("deletecollection")) {
    coll.delete = op(
      ctx,
      "deletecollection",
      `deleteCollection${idBase}${scoped}`,
      `delete collection of ${kind}`,
      {
        parameters: [...DELETE_PARAMS, ...LIST_PARAMS.filter((p) => p.name !== "watch")],
        requestBody: requestBody(deleteOptionsSchemaName()),
        responses: responses(["200"], statusName()),
      },
    );
  }
  if (Object.keys(coll).length)
    paths[collection] = { ...coll, parameters: [...scopeParams, P.pretty] };

  const one: Json = {};
  if (verbs.has("get")) {
    one.get = op(ctx, "get", `read${idBase}${scoped}`, `read the specified ${kind}`, {
      responses: responses(["200"], kindName),
    });
  }
  if (verbs.has("update")) {
    one.put = op(ctx, "put", `replace${idBase}${scoped}`, `replace the specified ${kind}`, {
      parameters: WRITE_PARAMS,
      requestBody: requestBody(kindName),
      responses: responses(["200", "201"], kindName),
    });
  }
  if (verbs.has("patch")) {
    one.patch = op(
      ctx,
      "patch",
      `patch${idBase}${scoped}`,
      `partially update the specified ${kind}`,
      {
        parameters: [...WRITE_PARAMS, P.force],
        requestBody: requestBody(
          c.define(schemaDefinition(patchSchema)!.name, patchSchema),
          patchTypes,
        ),
        responses: responses(["200", "201"], kindName),
      },
    );
  }
  if (verbs.has("delete")) {
    one.delete = op(ctx, "delete", `delete${idBase}${scoped}`, `delete a ${kind}`, {
      parameters: DELETE_PARAMS,
      requestBody: requestBody(deleteOptionsSchemaName()),
      responses: responses(["200", "202"], statusName()),
    });
  }
  if (Object.keys(one).length)
    paths[item] = { ...one, parameters: [nameParam, ...scopeParams, P.pretty] };

  if (verbs.has("list") && def.namespaced) {
    paths[`${prefix}/${def.names.plural}`] = {
      get: op(
        ctx,
        "list",
        `list${idBase}${kind}ForAllNamespaces`,
        `list or watch objects of kind ${kind}`,
        {
          responses: responses(["200"], listName, [
            ...RESPONSE_TYPES,
            "application/json;stream=watch",
          ]),
        },
      ),
      parameters: [...LIST_PARAMS, P.pretty],
    };
  }
  if (verbs.has("watch")) {
    const watchName = c.define(schemaDefinition(watchEventSchema)!.name, watchEventSchema);
    const watchPrefix = def.namespaced
      ? `${prefix}/watch/namespaces/{namespace}/${def.names.plural}`
      : `${prefix}/watch/${def.names.plural}`;
    const deprecated = "deprecated: use the 'watch' parameter with a list operation instead";
    paths[watchPrefix] = {
      get: op(
        ctx,
        "watchlist",
        `watch${idBase}${scoped}List`,
        `watch individual changes to a list of ${kind}. ${deprecated}.`,
        {
          responses: responses(["200"], watchName, WATCH_RESPONSE_TYPES),
        },
      ),
      parameters: [...LIST_PARAMS, ...scopeParams, P.pretty],
    };
    paths[`${watchPrefix}/{name}`] = {
      get: op(
        ctx,
        "watch",
        `watch${idBase}${scoped}`,
        `watch changes to an object of kind ${kind}. ${deprecated}, filtered to a single item with the 'fieldSelector' parameter.`,
        {
          responses: responses(["200"], watchName, WATCH_RESPONSE_TYPES),
        },
      ),
      parameters: [...LIST_PARAMS, nameParam, ...scopeParams, P.pretty],
    };
    if (def.namespaced) {
      paths[`${prefix}/watch/${def.names.plural}`] = {
        get: op(
          ctx,
          "watchlist",
          `watch${idBase}${kind}ListForAllNamespaces`,
          `watch individual changes to a list of ${kind}. ${deprecated}.`,
          {
            responses: responses(["200"], watchName, WATCH_RESPONSE_TYPES),
          },
        ),
        parameters: [...LIST_PARAMS, P.pretty],
      };
    }
  }

  const subresource = (
    name: string,
    sub: string,
    subVerbs: string[],
    schemaName: string,
    subCtx: OpContext,
  ) => {
    const ops: Json = {};
    const word = capitalize(sub);
    if (subVerbs.includes("get")) {
      ops.get = op(
        subCtx,
        "get",
        `read${idBase}${scoped}${word}`,
        `read ${sub} of the specified ${kind}`,
        {
          responses: responses(["200"], schemaName),
        },
      );
    }
    if (subVerbs.includes("update")) {
      ops.put = op(
        subCtx,
        "put",
        `replace${idBase}${scoped}${word}`,
        `replace ${sub} of the specified ${kind}`,
        {
          parameters: WRITE_PARAMS,
          requestBody: requestBody(schemaName),
          responses: responses(["200", "201"], schemaName),
        },
      );
    }
    if (subVerbs.includes("patch")) {
      ops.patch = op(
        subCtx,
        "patch",
        `patch${idBase}${scoped}${word}`,
        `partially update ${sub} of the specified ${kind}`,
        {
          parameters: [...WRITE_PARAMS, P.force],
          requestBody: requestBody(
            c.define(schemaDefinition(patchSchema)!.name, patchSchema),
            patchTypes,
          ),
          responses: responses(["200", "201"], schemaName),
        },
      );
    }
    paths[`${item}/${name}`] = { ...ops, parameters: [nameParam, ...scopeParams, P.pretty] };
  };
  if (version.statusSubresource)
    subresource("status", "status", ["get", "patch", "update"], kindName, ctx);
  if (version.scale) {
    const scaleName = c.define(schemaDefinition(scaleSchema)!.name, scaleSchema);
    const scaleBody = c.schemas.get(scaleName);
    if (scaleBody && !scaleBody["x-kubernetes-group-version-kind"]) {
      scaleBody["x-kubernetes-group-version-kind"] = [SCALE_GVK];
    }
    subresource("scale", "scale", ["get", "patch", "update"], scaleName, {
      tag: ctx.tag,
      gvk: SCALE_GVK,
    });
  }
  for (const extra of def.subresources ?? []) {
    subresource(extra.name, extra.name, extra.verbs, kindName, ctx);
  }
  return paths;
}

export function statusName(): string {
  return schemaDefinition(statusSchema)!.name;
}

export function deleteOptionsSchemaName(): string {
  return schemaDefinition(deleteOptionsSchema)!.name;
}
