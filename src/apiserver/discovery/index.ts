/**
 * What the apiserver says about the types it serves, computed from the registry:
 * discovery (aggregated v2 and v2beta1, and the legacy /api and /apis documents:
 * discovery-documents.ts), OpenAPI v3 (an index and one document per
 * group-version: openapi-v3.ts, built from openapi-paths.ts, openapi-components.ts
 * and the meta/v1 schemas in openapi-schemas.ts), and the minimal protobuf OpenAPI
 * v2 document older kubectls load (openapi-v2.ts).
 */
export {
  aggregatedDiscovery,
  aggregatedDiscoveryContentType,
  apiGroup,
  apiGroupList,
  apiResourceList,
  apiVersions,
  type DiscoveryVersion,
  negotiateAggregatedDiscovery,
  storageVersionHash,
} from "./discovery-documents.ts";
export { definitionName } from "./openapi-components.ts";
export {
  apiResourceListSchema,
  deleteOptionsSchema,
  patchSchema,
  SCALE_GVK,
  scaleSchema,
  statusSchema,
  watchEventSchema,
} from "./openapi-schemas.ts";
export {
  OPENAPI_V2_DOCUMENT_MESSAGE,
  OPENAPI_V2_JSON,
  OPENAPI_V2_PROTOBUF_CONTENT_TYPE,
  openapiV2Protobuf,
} from "./openapi-v2.ts";
export {
  openapiV3Document,
  openapiV3DocumentJson,
  openapiV3Hash,
  openapiV3Index,
  openapiV3PathKey,
} from "./openapi-v3.ts";
