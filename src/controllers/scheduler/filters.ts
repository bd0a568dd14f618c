/**
 * Whether a Pod fits a node, checked in kube-scheduler's filter order, each
 * failure with the reason Kubernetes 1.32 words (a node reports its first
 * failing check; the resource check reports every short resource):
 *
 * 1. NodeUnschedulable: a cordoned node, unless the Pod tolerates
 *    node.kubernetes.io/unschedulable:NoSchedule: "node(s) were unschedulable";
 * 2. TaintToleration: the first NoSchedule or NoExecute taint the Pod does not
 *    tolerate: "node(s) had untolerated taint {KEY: VALUE}". A node that is not
 *    Ready is treated as carrying the not-ready (Ready False or absent) or
 *    unreachable (Ready Unknown) taint the node lifecycle controller gives it,
 *    also before that controller has done so;
 * 3. NodeAffinity: spec.nodeSelector and the required node affinity:
 *    "node(s) didn't match Pod's node affinity/selector";
 * 4. NodePorts: a host port (protocol, port, overlapping host IP) already
 *    held: "node(s) didn't have free ports for the requested pod ports";
 * 5. NodeResourcesFit: "Too many pods", "Insufficient cpu", "Insufficient
 *    memory", "Insufficient ephemeral-storage", "Insufficient NAME".
 *
 * Checks 1 to 3 cannot be helped by preempting Pods (UnschedulableAndUnresolvable
 * in Kubernetes' terms); 4 and 5 could be.
 */
import type {
  Node,
  NodeSelectorRequirement,
  NodeSelectorTerm,
  Pod,
  Taint,
  Toleration,
} from "@setpoint/api";
import {
  TAINT_NOT_READY,
  TAINT_UNREACHABLE,
  TAINT_UNSCHEDULABLE,
  tolerates,
} from "../nodelifecycle/taints.ts";
import type { HostPort, NodeUsage } from "./node-infos.ts";
import type { ResourceList } from "./resources.ts";

export const REASON_UNSCHEDULABLE = "node(s) were unschedulable";
export const REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector";
export const REASON_PORTS = "node(s) didn't have free ports for the requested pod ports";
export const REASON_TOO_MANY_PODS = "Too many pods";

/** Why a node does not fit; `resolvable` when preempting Pods could change that. */
export interface NodeFailure {
  reasons: string[];
  resolvable: boolean;
}

/** What the filters need of the Pod, computed once per attempt. */
export interface PodFacts {
  pod: Pod;
  requests: ResourceList;
  ports: HostPort[];
}

function readyStatus(node: Node): string | undefined {
  return node.status?.conditions?.find((c) => c.type === "Ready")?.status;
}

/**
 * Each Node object's effective taints, worked out once: the informer replaces a
 * Node's object when it changes and never modifies one, so the scheduler does
 * not look through 100 nodes' conditions again for every Pod.
 * Callers must not modify what it returns.
 */
const effective = new WeakMap<Node, Taint[]>();

/** The node's taints, with the not-ready or unreachable one when its Ready condition calls for it. */
export function effectiveTaints(node: Node): Taint[] {
  let taints = effective.get(node);
  if (taints === undefined) {
    taints = withReadinessTaint(node);
    effective.set(node, taints);
  }
  return taints;
}

function withReadinessTaint(node: Node): Taint[] {
  const taints = node.spec?.taints ?? [];
  const ready = readyStatus(node);
  if (ready === "True") return taints;
  const key = ready === "Unknown" ? TAINT_UNREACHABLE : TAINT_NOT_READY;
  if (taints.some((t) => t.key === key && t.effect === "NoSchedule")) return taints;
  return [...taints, { key, effect: "NoSchedule" }];
}

function tolerated(tolerations: readonly Toleration[], taint: Taint): boolean {
  return tolerations.some((t) => tolerates(t, taint));
}

