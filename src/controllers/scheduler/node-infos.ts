/**
 * What is placed on each node, kept incrementally: the summed requests of the
 * Pods bound (or assumed bound) to it, their count, the host ports they hold
 * and how many of each controller's Pods it runs. Pods are added from the Pod
 * informer's events and, between the scheduler's decision and the informer
 * seeing the binding, as assumed: the scheduler counts a Pod it has just
 * placed at once, so two decisions never share the same free room.
 *
 * A Pod counts while it is bound and not terminated (Succeeded or Failed);
 * terminating Pods still count, as in Kubernetes.
 */
import type { Pod } from "@setpoint/api";
import { nonZeroRequests, podRequests, type ResourceList } from "./resources.ts";

/** One host port a Pod holds: protocol, port and host IP ("" for every address). */
export interface HostPort {
  protocol: string;
  port: number;
  ip: string;
}

/** The placed Pod, as its node's sums hold it. */
interface Placement {
  node: string;
  requests: ResourceList;
  nonZero: { cpu: number; memory: number };
  ports: HostPort[];
  owner: string | undefined;
  /** Placed by the scheduler, not yet seen bound by the informer. */
  assumed: boolean;
}

export interface NodeUsage {
  requested: ResourceList;
  nonZero: { cpu: number; memory: number };
  pods: number;
  /** Host ports by `protocol/port/ip`, with how many Pods hold each. */
  ports: Map<string, number>;
  /** Pods per controller UID. */
  owners: Map<string, number>;
}

/** The UID of the Pod's controller, if it has one. */
export function controllerUid(pod: Pod): string | undefined {
  return pod.metadata.ownerReferences?.find((r) => r.controller)?.uid;
}

/** The host ports a Pod asks for (containers' ports with a hostPort). */
export function hostPorts(pod: Pod): HostPort[] {
  const out: HostPort[] = [];
  for (const c of pod.spec?.containers ?? []) {
    for (const p of c.ports ?? []) {
      if (!p.hostPort) continue;
      const ip = p.hostIP && p.hostIP !== "0.0.0.0" ? p.hostIP : "";
      out.push({ protocol: p.protocol ?? "TCP", port: p.hostPort, ip });
    }
  }
  return out;
}

function isTerminated(pod: Pod): boolean {
  return pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed";
}

export class NodeInfos {
  private readonly placed = new Map<string, Placement>();
  private readonly usage = new Map<string, NodeUsage>();

  /** What is placed on `node` (empty when nothing is). */
  get(node: string): NodeUsage {
    let u = this.usage.get(node);
    if (!u) {
      u = {
        requested: {},
        nonZero: { cpu: 0, memory: 0 },
        pods: 0,
        ports: new Map(),
        owners: new Map(),
      };
      this.usage.set(node, u);
    }
    return u;
  }

  /** Whether the scheduler has placed this Pod (by UID) and not yet seen the binding. */
  isAssumed(uid: string): boolean {
    return this.placed.get(uid)?.assumed === true;
  }

  /** Counts a Pod the scheduler has just placed on `node`. */
  assume(pod: Pod, node: string): void {
    this.set(pod, node, true);
  }

  /** Stops counting a Pod (its binding failed, or it is gone). */
  forget(uid: string): void {
    const p = this.placed.get(uid);
    if (!p) return;
    this.placed.delete(uid);
    this.apply(p, -1);
  }

  /** Follows the informer: a Pod added or updated. */
  observe(pod: Pod): void {
    const uid = pod.metadata.uid ?? "";
    const node = pod.spec?.nodeName;
    if (isTerminated(pod)) {
      this.forget(uid);
      return;
    }
    if (!node) return; // unbound: keep an assumption, if any
    const p = this.placed.get(uid);
    if (p && !p.assumed && p.node === node) return;
    this.set(pod, node, false);
  }

  private set(pod: Pod, node: string, assumed: boolean): void {
    const uid = pod.metadata.uid ?? "";
    this.forget(uid);
    const p: Placement = {
      node,
      requests: podRequests(pod),
      nonZero: nonZeroRequests(pod),
      ports: hostPorts(pod),
      owner: controllerUid(pod),
      assumed,
    };
    this.placed.set(uid, p);
    this.apply(p, 1);
  }

  private apply(p: Placement, sign: 1 | -1): void {
    const u = this.get(p.node);
    for (const [k, v] of Object.entries(p.requests))
      u.requested[k] = (u.requested[k] ?? 0) + sign * v;
    u.nonZero.cpu += sign * p.nonZero.cpu;
    u.nonZero.memory += sign * p.nonZero.memory;
    u.pods += sign;
    for (const hp of p.ports) bump(u.ports, `${hp.protocol}/${hp.port}/${hp.ip}`, sign);
    if (p.owner) bump(u.owners, p.owner, sign);
  }
}

function bump(m: Map<string, number>, key: string, by: number): void {
  const n = (m.get(key) ?? 0) + by;
  if (n <= 0) m.delete(key);
  else m.set(key, n);
}
