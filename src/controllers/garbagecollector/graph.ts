/**
 * The garbage collector's ownership graph: one node per object of every
 * monitored kind (its identity, ownerReferences and deletion state, from
 * metadata-only informers), and the reverse edges: owner UID → the objects
 * that name it. Edges stay while a dependent names a UID, whether or not an
 * object with that UID exists, so the dependents of a vanished owner can be
 * found. Answers are in-memory: "does UID X exist", "who depends on X".
 */
import type { OwnerReference } from "@setpoint/api";

/** Finalizer asking the collector to strip dependents' references before the owner goes. */
export const FINALIZER_ORPHAN = "orphan";
/** Finalizer asking the collector to delete blocking dependents before the owner goes. */
export const FINALIZER_FOREGROUND = "foregroundDeletion";

/** One object as the collector sees it. */
export interface GraphNode {
  uid: string;
  /** The version it is read in ("v1", "example.com/v1"). */
  apiVersion: string;
  group: string;
  kind: string;
  /** "" for cluster-scoped objects. */
  namespace: string;
  name: string;
  resourceVersion: string;
  owners: readonly OwnerReference[];
  /** It has a deletionTimestamp. */
  deleting: boolean;
  finalizers: readonly string[];
  /** The monitored resource it came from ("configmaps", "widgets.example.com"). */
  resource: string;
}

/** Whether `node` is being deleted and waits for the collector to delete its dependents first. */
export function isDeletingDependents(node: GraphNode): boolean {
  return node.deleting && node.finalizers.includes(FINALIZER_FOREGROUND);
}

/** Whether `node` is being deleted and waits for the collector to orphan its dependents. */
export function isOrphaning(node: GraphNode): boolean {
  return node.deleting && node.finalizers.includes(FINALIZER_ORPHAN);
}

/** The reference `dependent` holds to `ownerUid`, if any. */
export function referenceTo(dependent: GraphNode, ownerUid: string): OwnerReference | undefined {
  return dependent.owners.find((r) => r.uid === ownerUid);
}

/** Whether two owner lists are the same references (order included). */
export function sameOwners(
  a: readonly OwnerReference[] | undefined,
  b: readonly OwnerReference[] | undefined,
): boolean {
  const x = a ?? [];
  const y = b ?? [];
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) {
    const p = x[i];
    const q = y[i];
    if (
      p.uid !== q.uid ||
      p.name !== q.name ||
      p.kind !== q.kind ||
      p.apiVersion !== q.apiVersion ||
      (p.controller ?? false) !== (q.controller ?? false) ||
      (p.blockOwnerDeletion ?? false) !== (q.blockOwnerDeletion ?? false)
    ) {
      return false;
    }
  }
  return true;
}

export class Graph {
  private readonly nodes = new Map<string, GraphNode>();
  /** owner UID → UIDs of the nodes that reference it. */
  private readonly dependents = new Map<string, Set<string>>();
  /** monitored resource → UIDs of its nodes. */
  private readonly byResource = new Map<string, Set<string>>();

  /** Nodes held. */
  get size(): number {
    return this.nodes.size;
  }

  get(uid: string): GraphNode | undefined {
    return this.nodes.get(uid);
  }

  /** Adds or replaces a node; returns the node it replaced. */
  upsert(node: GraphNode): GraphNode | undefined {
    const old = this.nodes.get(node.uid);
    if (old) {
      this.unlinkOwners(old);
      if (old.resource !== node.resource) this.setOf(this.byResource, old.resource, false, old.uid);
    }
    this.nodes.set(node.uid, node);
    for (const r of node.owners) this.setOf(this.dependents, r.uid, true, node.uid);
    this.setOf(this.byResource, node.resource, true, node.uid);
    return old;
  }

  /** Removes a node (its own references go; references to it stay); returns it. */
  remove(uid: string): GraphNode | undefined {
    const old = this.nodes.get(uid);
    if (!old) return undefined;
    this.unlinkOwners(old);
    this.setOf(this.byResource, old.resource, false, uid);
    this.nodes.delete(uid);
    return old;
  }

  /** The nodes that reference `ownerUid`. */
  dependentsOf(ownerUid: string): GraphNode[] {
    const uids = this.dependents.get(ownerUid);
    if (!uids) return [];
    const out: GraphNode[] = [];
    for (const uid of uids) {
      const n = this.nodes.get(uid);
      if (n) out.push(n);
    }
    return out;
  }

  /** Whether any node references `ownerUid`. */
  hasDependents(ownerUid: string): boolean {
    return (this.dependents.get(ownerUid)?.size ?? 0) > 0;
  }

  /** UIDs of the nodes of one monitored resource. */
  uidsOf(resource: string): string[] {
    return [...(this.byResource.get(resource) ?? [])];
  }

  private unlinkOwners(node: GraphNode): void {
    for (const r of node.owners) this.setOf(this.dependents, r.uid, false, node.uid);
  }

  private setOf(map: Map<string, Set<string>>, key: string, add: boolean, uid: string): void {
    let set = map.get(key);
    if (add) {
      if (!set) {
        set = new Set();
        map.set(key, set);
      }
      set.add(uid);
      return;
    }
    if (!set) return;
    set.delete(uid);
    if (set.size === 0) map.delete(key);
  }
}
