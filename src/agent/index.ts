/**
 * The node agent (the data plane's node side): `Agent` (agent.ts) runs the Pods
 * bound to its Node as processes and keeps them running without the control
 * plane. Its parts: the image store (images/), the pod worker and Pod status
 * (pods/), the state on disk (state/), the Node and its Lease (node/), Pod
 * addresses (pod-addresses.ts), the log relay that writes the containers' logs
 * (log-relay/), the helper processes that outlive it (detached-process.ts: the
 * service proxy, the log relay); simulated nodes without processes (simulate/).
 * Built on @setpoint/runtime and @setpoint/api only.
 */
export { Agent, type AgentOptions } from "./agent.ts";
export { DEFAULT_POD_RANGE, PodAddresses } from "./pod-addresses.ts";
