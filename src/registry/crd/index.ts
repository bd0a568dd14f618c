/**
 * CustomResourceDefinitions as types: the CRD type itself (definition.ts, types.ts),
 * the checks Kubernetes makes of a CRD's names and structural schema (names.ts,
 * structural.ts, with field paths as paths.ts prints them), the conversion of a CRD
 * into the ResourceDefinition the server serves (convert.ts), and its objects'
 * validation, pruning and defaulting at run time (schema.ts) and CEL rules
 * (cel.ts, with the Kubernetes CEL library in celib.ts).
 */
export * from "./cel/index.ts";
export * from "./convert.ts";
export * from "./definition.ts";
export * from "./names.ts";
export * from "./paths.ts";
export * from "./schema.ts";
export * from "./structural.ts";
export * from "./types.ts";
