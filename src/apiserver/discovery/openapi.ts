/**
 * OpenAPI v3, as Kubernetes publishes it: an index at /openapi/v3 naming one
 * document per served group-version, and the documents themselves, with every
 * resource's paths (each operation carrying x-kubernetes-action and
 * x-kubernetes-group-version-kind) and `components.schemas` under Kubernetes'
 * definition names (io.k8s.api.core.v1.ConfigMap; custom resources by reversed
 * group, com.example.v1.Widget). kubectl reads these for `apply` (patch metadata,
 * the fieldValidation parameter), `create -f` and `explain`.
 *
 * Documents are built from the registry on first use and cached until its
 * generation changes.
 */
import { createHash } from "node:crypto";
import type { Schema } from "@setpoint/api";
import {
  API_VERSION_DESCRIPTION,
  KIND_DESCRIPTION,
  listMetaSchema,
  objectMetaProperty,
} from "../../registry/builtin/meta-schemas.ts";
import { refSchema, schemaDefinition } from "../../registry/definitions.ts";
import type { Registry } from "../../registry/registry.ts";
import {
  type ResourceDefinition,
  resourceVerbs,
  type VersionDefinition,
} from "../../registry/types.ts";
import {
  apiResourceListSchema,
  deleteOptionsSchema,
  patchSchema,
  SCALE_GVK,
  scaleSchema,
  statusSchema,
  watchEventSchema,
} from "./openapi-schemas.ts";

/** OpenAPI version of the documents. */
const OPENAPI_VERSION = "3.0.0";

const RESPONSE_TYPES = ["application/json", "application/yaml"];
const WATCH_RESPONSE_TYPES = ["application/json", "application/json;stream=watch"];
const PATCH_TYPES_BASE = [
  "application/apply-patch+yaml",
  "application/json-patch+json",
  "application/merge-patch+json",
];
const STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json";

type Json = Record<string, unknown>;

// ---------------------------------------------------------------------------
// Names

/** "example.com" → "com.example". */
function reverseGroup(group: string): string {
  return group.split(".").reverse().join(".");
}

/** The definition name of a kind's schema (and, with "List", of its list). */
export function definitionName(def: ResourceDefinition, version: VersionDefinition): string {
  const named = schemaDefinition(version.schema);
  if (!def.custom && named?.canonical) return named.name;
  const prefix = def.group ? reverseGroup(def.group) : "io.k8s.api.core";
  return `${prefix}.${version.name}.${def.names.kind}`;
}

function capitalize(s: string): string {
  return s ? s[0].toUpperCase() + s.slice(1) : s;
}

/** The group as operation ids spell it: "" → Core, coordination.k8s.io → Coordination. */
function groupWord(group: string): string {
  if (group === "") return "Core";
  const g = group.endsWith(".k8s.io") ? group.slice(0, -".k8s.io".length) : group;
  return g
    .split(/[.-]/)
    .map((p) => capitalize(p))
    .join("");
}

function tagOf(group: string, version: string): string {
  const w = groupWord(group);
  return `${w[0].toLowerCase()}${w.slice(1)}_${version}`;
}

function ref(name: string): Json {
  return { $ref: `#/components/schemas/${name}` };
}

// ---------------------------------------------------------------------------
// Schemas

/** Collects definitions while converting inline schemas into $ref form. */
class Components {
  readonly schemas = new Map<string, Json>();

  /** Emits a named definition (once) and returns its name. */
  define(name: string, target: Schema): string {
    if (!this.schemas.has(name)) {
      this.schemas.set(name, {});
      this.schemas.set(name, this.body(target));
    }
    return name;
  }

  /** A property/items schema: a reference when the schema is (or refers to) a definition. */
  convert(schema: Schema): Json {
    const named = schemaDefinition(schema);
    if (named) {
      this.define(named.name, named.target);
      const out: Json = { allOf: [ref(named.name)] };
      if (!named.canonical && schema.description) out.description = schema.description;
      if (schema.default !== undefined) out.default = schema.default;
      return out;
    }
    return this.body(schema);
  }

