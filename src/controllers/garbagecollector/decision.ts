/**
 * What the garbage collector does with an object, decided from the graph and the
 * state of its owners; carrying it out is operations.ts's.
 *
 * A dependent (an object not being deleted, with owner references): each reference
 * is classified: an owner that exists (same UID, name, kind and namespace) is solid;
 * one that is gone, or whose name now belongs to another UID, is dangling; one being
 * deleted in foreground is waiting. With a solid owner, dangling and waiting
 * references are removed; without one, the object is deleted (Foreground when an
 * owner waits and it has dependents, breaking the cycle first when one of those
 * dependents waits on its own; else with the policy its own finalizers ask for).
 * A cluster-scoped object naming a namespaced owner is invalid and left alone; an
 * owner of a kind not served (yet) leaves the object until discovery changes.
 *
 * An owner being deleted: with `orphan`, every dependent loses its reference to it,
 * then the finalizer goes; with `foregroundDeletion`, once no dependent with
 * `blockOwnerDeletion` is left, the finalizer goes.
 */
import type { OwnerReference } from "@setpoint/api";
import { parseGroupVersion, type ReconcileContext, type ServedResource } from "@setpoint/runtime";
import {
  FINALIZER_FOREGROUND,
  FINALIZER_ORPHAN,
  type Graph,
  type GraphNode,
  isDeletingDependents,
  isOrphaning,
  referenceTo,
} from "./graph.ts";
import type { Policy } from "./operations.ts";
import { describeRef, type OwnerState } from "./owner-lookup.ts";

/** An object's owner references, sorted by what they point at. */
export type Classification =
  | { kind: "invalid"; message: string }
  | { kind: "unresolved"; reason: string }
  | { kind: "retry" }
  | {
      kind: "classified";
      solid: OwnerReference[];
      dangling: OwnerReference[];
      waiting: OwnerReference[];
    };

/** What to do with a dependent once its owners are classified. */
export type DependentDecision =
  | { kind: "keep" }
  | { kind: "remove-references"; uids: ReadonlySet<string> }
  | { kind: "delete"; policy: Policy; unblockFirst: boolean };

/** What to do with an owner being deleted. */
export type OwnerDecision =
  | { kind: "none" }
  | { kind: "orphan"; dependents: GraphNode[] }
  | { kind: "remove-finalizer"; finalizer: string }
  | { kind: "wait-for"; blocking: GraphNode[] };

/** Looks up the state of one owner reference. */
export type OwnerStateOf = (
  node: GraphNode,
  ref: OwnerReference,
  served: ServedResource,
  ns: string,
  ctx: ReconcileContext,
) => Promise<OwnerState>;

/** The policy to delete `n` with: the one its own finalizers ask for, else Background. */
export function policyOf(n: GraphNode): Policy {
  if (n.finalizers.includes(FINALIZER_ORPHAN)) return "Orphan";
  if (n.finalizers.includes(FINALIZER_FOREGROUND)) return "Foreground";
  return "Background";
}

/** Classifies every owner reference of `node`; stops at the first that cannot be. */
export async function classifyOwners(
  node: GraphNode,
  servedKind: (group: string, kind: string) => ServedResource | undefined,
  stateOf: OwnerStateOf,
  ctx: ReconcileContext,
): Promise<Classification> {
  const solid: OwnerReference[] = [];
  const dangling: OwnerReference[] = [];
  const waiting: OwnerReference[] = [];
  for (const ref of node.owners) {
    const gv = parseGroupVersion(ref.apiVersion ?? "");
    if (!gv) return { kind: "unresolved", reason: `apiVersion ${ref.apiVersion} does not parse` };
    const served = servedKind(gv.group, ref.kind);
    if (!served)
      return { kind: "unresolved", reason: `${ref.kind} in ${ref.apiVersion} is not served` };
    if (!node.namespace && served.namespaced) {
      return {
        kind: "invalid",
        message: `ownerRef ${describeRef(ref, "")} does not exist in namespace "": a cluster-scoped object cannot have a namespaced owner`,
      };
    }
    const ns = served.namespaced ? node.namespace : "";
    const state = await stateOf(node, ref, served, ns, ctx);
    if (state === "retry") return { kind: "retry" };
    if (state === "solid") solid.push(ref);
    else if (state === "waiting") waiting.push(ref);
    else dangling.push(ref);
  }
  return { kind: "classified", solid, dangling, waiting };
}

/** What to do with a dependent whose owner references are `c`. */
export function decideDependent(
  node: GraphNode,
  c: { solid: OwnerReference[]; dangling: OwnerReference[]; waiting: OwnerReference[] },
  graph: Graph,
): DependentDecision {
  const { solid, dangling, waiting } = c;
  if (solid.length > 0) {
    if (dangling.length === 0 && waiting.length === 0) return { kind: "keep" };
    return {
      kind: "remove-references",
      uids: new Set([...dangling, ...waiting].map((r) => r.uid)),
    };
  }
  if (waiting.length > 0 && graph.hasDependents(node.uid)) {
    // Break cycles: when one of our dependents itself waits on its dependents, it
    // must not block on us.
    const unblockFirst = graph.dependentsOf(node.uid).some(isDeletingDependents);
    return { kind: "delete", policy: "Foreground", unblockFirst };
  }
  return { kind: "delete", policy: policyOf(node), unblockFirst: false };
}

/** What to do with `node`, being deleted, for its dependents. */
export function decideOwner(node: GraphNode, graph: Graph): OwnerDecision {
  if (isOrphaning(node)) return { kind: "orphan", dependents: graph.dependentsOf(node.uid) };
  if (!isDeletingDependents(node)) return { kind: "none" }; // its removal will be seen
  const blocking = graph
    .dependentsOf(node.uid)
    .filter((d) => referenceTo(d, node.uid)?.blockOwnerDeletion === true);
  if (blocking.length === 0) return { kind: "remove-finalizer", finalizer: FINALIZER_FOREGROUND };
  return { kind: "wait-for", blocking };
}
