export * from "./errors.ts";
export * from "./store.ts";
