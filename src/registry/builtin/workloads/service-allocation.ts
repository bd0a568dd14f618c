/**
 * A Service's cluster IP and node ports, claimed as Kubernetes' allocators hand
 * them out: from a cluster IP range (default 127.100.0.0/16, which every process
 * on the machine reaches with no network setup) and a node port range (default
 * 30000-32767). Each address and port is its own claim (ClaimRules), so two
 * apiservers on one store never hand one out twice; a requested one is checked
 * against the range and taken only when free, with Kubernetes' messages; on
 * update the allocated values are kept when a client leaves them out, and the
 * fields a new type does not use are dropped (their claims are then released).
 */
import {
  errors,
  fieldErrors,
  type KubeObject,
  type StatusCause,
  type StatusError,
} from "@setpoint/api";
import type { ClaimRules, Claims } from "../../types.ts";

type Obj = Record<string, unknown>;

/** The ranges Services are given addresses and node ports from. */
export interface ServiceRanges {
  /** IPv4 CIDR of cluster IPs (default 127.100.0.0/16). */
  clusterIPRange: string;
  /** Node ports, "low-high" inclusive (default 30000-32767). */
  nodePortRange: string;
}

export const DEFAULT_SERVICE_RANGES: ServiceRanges = {
  clusterIPRange: "127.100.0.0/16",
  nodePortRange: "30000-32767",
};

/** Claim prefixes: one key per cluster IP and per node port. */
const IP_PREFIX = "serviceips/";
const PORT_PREFIX = "servicenodeports/";

/** Random picks tried before reading which addresses are free. */
const RANDOM_ATTEMPTS = 8;

interface IPRange {
  cidr: string;
  /** First and last address handed out (network and broadcast excluded). */
  first: number;
  last: number;
  /** Addresses at the start kept for requested IPs unless the rest is full (as Kubernetes does). */
  reserved: number;
}

interface PortRange {
  text: string;
  low: number;
  high: number;
}

function parseIPv4(s: string): number | undefined {
  const parts = s.split(".");
  if (parts.length !== 4) return undefined;
  let n = 0;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255 || (p.length > 1 && p.startsWith("0"))) {
      return undefined;
    }
    n = n * 256 + Number(p);
  }
  return n;
}

function formatIPv4(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");
}

/** Parses a CIDR such as 127.100.0.0/16; throws a plain Error naming what is wrong. */
export function parseClusterIPRange(cidr: string): IPRange {
  const [addr, bitsText] = cidr.split("/");
  const base = addr === undefined ? undefined : parseIPv4(addr);
  const bits = Number(bitsText);
  if (base === undefined || !/^\d+$/.test(bitsText ?? "") || bits < 8 || bits > 30) {
    throw new Error(`invalid service cluster IP range "${cidr}": want an IPv4 CIDR from /8 to /30`);
  }
  const size = 2 ** (32 - bits);
  const network = base - (base % size);
  const usable = size - 2;
  return {
    cidr: `${formatIPv4(network)}/${bits}`,
    first: network + 1,
    last: network + size - 2,
    reserved: Math.min(256, Math.max(16, Math.floor(usable / 16))),
  };
}

/** Parses "30000-32767"; throws a plain Error naming what is wrong. */
export function parseNodePortRange(text: string): PortRange {
  const m = /^(\d+)-(\d+)$/.exec(text.trim());
  const low = Number(m?.[1]);
  const high = Number(m?.[2]);
  if (!m || low < 1 || high > 65535 || low > high) {
    throw new Error(`invalid service node port range "${text}": want LOW-HIGH within 1-65535`);
  }
  return { text: `${low}-${high}`, low, high };
}

/** The first address of the range: the `kubernetes` Service's cluster IP. */
export function firstServiceIP(cidr: string): string {
  return formatIPv4(parseClusterIPRange(cidr).first);
}

function spec(obj: KubeObject): Obj {
  const s = obj.spec;
  if (s && typeof s === "object" && !Array.isArray(s)) return s as Obj;
  obj.spec = {};
  return obj.spec as Obj;
}

function ports(s: Obj): Obj[] {
  return Array.isArray(s.ports) ? (s.ports.filter((p) => p && typeof p === "object") as Obj[]) : [];
}

function usesNodePorts(s: Obj): boolean {
  if (s.type === "NodePort") return true;
  return s.type === "LoadBalancer" && s.allocateLoadBalancerNodePorts !== false;
}

function clusterIPsOf(s: Obj): string[] {
  if (Array.isArray(s.clusterIPs)) return s.clusterIPs.map(String).filter(Boolean);
  return typeof s.clusterIP === "string" && s.clusterIP ? [s.clusterIP] : [];
}

function invalid(obj: KubeObject, causes: StatusCause[]): StatusError {
  return errors.invalid("Service", obj.metadata.name ?? "", causes);
}

