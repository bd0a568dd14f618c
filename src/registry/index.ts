/**
 * The registry: every served type (built-in or from a CustomResourceDefinition)
 * described once as a ResourceDefinition (types.ts): names, scope, versions with
 * their OpenAPI v3 schema, strategy, printer columns. registry.ts holds the served
 * set; definitions.ts names shared schemas; defaulting.ts applies schema
 * defaults, of built-in and custom types alike; object-limits.ts bounds any object's
 * depth and size. The built-in types are in builtin/, CRDs in crd/.
 */
export * from "./defaulting.ts";
export * from "./definitions.ts";
export * from "./object-limits.ts";
export * from "./registry.ts";
export * from "./types.ts";
