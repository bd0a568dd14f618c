/**
 * Pod sandboxes of the agent's isolated mode (`--isolation=namespaces`, root on
 * Linux): a network namespace per Pod behind the node's bridge (network.ts), a
 * mount namespace per container with its volumes at their mountPaths (wrapper.ts,
 * mounts.ts), entered for exec and probes; isolation.ts puts them together and
 * support.ts says whether the machine can.
 */
export {
  ISOLATION_MODES,
  Isolation,
  type IsolationMode,
  IsolationUnavailableError,
  type PodSandbox,
} from "./isolation.ts";
export {
  DEFAULT_CLUSTER_IP_RANGE,
  ISOLATED_POD_NET,
  type NetworkSandbox,
  PodNetwork,
  parseCidr,
} from "./network.ts";
export { type IsolationTools, isolationTools } from "./support.ts";
export { type BindMount, enterArgv, netnsPath, sandboxWrapper } from "./wrapper.ts";