/** The claims a Service holds: its cluster IPs and node ports. */
function heldBy(obj: KubeObject): string[] {
  const s = spec(obj);
  const out = new Set<string>();
  for (const ip of clusterIPsOf(s)) if (ip !== "None") out.add(IP_PREFIX + ip);
  for (const p of ports(s)) {
    if (typeof p.nodePort === "number" && p.nodePort > 0) out.add(PORT_PREFIX + p.nodePort);
  }
  if (typeof s.healthCheckNodePort === "number" && s.healthCheckNodePort > 0) {
    out.add(PORT_PREFIX + s.healthCheckNodePort);
  }
  return [...out];
}

/** Numbers from `first` to `last` in an order starting at a random point. */
function* fromRandomStart(first: number, last: number): Generator<number> {
  const count = last - first + 1;
  const start = Math.floor(Math.random() * count);
  for (let i = 0; i < count; i++) yield first + ((start + i) % count);
}

/**
 * Claims one free value of [first, last] (names made by `name`): a few random
 * picks, then a scan of what is free from a random start; undefined when full.
 */
async function claimAny(
  claims: Claims,
  prefix: string,
  bands: readonly [number, number][],
  name: (n: number) => string,
): Promise<number | undefined> {
  for (const [first, last] of bands) {
    if (first > last) continue;
    for (let i = 0; i < RANDOM_ATTEMPTS; i++) {
      const n = first + Math.floor(Math.random() * (last - first + 1));
      if (await claims.claim(name(n))) return n;
    }
  }
  const taken = await claims.held(prefix);
  for (const [first, last] of bands) {
    if (first > last) continue;
    for (const n of fromRandomStart(first, last)) {
      if (taken.has(name(n))) continue;
      if (await claims.claim(name(n))) return n;
    }
  }
  return undefined;
}

/** Keeps on an update what was allocated and the client left out (Kubernetes' patchAllocatedValues). */
function keepAllocated(s: Obj, old: Obj): void {
  if (old.type === "ExternalName" || s.type === "ExternalName") return;
  if (clusterIPsOf(s).length === 0 && clusterIPsOf(old).length > 0) {
    s.clusterIP = old.clusterIP;
    s.clusterIPs = old.clusterIPs;
  }
  if (usesNodePorts(s) && usesNodePorts(old)) {
    const oldPorts = ports(old);
    for (const p of ports(s)) {
      if (p.nodePort !== undefined && p.nodePort !== 0) continue;
      const match =
        oldPorts.find(
          (o) => o.port === p.port && (o.protocol ?? "TCP") === (p.protocol ?? "TCP"),
        ) ?? (oldPorts.length === 1 && ports(s).length === 1 ? oldPorts[0] : undefined);
      if (match && typeof match.nodePort === "number") p.nodePort = match.nodePort;
    }
  }
  if (s.healthCheckNodePort === undefined && old.healthCheckNodePort !== undefined) {
    s.healthCheckNodePort = old.healthCheckNodePort;
  }
}

/** Drops what the type does not use (Kubernetes' dropTypeDependentFields, and ExternalName's IPs). */
function dropUnused(s: Obj, old: Obj | undefined): void {
  if (s.type === "ExternalName") {
    delete s.clusterIP;
    delete s.clusterIPs;
    delete s.ipFamilies;
    delete s.ipFamilyPolicy;
  }
  if (!usesNodePorts(s) && old && usesNodePorts(old)) {
    for (const p of ports(s)) delete p.nodePort;
  }
  const needsHealthCheck = s.type === "LoadBalancer" && s.externalTrafficPolicy === "Local";
  if (!needsHealthCheck) delete s.healthCheckNodePort;
}

