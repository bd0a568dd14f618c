/**
 * Simulated nodes (`setpoint agent --simulate N`): Nodes with heartbeats whose
 * Pods run without processes, for tests and benchmarks at scale, as kwok does
 * for Kubernetes (simulator.ts; a Pod's simulated life in sim-pod.ts). They
 * share the Node object, Lease timing and Pod status code of the real agent.
 */
export {
  DEFAULT_SIMULATED_RUN_MS,
  SIMULATED_NODE_LABEL,
  SIMULATED_NODE_RESOURCES,
  Simulator,
  type SimulatorOptions,
} from "./simulator.ts";
