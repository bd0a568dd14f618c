/**
 * The monitors' events applied to the ownership graph (graph.ts), and which
 * objects they make worth a look: a dependent whose owner may be gone or waiting,
 * an owner being deleted with `orphan` or `foregroundDeletion`, and an owner whose
 * last blocking dependent went away. Handlers record and enqueue only; the
 * reconcile does the rest.
 */
import type { GraphNode } from "./graph.ts";
import { type Graph, isDeletingDependents, isOrphaning, referenceTo, sameOwners } from "./graph.ts";
import type { Monitor, MonitorSink } from "./monitors.ts";

/** Every CustomResourceDefinition change asks for a discovery pass. */
export const CRD_RESOURCE = "customresourcedefinitions.apiextensions.k8s.io";

export interface GraphEventsTarget {
  /** Looks at the object with this UID (soon, once). */
  enqueue(uid: string): void;
  /** Discovers the served kinds again soon. */
  requestDiscovery(): void;
}

export class GraphEvents implements MonitorSink {
  constructor(
    private readonly graph: Graph,
    private readonly target: GraphEventsTarget,
  ) {}

  added(node: GraphNode): void {
    this.upserted(node);
  }

  updated(node: GraphNode): void {
    this.upserted(node);
  }

  deleted(node: GraphNode): void {
    if (node.resource === CRD_RESOURCE) this.target.requestDiscovery();
    const held = this.graph.get(node.uid);
    if (held && held.resource === node.resource) this.removeNode(node.uid);
  }

  /** Drops nodes of a (re)started monitor's resource that its first list did not hold. */
  synced(m: Monitor): void {
    for (const uid of this.graph.uidsOf(m.key)) {
      const n = this.graph.get(uid);
      if (!n) continue;
      const held = m.informer.get(n.name, n.namespace || undefined);
      if (held?.metadata.uid !== uid) this.removeNode(uid);
    }
  }

  /** Forgets every node of a monitor that was stopped for good. */
  forget(m: Monitor): void {
    for (const uid of this.graph.uidsOf(m.key)) this.removeNode(uid);
  }

  private upserted(node: GraphNode): void {
    if (!node.uid) return;
    // Initial-list CRDs too: one created between a discovery pass and the first list of
    // the CRD monitor arrives as "initial" yet was never discovered (one debounced pass).
    if (node.resource === CRD_RESOURCE) this.target.requestDiscovery();
    const old = this.graph.upsert(node);
    // As a dependent: look at it when an owner may be gone or waiting.
    if (node.owners.length > 0 && !node.deleting) {
      const changed = !old || !sameOwners(old.owners, node.owners) || old.deleting;
      if (changed && this.needsAttention(node)) this.target.enqueue(node.uid);
    }
    // As an owner: orphan or delete dependents.
    if (isOrphaning(node)) this.target.enqueue(node.uid);
    if (isDeletingDependents(node)) {
      this.target.enqueue(node.uid);
      if (!old || !isDeletingDependents(old)) {
        for (const dep of this.graph.dependentsOf(node.uid)) {
          if (!dep.deleting) this.target.enqueue(dep.uid);
        }
      }
    }
    // References dropped or unblocked: an owner waiting on this object may be done.
    if (old) {
      for (const ref of old.owners) {
        const now = referenceTo(node, ref.uid);
        if (!now || (ref.blockOwnerDeletion === true && now.blockOwnerDeletion !== true)) {
          this.enqueueIfDeletingDependents(ref.uid);
        }
      }
    }
  }

  private removeNode(uid: string): void {
    const old = this.graph.remove(uid);
    if (!old) return;
    for (const dep of this.graph.dependentsOf(uid)) this.target.enqueue(dep.uid);
    for (const ref of old.owners) this.enqueueIfDeletingDependents(ref.uid);
  }

  /** Whether some owner of `node` is not present and live in the graph. */
  private needsAttention(node: GraphNode): boolean {
    for (const ref of node.owners) {
      const owner = this.graph.get(ref.uid);
      if (!owner || owner.deleting || owner.name !== ref.name || owner.kind !== ref.kind) {
        return true;
      }
      // A namespaced owner must live in the dependent's namespace.
      if (owner.namespace !== "" && owner.namespace !== node.namespace) return true;
    }
    return false;
  }

  private enqueueIfDeletingDependents(uid: string): void {
    const owner = this.graph.get(uid);
    if (owner && isDeletingDependents(owner)) this.target.enqueue(uid);
  }
}