  /** The schema's own keywords, with sub-schemas converted. */
  body(schema: Schema): Json {
    const out: Json = {};
    for (const [k, v] of Object.entries(schema)) {
      if (v === undefined) continue;
      switch (k) {
        case "properties": {
          const props: Json = {};
          for (const [name, p] of Object.entries(v as Record<string, Schema>)) {
            props[name] = this.convert(p);
          }
          out.properties = props;
          break;
        }
        case "items":
          out.items = this.convert(v as Schema);
          break;
        case "additionalProperties":
          out.additionalProperties = typeof v === "boolean" ? v : this.convert(v as Schema);
          break;
        case "allOf":
        case "anyOf":
        case "oneOf":
          out[k] = (v as Schema[]).map((s) => this.convert(s));
          break;
        case "not":
          out.not = this.convert(v as Schema);
          break;
        default:
          out[k] = v;
      }
    }
    return out;
  }

  toJSON(): Json {
    const out: Json = {};
    for (const k of [...this.schemas.keys()].sort()) out[k] = this.schemas.get(k);
    return out;
  }
}

/**
 * A custom resource's schema as published: apiVersion, kind and metadata get the
 * standard descriptions and metadata refers to ObjectMeta, as Kubernetes does.
 */
function publishedCustomSchema(schema: Schema): Schema {
  const props = { ...(schema.properties ?? {}) };
  props.apiVersion = { ...(props.apiVersion ?? { type: "string" }) };
  props.apiVersion.description ??= API_VERSION_DESCRIPTION;
  props.kind = { ...(props.kind ?? { type: "string" }) };
  props.kind.description ??= KIND_DESCRIPTION;
  props.metadata = objectMetaProperty();
  return { ...schema, type: schema.type ?? "object", properties: props };
}

function emitKind(c: Components, def: ResourceDefinition, version: VersionDefinition): string {
  const name = definitionName(def, version);
  if (c.schemas.has(name)) return name;
  const source = def.custom ? publishedCustomSchema(version.schema) : version.schema;
  c.schemas.set(name, {});
  const body = c.body(source);
  body["x-kubernetes-group-version-kind"] = [
    { group: def.group, kind: def.names.kind, version: version.name },
  ];
  c.schemas.set(name, body);
  const listName = `${name.slice(0, name.length - def.names.kind.length)}${def.names.listKind}`;
  c.schemas.set(listName, {
    description: `${def.names.listKind} is a list of ${def.names.kind}.`,
    type: "object",
    required: ["items"],
    properties: {
      apiVersion: { description: API_VERSION_DESCRIPTION, type: "string" },
      items: {
        description: `List of ${def.names.plural}.`,
        type: "array",
        items: { allOf: [ref(name)], default: {} },
      },
      kind: { description: KIND_DESCRIPTION, type: "string" },
      metadata: c.convert(refSchema(listMetaSchema, "Standard list metadata.")),
    },
    "x-kubernetes-group-version-kind": [
      { group: def.group, kind: def.names.listKind, version: version.name },
    ],
  });
  return name;
}

// ---------------------------------------------------------------------------
// Parameters

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

// ---------------------------------------------------------------------------
// Paths

function content(types: string[], schemaName: string): Json {
  const out: Json = {};
  for (const t of types) out[t] = { schema: ref(schemaName) };
  return out;
}

