/**
 * OpenAPI v3, as Kubernetes publishes it: an index at /openapi/v3 naming one
 * document per served group-version, and the documents themselves, with every
 * resource's paths (openapi-paths.ts) and `components.schemas`
 * (openapi-components.ts). kubectl reads these for `apply` (patch metadata, the
 * fieldValidation parameter), `create -f` and `explain`.
 *
 * Documents are built from the registry on first use and cached until its
 * generation changes.
 */
import { createHash } from "node:crypto";
import { schemaDefinition } from "../../registry/definitions.ts";
import type { Registry } from "../../registry/registry.ts";
import { Components, capitalize, groupWord, type Json, tagOf } from "./openapi-components.ts";
import { deleteOptionsSchemaName, resourcePaths, responses, statusName } from "./openapi-paths.ts";
import { apiResourceListSchema, deleteOptionsSchema, statusSchema } from "./openapi-schemas.ts";

/** OpenAPI version of the documents. */
const OPENAPI_VERSION = "3.0.0";

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
