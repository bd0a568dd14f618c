/**
 * The garbage collector's writes, each safe against a stale copy of the object:
 * a DELETE with preconditions on the UID and resourceVersion (read again once on
 * a conflict), and JSON patches that test the object's UID and each position they
 * change (a failed test retries the key, by when the monitor has the new state).
 */
import type { KubeObject } from "@setpoint/api";
import {
  isConflict,
  isInvalid,
  isNotFound,
  mapLimit,
  type ReconcileContext,
} from "@setpoint/runtime";
import { type GraphNode, sameOwners } from "./graph.ts";

/** The propagationPolicy of a delete the collector sends. */
export type Policy = "Orphan" | "Foreground" | "Background";

interface JsonPatchOp {
  op: "test" | "remove" | "replace";
  path: string;
  value?: unknown;
}

/** The type of a node, as the client names it. */
export function typeOfNode(n: GraphNode): { apiVersion: string; kind: string } {
  return { apiVersion: n.apiVersion, kind: n.kind };
}

/** A node as an object reference for Events. */
export function objectOf(n: GraphNode): KubeObject {
  const metadata: KubeObject["metadata"] = { name: n.name, uid: n.uid };
  if (n.namespace) metadata.namespace = n.namespace;
  return { apiVersion: n.apiVersion, kind: n.kind, metadata };
}

/**
 * Deletes `node` with `policy`, if it is still the object that was judged: same UID
 * and resourceVersion; after a conflict, same UID and the same owner references.
 */
export async function deleteObject(
  node: GraphNode,
  policy: Policy,
  ctx: ReconcileContext,
): Promise<void> {
  const type = typeOfNode(node);
  const ns = node.namespace || undefined;
  try {
    await ctx.client.delete(type, node.name, ns, {
      propagationPolicy: policy,
      preconditions: { uid: node.uid, resourceVersion: node.resourceVersion },
    });
    ctx.log.debug({ policy }, "deleted object whose owners are gone");
    return;
  } catch (e) {
    if (isNotFound(e)) return;
    if (!isConflict(e)) throw e;
  }
  // Changed since the monitor saw it (or replaced by a new object of that name):
  // read it once and delete only if its owners are still the ones judged gone.
  let live: KubeObject;
  try {
    live = await ctx.client.get<KubeObject>(type, node.name, ns, { metadataOnly: true });
  } catch (e) {
    if (isNotFound(e)) return;
    throw e;
  }
  if (live.metadata.uid !== node.uid) return;
  if (!sameOwners(live.metadata.ownerReferences, node.owners)) return; // its update is on its way
  try {
    await ctx.client.delete(type, node.name, ns, {
      propagationPolicy: policy,
      preconditions: { uid: node.uid },
    });
  } catch (e) {
    if (!isNotFound(e) && !isConflict(e)) throw e;
  }
}

/** Removes the references to `uids` from `node` (a JSON patch that tests what it removes). */
export async function removeReferences(
  node: GraphNode,
  uids: ReadonlySet<string>,
  ctx: ReconcileContext,
): Promise<void> {
  const ops: JsonPatchOp[] = [{ op: "test", path: "/metadata/uid", value: node.uid }];
  for (let i = node.owners.length - 1; i >= 0; i--) {
    if (!uids.has(node.owners[i].uid)) continue;
    ops.push(
      { op: "test", path: `/metadata/ownerReferences/${i}/uid`, value: node.owners[i].uid },
      { op: "remove", path: `/metadata/ownerReferences/${i}` },
    );
  }
  if (ops.length === 1) return;
  await jsonPatch(node, ops, ctx);
}

/** Removes `owner`'s reference from each of `dependents`, `concurrency` at a time. */
export async function orphanDependents(
  owner: GraphNode,
  dependents: readonly GraphNode[],
  concurrency: number,
  ctx: ReconcileContext,
): Promise<void> {
  const uids = new Set([owner.uid]);
  await mapLimit([...dependents], concurrency, (dep) => removeReferences(dep, uids, ctx));
}

/** Sets blockOwnerDeletion to false on every reference of `node` that has it. */
export async function unblockReferences(node: GraphNode, ctx: ReconcileContext): Promise<void> {
  const ops: JsonPatchOp[] = [{ op: "test", path: "/metadata/uid", value: node.uid }];
  node.owners.forEach((r, i) => {
    if (r.blockOwnerDeletion !== true) return;
    ops.push(
      { op: "test", path: `/metadata/ownerReferences/${i}/uid`, value: r.uid },
      { op: "replace", path: `/metadata/ownerReferences/${i}/blockOwnerDeletion`, value: false },
    );
  });
  if (ops.length > 1) await jsonPatch(node, ops, ctx);
}

/** Removes `finalizer` from `node` (testing its position). */
export async function removeFinalizer(
  node: GraphNode,
  finalizer: string,
  ctx: ReconcileContext,
): Promise<void> {
  const i = node.finalizers.indexOf(finalizer);
  if (i < 0) return;
  await jsonPatch(
    node,
    [
      { op: "test", path: "/metadata/uid", value: node.uid },
      { op: "test", path: `/metadata/finalizers/${i}`, value: finalizer },
      { op: "remove", path: `/metadata/finalizers/${i}` },
    ],
    ctx,
  );
  ctx.log.info({ finalizer }, "removed finalizer");
}

/**
 * Sends a JSON patch built from the monitor's copy. A failed test (422) means the
 * copy is stale: the error retries the key with backoff, by which time the
 * monitor has the object's new state. A vanished object needs nothing.
 */
async function jsonPatch(
  node: GraphNode,
  ops: JsonPatchOp[],
  ctx: ReconcileContext,
): Promise<void> {
  try {
    await ctx.client.patch(typeOfNode(node), node.name, node.namespace || undefined, ops, {
      type: "json",
    });
  } catch (e) {
    if (isNotFound(e)) return;
    if (isInvalid(e) || isConflict(e)) {
      throw new Error(`${node.kind} ${node.name} changed since it was read; looking again`, {
        cause: e,
      });
    }
    throw e;
  }
}