function matchesRequirement(r: NodeSelectorRequirement, value: string | undefined): boolean {
  const values = r.values ?? [];
  switch (r.operator) {
    case "In":
      return value !== undefined && values.includes(value);
    case "NotIn":
      return value === undefined || !values.includes(value);
    case "Exists":
      return value !== undefined;
    case "DoesNotExist":
      return value === undefined;
    case "Gt":
    case "Lt": {
      if (value === undefined || values.length !== 1) return false;
      const have = Number.parseInt(value, 10);
      const want = Number.parseInt(values[0], 10);
      if (Number.isNaN(have) || Number.isNaN(want)) return false;
      return r.operator === "Gt" ? have > want : have < want;
    }
    default:
      return false;
  }
}

/** A node selector term: every expression on labels and every field (metadata.name) matches; an empty term matches nothing. */
export function matchesTerm(term: NodeSelectorTerm, node: Node): boolean {
  const exprs = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (exprs.length === 0 && fields.length === 0) return false;
  const labels = node.metadata.labels ?? {};
  for (const r of exprs) if (!matchesRequirement(r, labels[r.key])) return false;
  for (const r of fields) {
    const v = r.key === "metadata.name" ? node.metadata.name : undefined;
    if (!matchesRequirement(r, v)) return false;
  }
  return true;
}

/** spec.nodeSelector and requiredDuringSchedulingIgnoredDuringExecution. */
export function matchesNodeAffinity(pod: Pod, node: Node): boolean {
  const labels = node.metadata.labels ?? {};
  for (const [k, v] of Object.entries(pod.spec?.nodeSelector ?? {})) {
    if (labels[k] !== v) return false;
  }
  const required = pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (!required) return true;
  return (required.nodeSelectorTerms ?? []).some((t) => matchesTerm(t, node));
}

function portsConflict(wanted: readonly HostPort[], held: ReadonlyMap<string, number>): boolean {
  if (wanted.length === 0 || held.size === 0) return false;
  for (const key of held.keys()) {
    const [protocol, port, ip] = key.split("/");
    for (const w of wanted) {
      if (w.protocol !== protocol || String(w.port) !== port) continue;
      if (w.ip === "" || ip === "" || w.ip === ip) return true;
    }
  }
  return false;
}

/** The resources short on the node, as reasons (in Kubernetes' order: pods, cpu, memory, ephemeral-storage, the rest by name). */
export function insufficient(
  requests: ResourceList,
  alloc: ResourceList,
  usage: NodeUsage,
): string[] {
  const out: string[] = [];
  if ((alloc.pods ?? 0) < usage.pods + 1) out.push(REASON_TOO_MANY_PODS);
  const names = Object.keys(requests)
    .filter((n) => n !== "pods")
    .sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  for (const name of names) {
    const want = requests[name];
    if (!(want > 0)) continue;
    if (want > (alloc[name] ?? 0) - (usage.requested[name] ?? 0)) out.push(`Insufficient ${name}`);
  }
  return out;
}

function rank(resource: string): number {
  const i = ["cpu", "memory", "ephemeral-storage"].indexOf(resource);
  return i < 0 ? 3 : i;
}

/** Why the Pod does not fit the node; undefined when it does. */
export function checkNode(
  facts: PodFacts,
  node: Node,
  alloc: ResourceList,
  usage: NodeUsage,
): NodeFailure | undefined {
  const tolerations = facts.pod.spec?.tolerations ?? [];
  if (
    node.spec?.unschedulable &&
    !tolerated(tolerations, { key: TAINT_UNSCHEDULABLE, effect: "NoSchedule" })
  ) {
    return { reasons: [REASON_UNSCHEDULABLE], resolvable: false };
  }
  for (const taint of effectiveTaints(node)) {
    if (taint.effect !== "NoSchedule" && taint.effect !== "NoExecute") continue;
    if (!tolerated(tolerations, taint)) {
      return {
        reasons: [`node(s) had untolerated taint {${taint.key}: ${taint.value ?? ""}}`],
        resolvable: false,
      };
    }
  }
  if (!matchesNodeAffinity(facts.pod, node))
    return { reasons: [REASON_AFFINITY], resolvable: false };
  if (portsConflict(facts.ports, usage.ports)) return { reasons: [REASON_PORTS], resolvable: true };
  const short = insufficient(facts.requests, alloc, usage);
  if (short.length > 0) return { reasons: short, resolvable: true };
  return undefined;
}
