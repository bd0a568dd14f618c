/**
 * The agent's authenticated endpoint (the kubelet's :10250), which the apiserver
 * calls for `pods/log`: HTTPS (server.ts) with a self-signed serving certificate
 * (serving-cert.ts), only the apiserver's client certificate let in
 * (authenticate.ts), containers' logs read from their files
 * (container-logs.ts), and upgraded connections for exec, attach and
 * port-forward (upgrade.ts, exec.ts, attach.ts, port-forward.ts over spdy.ts).
 */
export { APISERVER_NODE_CLIENT, checkCaller } from "./authenticate.ts";
export { FOLLOW_POLL_MS, logOptions, logRun } from "./container-logs.ts";
export { EXEC_PROTOCOLS, ExecSessions } from "./exec.ts";
export { createEndpointServer, type EndpointOptions } from "./server.ts";
export { loadOrCreateServingCert, type ServingCert } from "./serving-cert.ts";
