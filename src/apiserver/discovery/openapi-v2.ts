/**
 * GET /openapi/v2 (and /swagger-2.0.0.pb-v1): a minimal OpenAPI v2 document in
 * gnostic's protobuf encoding (swagger "2.0", info, empty paths), encoded with
 * protobufjs from wire/protobuf/openapiv2.proto. kubectl 1.27 and 1.28 load it
 * before `apply`, `create -f` and `explain` and fail if it is missing; everything
 * they then use comes from OpenAPI v3 (and, for patches of built-in types, from
 * kubectl's own compiled-in types).
 */
import { protobufType } from "../wire/protobuf/index.ts";

/**
 * Content-Type of the protobuf OpenAPI v2 document. Clients ask for
 * "application/com.github.proto-openapi.spec.v2@v1.0+protobuf", but "@" is not
 * valid in a media type and Go's parser refuses it in a response: answer with
 * "." instead, as Kubernetes does.
 */
export const OPENAPI_V2_PROTOBUF_CONTENT_TYPE =
  "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/** The document's message (gnostic's openapi.v2.Document). */
export const OPENAPI_V2_DOCUMENT_MESSAGE = "openapi.v2.Document";

/** The same minimal document in JSON, for clients that do not ask for protobuf. */
export const OPENAPI_V2_JSON = JSON.stringify({
  swagger: "2.0",
  info: { title: "Kubernetes", version: "unversioned" },
  paths: {},
});

let encoded: Buffer | undefined;

/** The document's bytes (the same for every registry: it lists no paths). */
export function openapiV2Protobuf(): Buffer {
  if (!encoded) {
    const type = protobufType(OPENAPI_V2_DOCUMENT_MESSAGE);
    const doc = type.fromObject({
      swagger: "2.0",
      info: { title: "Kubernetes", version: "unversioned" },
      paths: {},
    });
    encoded = Buffer.from(type.encode(doc).finish());
  }
  return encoded;
}
