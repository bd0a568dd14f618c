/**
 * Authorization: Node then RBAC (authorizer.ts), the Node authorizer
 * (node-authorizer.ts), the RBAC authorizer over the watch caches (rbac-authorizer.ts) and
 * the 403 a denied request gets (forbidden.ts), and
 * impersonation authorized through it (impersonation.ts).
 */
export * from "./authorizer.ts";
export * from "./forbidden.ts";
export * from "./impersonation.ts";
export * from "./node-authorizer.ts";
export * from "./rbac-authorizer.ts";