async function allocateClusterIP(
  obj: KubeObject,
  s: Obj,
  old: Obj | undefined,
  range: IPRange,
  claims: Claims,
): Promise<void> {
  if (s.type === "ExternalName") return;
  if (typeof s.clusterIP === "string" && s.clusterIP && !Array.isArray(s.clusterIPs)) {
    s.clusterIPs = [s.clusterIP];
  }
  const ips = clusterIPsOf(s);
  if (ips.length > 0 && !s.clusterIP) s.clusterIP = ips[0];
  if (ips.length > 1) {
    throw invalid(obj, [
      fieldErrors.invalid("spec.clusterIPs", ips, "this cluster is single-stack (IPv4)"),
    ]);
  }
  for (const [i, family] of (Array.isArray(s.ipFamilies) ? s.ipFamilies : []).entries()) {
    if (family !== "IPv4") {
      throw invalid(obj, [
        fieldErrors.invalid(`spec.ipFamilies[${i}]`, family, "not configured on this cluster"),
      ]);
    }
  }
  s.ipFamilyPolicy ??= "SingleStack";
  s.ipFamilies = ["IPv4"];
  const oldIPs = old && old.type !== "ExternalName" ? clusterIPsOf(old) : [];
  const ip = ips[0];
  if (ip !== undefined && oldIPs.length > 0) {
    if (ip !== oldIPs[0]) {
      throw invalid(obj, [
        fieldErrors.invalid("spec.clusterIPs[0]", ip, "may not change once set"),
      ]);
    }
    return;
  }
  if (ip === "None") return;
  if (ip !== undefined) {
    const n = parseIPv4(ip);
    if (n === undefined) {
      throw invalid(obj, [
        fieldErrors.invalid(
          "spec.clusterIPs[0]",
          ip,
          "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        ),
      ]);
    }
    let why: string | undefined;
    if (n < range.first || n > range.last) {
      why = `the provided IP (${ip}) is not in the valid range. The range of valid IPs is ${range.cidr}`;
    } else if (!(await claims.claim(IP_PREFIX + ip))) {
      why = "provided IP is already allocated";
    }
    if (why) {
      throw invalid(obj, [
        fieldErrors.invalid("spec.clusterIPs", [ip], `failed to allocate IP ${ip}: ${why}`),
      ]);
    }
    return;
  }
  // The start of the range is kept for requested addresses while the rest has room.
  const split = range.first + range.reserved;
  const n = await claimAny(
    claims,
    IP_PREFIX,
    [
      [split, range.last],
      [range.first, Math.min(split - 1, range.last)],
    ],
    (x) => IP_PREFIX + formatIPv4(x),
  );
  if (n === undefined) throw errors.internal("failed to allocate a serviceIP: range is full");
  s.clusterIP = formatIPv4(n);
  s.clusterIPs = [s.clusterIP];
}

async function allocateNodePorts(
  obj: KubeObject,
  s: Obj,
  old: Obj | undefined,
  range: PortRange,
  claims: Claims,
): Promise<void> {
  const list = ports(s);
  if (!usesNodePorts(s)) {
    const i = list.findIndex((p) => p.nodePort !== undefined && p.nodePort !== 0);
    if (i >= 0) {
      throw invalid(obj, [
        fieldErrors.forbidden(
          `spec.ports[${i}].nodePort`,
          `may not be used when \`type\` is '${String(s.type)}'`,
        ),
      ]);
    }
    return;
  }
  const oldHeld = new Set(old ? heldBy({ metadata: {}, spec: old } as KubeObject) : []);
  // Ports of one Service with the same number share one node port (TCP and UDP, say).
  const mine = new Map<number, number>();
  for (const [i, p] of list.entries()) {
    if (typeof p.nodePort === "number" && p.nodePort > 0) {
      const port = p.nodePort;
      if (oldHeld.has(PORT_PREFIX + port) || [...mine.values()].includes(port)) continue;
      let why: string | undefined;
      if (port < range.low || port > range.high) {
        why = `provided port is not in the valid range. The range of valid ports is ${range.text}`;
      } else if (!(await claims.claim(PORT_PREFIX + port))) {
        why = "provided port is already allocated";
      }
      if (why) throw invalid(obj, [fieldErrors.invalid(`spec.ports[${i}].nodePort`, port, why)]);
      mine.set(typeof p.port === "number" ? p.port : -1 - i, port);
    }
  }
  for (const p of list) {
    if (typeof p.nodePort === "number" && p.nodePort > 0) continue;
    const shared = typeof p.port === "number" ? mine.get(p.port) : undefined;
    if (shared !== undefined) {
      p.nodePort = shared;
      continue;
    }
    const n = await claimAny(
      claims,
      PORT_PREFIX,
      [[range.low, range.high]],
      (x) => PORT_PREFIX + x,
    );
    if (n === undefined) throw errors.internal("failed to allocate a nodePort: range is full");
    p.nodePort = n;
    if (typeof p.port === "number") mine.set(p.port, n);
  }
  // A LoadBalancer that keeps traffic on the node gets a port for health checks.
  if (s.type !== "LoadBalancer" || s.externalTrafficPolicy !== "Local") return;
  const hc = s.healthCheckNodePort;
  if (typeof hc === "number" && hc > 0) {
    if (oldHeld.has(PORT_PREFIX + hc)) return;
    if (hc < range.low || hc > range.high || !(await claims.claim(PORT_PREFIX + hc))) {
      throw invalid(obj, [
        fieldErrors.invalid(
          "spec.healthCheckNodePort",
          hc,
          "failed to allocate requested HealthCheck NodePort",
        ),
      ]);
    }
    return;
  }
  const n = await claimAny(claims, PORT_PREFIX, [[range.low, range.high]], (x) => PORT_PREFIX + x);
  if (n === undefined) throw errors.internal("failed to allocate a nodePort: range is full");
  s.healthCheckNodePort = n;
}

/** The claim rules of Services over `ranges`; throws when a range does not parse. */
export function serviceClaims(ranges: ServiceRanges = DEFAULT_SERVICE_RANGES): ClaimRules {
  const ipRange = parseClusterIPRange(ranges.clusterIPRange);
  const portRange = parseNodePortRange(ranges.nodePortRange);
  return {
    prefixes: [IP_PREFIX, PORT_PREFIX],
    heldBy,
    async allocate(obj, old, claims) {
      const s = spec(obj);
      const oldSpec = old ? spec(old) : undefined;
      if (oldSpec) keepAllocated(s, oldSpec);
      dropUnused(s, oldSpec);
      await allocateClusterIP(obj, s, oldSpec, ipRange, claims);
      await allocateNodePorts(obj, s, oldSpec, portRange, claims);
    },
  };
}
