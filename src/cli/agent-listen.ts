/**
 * Where a node agent's authenticated endpoint listens by default: the kubelet's
 * port, on the loopback address (`setpoint agent --secure-listen`, `setpoint up
 * --agent-listen`).
 */
export const DEFAULT_AGENT_SECURE_LISTEN = "127.0.0.1:10250";