function responses(codes: string[], schemaName: string, types = RESPONSE_TYPES): Json {
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

function resourcePaths(
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
  const patchTypes = def.custom ? PATCH_TYPES_BASE : [...PATCH_TYPES_BASE, STRATEGIC_MERGE_PATCH];
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

function statusName(): string {
  return schemaDefinition(statusSchema)!.name;
}

function deleteOptionsSchemaName(): string {
  return schemaDefinition(deleteOptionsSchema)!.name;
}

function buildDocument(reg: Registry, group: string, version: string): Json | undefined {
  const served = reg.inGroupVersion(group, version);
  if (served.length === 0) return undefined;
  const c = new Components();
  c.define(statusName(), statusSchema);
  c.define(deleteOptionsSchemaName(), deleteOptionsSchema);
  const apiResourceListName = c.define(
    schemaDefinition(apiResourceListSchema)!.name,
    apiResourceListSchema,
  );
  const prefix = group ? `/apis/${group}/${version}` : `/api/${version}`;
  const paths: Record<string, Json> = {
    [`${prefix}/`]: {
      get: {
        tags: [tagOf(group, version)],
        description: "get available resources",
        operationId: `get${groupWord(group)}${capitalize(version)}APIResources`,
        responses: responses(["200"], apiResourceListName),
      },
    },
  };
  for (const { def, version: v } of served) Object.assign(paths, resourcePaths(c, def, v));
  return {
    openapi: OPENAPI_VERSION,
    info: { title: "Kubernetes", version: "unversioned" },
    paths,
    components: {
      schemas: c.toJSON(),
      securitySchemes: {
        BearerToken: {
          type: "apiKey",
          description: "Bearer Token authentication",
          name: "authorization",
          in: "header",
        },
      },
    },
    security: [{ BearerToken: [] }],
  };
}

// ---------------------------------------------------------------------------
// OpenAPI v2

/**
 * Content-Type of the protobuf OpenAPI v2 document. Clients ask for
 * "application/com.github.proto-openapi.spec.v2@v1.0+protobuf", but "@" is not
 * valid in a media type and Go's parser refuses it in a response: answer with
 * "." instead, as Kubernetes does.
 */
export const OPENAPI_V2_PROTOBUF_CONTENT_TYPE =
  "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

function protoString(field: number, value: string): Buffer {
  const bytes = Buffer.from(value, "utf8");
  return Buffer.concat([protoKey(field), varint(bytes.length), bytes]);
}

function protoMessage(field: number, body: Buffer): Buffer {
  return Buffer.concat([protoKey(field), varint(body.length), body]);
}

function protoKey(field: number): Buffer {
  return varint((field << 3) | 2);
}

function varint(n: number): Buffer {
  const out: number[] = [];
  let v = n;
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return Buffer.from(out);
}

/**
 * GET /openapi/v2 (and /swagger-2.0.0.pb-v1): a minimal OpenAPI v2 document in
 * gnostic's protobuf encoding (swagger "2.0", info, empty paths). kubectl 1.27 and
 * 1.28 load it before `apply`, `create -f` and `explain` and fail if it is missing;
 * everything they then use comes from OpenAPI v3 (and, for patches of built-in
 * types, from kubectl's own compiled-in types).
 */
export function openapiV2Protobuf(): Buffer {
  const info = Buffer.concat([protoString(1, "Kubernetes"), protoString(2, "unversioned")]);
  return Buffer.concat([
    protoString(1, "2.0"),
    protoMessage(2, info),
    protoMessage(8, Buffer.alloc(0)),
  ]);
}

// ---------------------------------------------------------------------------
// Cache and exported API

interface Built {
  doc: Json;
  json: string;
  hash: string;
}

const caches = new WeakMap<Registry, { generation: number; docs: Map<string, Built | null> }>();

function built(reg: Registry, group: string, version: string): Built | undefined {
  let cache = caches.get(reg);
  if (!cache || cache.generation !== reg.generation) {
    cache = { generation: reg.generation, docs: new Map() };
    caches.set(reg, cache);
  }
  const key = `${group}/${version}`;
  let entry = cache.docs.get(key);
  if (entry === undefined) {
    const doc = buildDocument(reg, group, version);
    if (doc) {
      const json = JSON.stringify(doc);
      entry = { doc, json, hash: createHash("sha512").update(json).digest("hex").toUpperCase() };
    } else entry = null;
    cache.docs.set(key, entry);
  }
  return entry ?? undefined;
}

/** "api/v1" or "apis/<group>/<version>": a document's key in the index. */
export function openapiV3PathKey(group: string, version: string): string {
  return group ? `apis/${group}/${version}` : `api/${version}`;
}

/** GET /openapi/v3: every served group-version with the URL of its document (hash-pinned). */
export function openapiV3Index(reg: Registry): object {
  const paths: Record<string, { serverRelativeURL: string }> = {};
  for (const g of reg.groups()) {
    for (const v of g.versions) {
      const key = openapiV3PathKey(g.group, v);
      paths[key] = {
        serverRelativeURL: `/openapi/v3/${key}?hash=${openapiV3Hash(reg, g.group, v)}`,
      };
    }
  }
  return { paths };
}

/** GET /openapi/v3/api/v1 or /openapi/v3/apis/<g>/<v>; undefined if not served. Do not mutate. */
export function openapiV3Document(
  reg: Registry,
  group: string,
  version: string,
): object | undefined {
  return built(reg, group, version)?.doc;
}

/** The serialized document (cached with it), for the handler to send as is. */
export function openapiV3DocumentJson(
  reg: Registry,
  group: string,
  version: string,
): string | undefined {
  return built(reg, group, version)?.json;
}

/** The document's hash (ETag and the `hash` query parameter); "" if not served. */
export function openapiV3Hash(reg: Registry, group: string, version: string): string {
  return built(reg, group, version)?.hash ?? "";
}
