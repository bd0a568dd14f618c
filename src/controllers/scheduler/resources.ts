/**
 * What a Pod asks of a node and what a Node offers, as numbers: cpu in
 * millicores, every other resource in its own unit (bytes for memory and
 * ephemeral-storage, a count for pods and extended resources).
 *
 * A Pod's request is Kubernetes' effective request: the larger of its
 * containers' sum (with restartable init containers, the sidecars, added) and
 * each init container's own request (plus the sidecars started before it),
 * plus the Pod's overhead. A resource a container only limits is requested at
 * its limit, as the API server's defaulting does.
 */
import type { Container, Node, Pod } from "@setpoint/api";
import { parseQuantity } from "@setpoint/api";

export type ResourceList = Record<string, number>;

/** The CPU and memory a container is counted with for scoring when it requests none (Kubernetes' non-zero defaults). */
export const DEFAULT_MILLI_CPU_REQUEST = 100;
export const DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024;

/** A quantity of a resource as the scheduler counts it (cpu in millicores, rounded up). */
export function amount(resource: string, q: string | number | undefined): number {
  const v = parseQuantity(q) ?? 0;
  return resource === "cpu" ? Math.ceil(Math.round(v * 1e9) / 1e6) : Math.ceil(v);
}

function containerRequests(c: Container): ResourceList {
  const out: ResourceList = {};
  const requests = c.resources?.requests ?? {};
  const limits = c.resources?.limits ?? {};
  for (const name of new Set([...Object.keys(requests), ...Object.keys(limits)])) {
    const q = requests[name] ?? limits[name];
    out[name] = amount(name, q as string | number | undefined);
  }
  return out;
}

function add(into: ResourceList, r: ResourceList): void {
  for (const [k, v] of Object.entries(r)) into[k] = (into[k] ?? 0) + v;
}

function max(into: ResourceList, r: ResourceList): void {
  for (const [k, v] of Object.entries(r)) into[k] = Math.max(into[k] ?? 0, v);
}

/** The Pod's effective requests (no entry for a resource it does not request). */
export function podRequests(pod: Pod): ResourceList {
  const total: ResourceList = {};
  for (const c of pod.spec?.containers ?? []) add(total, containerRequests(c));
  const sidecars: ResourceList = {};
  const initMax: ResourceList = {};
  for (const c of pod.spec?.initContainers ?? []) {
    const r = containerRequests(c);
    if (c.restartPolicy === "Always") {
      add(sidecars, r);
      add(total, r);
      max(initMax, { ...sidecars });
    } else {
      const during = { ...sidecars };
      add(during, r);
      max(initMax, during);
    }
  }
  max(total, initMax);
  for (const [k, q] of Object.entries(pod.spec?.overhead ?? {})) {
    total[k] = (total[k] ?? 0) + amount(k, q as string | number);
  }
  return total;
}

/** CPU (millicores) and memory (bytes) with Kubernetes' defaults for containers requesting none, for scoring. */
export function nonZeroRequests(pod: Pod): { cpu: number; memory: number } {
  let cpu = 0;
  let memory = 0;
  for (const c of pod.spec?.containers ?? []) {
    const r = containerRequests(c);
    cpu += r.cpu || DEFAULT_MILLI_CPU_REQUEST;
    memory += r.memory || DEFAULT_MEMORY_REQUEST;
  }
  return { cpu, memory };
}

/** What the Node offers Pods: status.allocatable, else status.capacity. */
export function allocatable(node: Node): ResourceList {
  const cached = parsedAllocatable.get(node);
  if (cached) return cached;
  const list = node.status?.allocatable ?? node.status?.capacity ?? {};
  const out: ResourceList = {};
  for (const [k, q] of Object.entries(list)) out[k] = amount(k, q as string | number);
  parsedAllocatable.set(node, out);
  return out;
}

/**
 * Each Node object's allocatable, parsed once: the informer replaces a Node's
 * object when it changes and never modifies one, so the scheduler does not
 * parse 100 nodes' quantities again for every Pod. Callers must not modify it.
 */
const parsedAllocatable = new WeakMap<Node, ResourceList>();
