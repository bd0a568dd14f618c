/**
 * The Service environment variables a Pod's containers get, as the kubelet
 * makes them: for every Service with a cluster IP in the Pod's namespace (when
 * `enableServiceLinks`, the default) and always for `default/kubernetes`,
 * NAME_SERVICE_HOST, NAME_SERVICE_PORT (the first port),
 * NAME_SERVICE_PORT_PORTNAME for named ports, and the Docker-link variables
 * NAME_PORT, NAME_PORT_<port>_<PROTO>{,_PROTO,_PORT,_ADDR}. NAME is the
 * Service's name upper-cased with dashes as underscores. Read from the service
 * table, so a Pod started while the apiserver is away gets them too.
 */
import type { ServiceEntry, ServiceTable } from "./table.ts";

/** The namespace and name of the apiserver's Service. */
const MASTER = { namespace: "default", name: "kubernetes" };

function varName(s: string): string {
  return s.replaceAll("-", "_").toUpperCase();
}

function hostPort(ip: string, port: number): string {
  return ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`;
}

function serviceVars(svc: ServiceEntry, out: Record<string, string>): void {
  if (svc.ports.length === 0) return;
  const prefix = varName(svc.name);
  out[`${prefix}_SERVICE_HOST`] = svc.clusterIP;
  out[`${prefix}_SERVICE_PORT`] = String(svc.ports[0]!.port);
  for (const p of svc.ports) {
    if (p.name) out[`${prefix}_SERVICE_PORT_${varName(p.name)}`] = String(p.port);
  }
  for (const [i, p] of svc.ports.entries()) {
    const proto = (p.protocol || "TCP").toLowerCase();
    const url = `${proto}://${hostPort(svc.clusterIP, p.port)}`;
    if (i === 0) out[`${prefix}_PORT`] = url;
    const pp = `${prefix}_PORT_${p.port}_${proto.toUpperCase()}`;
    out[pp] = url;
    out[`${pp}_PROTO`] = proto;
    out[`${pp}_PORT`] = String(p.port);
    out[`${pp}_ADDR`] = svc.clusterIP;
  }
}

/** The Service variables of a Pod in `namespace`. */
export function serviceEnv(
  table: ServiceTable | undefined,
  namespace: string,
  enableServiceLinks = true,
): Record<string, string> {
  const out: Record<string, string> = {};
  if (!table) return out;
  let master: ServiceEntry | undefined;
  const names = new Set<string>();
  for (const svc of table.services) {
    if (svc.namespace === MASTER.namespace && svc.name === MASTER.name) {
      master = svc;
      if (namespace !== MASTER.namespace || !enableServiceLinks) continue;
    }
    if (!enableServiceLinks || svc.namespace !== namespace) continue;
    names.add(svc.name);
    serviceVars(svc, out);
  }
  if (master && !names.has(master.name)) serviceVars(master, out);
  return out;
}
