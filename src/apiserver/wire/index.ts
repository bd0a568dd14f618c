/**
 * Between HTTP bodies and objects: decoding request bodies (decode.ts: JSON, YAML,
 * and Kubernetes protobuf, both ways, in protobuf/ with its message definitions;
 * large JSON and YAML bodies parsed on worker threads, json-thread.ts and
 * yaml-thread.ts, each a job-thread.ts),
 * checking a body against its type's schema (schema-walk.ts), media types
 * (media-type.ts), objects in storage and on the wire (codec.ts), choosing and
 * rendering the response representation (media-range.ts, negotiate.ts, render.ts,
 * table.ts; a list's body in pieces for streaming it, list-text.ts), and writing
 * responses, errors and warnings (response.ts).
 */
export * from "./codec.ts";
export * from "./decode.ts";
export * from "./list-text.ts";
export * from "./media-range.ts";
export * from "./media-type.ts";
export * from "./negotiate.ts";
export * from "./protobuf/index.ts";
export * from "./render.ts";
export * from "./response.ts";
export * from "./schema-walk.ts";
export * from "./table.ts";
