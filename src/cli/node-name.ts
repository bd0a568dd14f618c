/** The Node name an agent takes unless told: this machine's hostname, or "setpoint". */
import { hostname } from "node:os";

export function defaultNodeName(): string {
  const h = hostname().toLowerCase();
  return /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(h) ? h : "setpoint";
}
