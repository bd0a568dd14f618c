/**
 * ServiceAccount tokens: issued by the `serviceaccounts/token` endpoint and checked
 * by the server's authenticator (service-account-tokens.ts).
 */
export * from "./service-account-tokens.ts";
