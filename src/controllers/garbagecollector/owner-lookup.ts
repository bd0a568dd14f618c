/**
 * Whether an owner a dependent names is there. The graph is the only source of
 * truth about existence: "is owner UID X still there" is a lookup, never a GET per
 * dependent. An owner absent from the graph counts as gone once its kind's monitor
 * has seen the store at least up to the dependent's own resourceVersion (storage
 * revisions are global), so a fresh dependent of a fresh owner is never mistaken
 * for an orphan; only when that cannot be told (the owner's kind had no activity
 * since) is the owner read once, and an absent answer remembered by UID.
 */
import type { KubeObject, OwnerReference } from "@setpoint/api";
import {
  compareResourceVersions,
  isNotFound,
  type ReconcileContext,
  type ServedResource,
} from "@setpoint/runtime";
import { FINALIZER_FOREGROUND, type Graph, type GraphNode, isDeletingDependents } from "./graph.ts";
import type { Monitors } from "./monitors.ts";
import { objectOf } from "./operations.ts";

/** UIDs of owners verified absent with a read, remembered (least recently added dropped first). */
export const ABSENT_OWNER_CACHE_SIZE = 8192;
/** Longest a reconcile waits for an owner's monitor to sync before looking again later (ms). */
export const MONITOR_SYNC_WAIT_MS = 5_000;

/**
 * What an owner reference points at: an owner that exists (solid), one being
 * deleted in foreground (waiting), none or another object (dangling), or not
 * known yet (retry: its monitor has not synced).
 */
export type OwnerState = "solid" | "waiting" | "dangling" | "retry";

/** The reference as the Warning Events of Kubernetes' collector print it. */
export function describeRef(ref: OwnerReference, namespace: string): string {
  return `[${ref.apiVersion}/${ref.kind}, namespace: ${namespace}, name: ${ref.name}, uid: ${ref.uid}]`;
}

export class OwnerLookup {
  private readonly absent = new Map<string, true>();

  constructor(
    private readonly graph: Graph,
    private readonly monitors: Monitors,
  ) {}

  /** Whether the owner `ref` names (of kind `served`, in namespace `ns`) exists, waits, or is gone. */
  async state(
    node: GraphNode,
    ref: OwnerReference,
    served: ServedResource,
    ns: string,
    ctx: ReconcileContext,
  ): Promise<OwnerState> {
    let owner = this.graph.get(ref.uid);
    if (!owner && !this.absent.has(ref.uid)) {
      const monitor = this.monitors.forKind(served.group, served.kind);
      if (monitor && !monitor.informer.hasSynced()) {
        const bound = AbortSignal.any([ctx.signal, AbortSignal.timeout(MONITOR_SYNC_WAIT_MS)]);
        try {
          await monitor.informer.waitForSync(bound);
        } catch {
          return "retry";
        }
        owner = this.graph.get(ref.uid);
      }
      if (!owner) {
        const seenUpTo = monitor?.informer.resourceVersion ?? "";
        const caughtUp = (compareResourceVersions(seenUpTo, node.resourceVersion) ?? -1) >= 0;
        if (!caughtUp) return this.verify(ref, served, ns, ctx);
      }
    }
    if (!owner) return "dangling";
    if (owner.group !== served.group || owner.kind !== ref.kind || owner.name !== ref.name) {
      return "dangling"; // the UID belongs to another object: this owner does not exist
    }
    if (owner.namespace !== ns) {
      ctx.recorder.warning(
        objectOf(node),
        "OwnerRefInvalidNamespace",
        `ownerRef ${describeRef(ref, ns)} does not exist in namespace "${ns}"`,
      );
      return "dangling";
    }
    return isDeletingDependents(owner) ? "waiting" : "solid";
  }

  /** Reads an owner the monitors cannot vouch for (its kind saw no change since the dependent's). */
  private async verify(
    ref: OwnerReference,
    served: ServedResource,
    ns: string,
    ctx: ReconcileContext,
  ): Promise<"solid" | "waiting" | "dangling"> {
    try {
      const live = await ctx.client.get<KubeObject>(
        { apiVersion: served.apiVersion, kind: served.kind },
        ref.name,
        ns || undefined,
        { metadataOnly: true },
      );
      if (live.metadata.uid === ref.uid) {
        const deletingDependents =
          Boolean(live.metadata.deletionTimestamp) &&
          (live.metadata.finalizers ?? []).includes(FINALIZER_FOREGROUND);
        return deletingDependents ? "waiting" : "solid";
      }
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    this.rememberAbsent(ref.uid);
    return "dangling";
  }

  private rememberAbsent(uid: string): void {
    this.absent.set(uid, true);
    if (this.absent.size > ABSENT_OWNER_CACHE_SIZE) {
      const first = this.absent.keys().next().value;
      if (first !== undefined) this.absent.delete(first);
    }
  }
}
