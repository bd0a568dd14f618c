/**
 * The apiserver process: the HTTP(S) server and its public endpoints (server.ts),
 * authentication (auth.ts, with the tokens of ../tokens/), its TLS material
 * (certs.ts), the kubeconfig it writes for clients (kubeconfig-yaml.ts), and what a
 * fresh control plane holds before anyone uses it (bootstrap.ts).
 */

export * from "../tokens/index.ts";
export * from "./auth.ts";
export * from "./bootstrap.ts";
export * from "./certs.ts";
export * from "./connections.ts";
export * from "./in-process.ts";
export * from "./inflight.ts";
export * from "./kubeconfig-yaml.ts";
export * from "./kubernetes-service.ts";
export * from "./server.ts";
