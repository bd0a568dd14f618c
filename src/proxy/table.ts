/**
 * The service table: every Service with a cluster IP, its TCP ports (and node
 * ports) and each port's ready endpoints, built from Services and EndpointSlices
 * by a pure function. The forwarder serves it; the agent's Service environment
 * variables are read from it; it is saved on disk as it is.
 *
 * Static stability, as the gateway's table:
 * - a Service whose slices are missing (none listed) keeps the endpoints the
 *   previous table had for it; only present slices without a ready endpoint
 *   empty a port;
 * - a list without any Service at all (there is always `default/kubernetes`)
 *   is taken for a wrong answer: the previous table stays.
 * Headless Services (clusterIP None) and ExternalName Services get no entry.
 */
import type { EndpointSlice, Service } from "@setpoint/api";
import { type Endpoint, readyEndpoints, slicesByService } from "../dataplane/index.ts";

export const SERVICE_TABLE_VERSION = 1;

export interface ServicePortEntry {
  /** The Service port's name ("" when unnamed). */
  name: string;
  port: number;
  protocol: string;
  /** The node port, for NodePort and LoadBalancer Services. */
  nodePort?: number | undefined;
  /** Ready endpoints (Pod address and target port). */
  endpoints: Endpoint[];
}

export interface ServiceEntry {
  namespace: string;
  name: string;
  type: string;
  clusterIP: string;
  ports: ServicePortEntry[];
}

export interface ServiceTable {
  version: number;
  /** When the table was last built from the API (ISO time). */
  syncedAt: string;
  services: ServiceEntry[];
}

export interface ServiceTableInputs {
  services: readonly Service[];
  slices: readonly EndpointSlice[];
}

export interface ServiceTableResult {
  table: ServiceTable;
  /** What was kept from the previous table, for logs. */
  warnings: string[];
}

/**
 * Whether `count` Services would replace a table that has some with none: never
 * a true answer (there is always `default/kubernetes`), so the previous table
 * stays. The one rule both halves apply: the agent to what the API lists, the
 * proxy process to the table it reads from disk.
 */
export function emptiesTable(previous: ServiceTable | undefined, count: number): boolean {
  return count === 0 && previous !== undefined && previous.services.length > 0;
}

/** Whether a Service gets a virtual address: a cluster IP that is set and not None. */
export function hasClusterIP(svc: Service): boolean {
  const ip = svc.spec?.clusterIP;
  return Boolean(ip) && ip !== "None" && svc.spec?.type !== "ExternalName";
}

const key = (namespace: string, name: string) => `${namespace}/${name}`;

/** Builds the table from the API's objects, keeping `previous`'s endpoints where slices are missing. */
export function buildServiceTable(
  inputs: ServiceTableInputs,
  previous?: ServiceTable,
): ServiceTableResult {
  const warnings: string[] = [];
  if (emptiesTable(previous, inputs.services.length)) {
    warnings.push(
      "the API listed no Service at all (not even default/kubernetes); keeping the table",
    );
    return { table: previous as ServiceTable, warnings };
  }
  const before = new Map(
    (previous?.services ?? []).map((s) => [key(s.namespace, s.name), s] as const),
  );
  const slices = slicesByService(inputs.slices);
  const services: ServiceEntry[] = [];
  for (const svc of inputs.services) {
    if (!hasClusterIP(svc) || svc.metadata.deletionTimestamp) continue;
    const namespace = svc.metadata.namespace ?? "";
    const name = svc.metadata.name ?? "";
    const id = key(namespace, name);
    const mine = slices.get(id);
    const ports: ServicePortEntry[] = [];
    for (const sp of svc.spec?.ports ?? []) {
      const protocol = sp.protocol ?? "TCP";
      const portName = sp.name ?? "";
      let endpoints = readyEndpoints(mine, portName);
      if (!endpoints) {
        const kept = before
          .get(id)
          ?.ports.find((p) => p.name === portName && p.protocol === protocol)?.endpoints;
        endpoints = kept ?? [];
        if (kept) {
          warnings.push(
            `Service ${id} port ${sp.port}: no EndpointSlice; keeping its ${kept.length} previous endpoints`,
          );
        }
      }
      ports.push({
        name: portName,
        port: sp.port,
        protocol,
        ...(typeof sp.nodePort === "number" && sp.nodePort > 0 ? { nodePort: sp.nodePort } : {}),
        endpoints,
      });
    }
    services.push({
      namespace,
      name,
      type: svc.spec?.type ?? "ClusterIP",
      clusterIP: svc.spec?.clusterIP ?? "",
      ports,
    });
  }
  services.sort((a, b) =>
    a.namespace === b.namespace
      ? a.name < b.name
        ? -1
        : a.name > b.name
          ? 1
          : 0
      : a.namespace < b.namespace
        ? -1
        : 1,
  );
  return {
    table: { version: SERVICE_TABLE_VERSION, syncedAt: new Date().toISOString(), services },
    warnings,
  };
}

/** Whether two tables forward the same (ignoring when they were built). */
export function sameServices(a: ServiceTable | undefined, b: ServiceTable): boolean {
  if (!a) return false;
  return JSON.stringify(a.services) === JSON.stringify(b.services);
}
