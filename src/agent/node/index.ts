/**
 * The node side of an agent: the Node object and status it registers
 * (node-object.ts) and its Lease heartbeat (lease.ts), as the kubelet does them.
 */

export {
  LEASE_DURATION_SECONDS,
  LEASE_RENEW_INTERVAL_MS,
  LEASE_RETRY_INITIAL_MS,
  LEASE_RETRY_MAX_MS,
  type LeaseOptions,
  microTime,
  NODE_LEASE_NAMESPACE,
  renewLease,
  runLease,
} from "./lease.ts";
export {
  MAX_PODS,
  machineResourceList,
  machineResources,
  type NodeIdentity,
  type NodeResourceList,
  nodeObject,
  nodeStatus,
} from "./node-object.ts";
