export * from "./meta.ts";
export * from "./schema.ts";
export * from "./status.ts";
