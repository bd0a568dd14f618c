/**
 * Controller references, as Kubernetes' ControllerRefManager keeps them: a
 * controller (a ReplicaSet, a Deployment, a Job...) claims the objects that
 * are its own. An object is its own when its controlling ownerReference names
 * the controller by UID; an orphan (no controlling owner) that matches the
 * controller's selector is adopted; an owned object whose labels stop matching
 * is released. Nothing is adopted or released by a controller being deleted.
 *
 * Adoption and release are merge patches that carry the object's
 * resourceVersion, so a concurrent change (another controller adopting the same
 * orphan) fails with a Conflict instead of being overwritten.
 */
import {
  isEverything,
  type KubeObject,
  type LabelSelector,
  labelSelectorFromMetav1,
  type MetaV1LabelSelector,
  matchesLabels,
  type OwnerReference,
} from "@setpoint/api";
import { isConflict, isNotFound, type ReconcileClient, type TypeRef } from "@setpoint/runtime";

/** Index of a shared informer: objects without a controlling owner, by namespace. */
export const ORPHAN_INDEX = "orphan-namespace";

/** The value ORPHAN_INDEX files an object under (its namespace when it has no controller). */
export function orphanIndex(o: KubeObject): string[] {
  const controlled = (o.metadata.ownerReferences ?? []).some((r) => r.controller === true);
  return controlled ? [] : [o.metadata.namespace ?? ""];
}

/** The controlling owner reference to `owner` (controller and blockOwnerDeletion set). */
export function controllerRefTo(owner: KubeObject): OwnerReference {
  return {
    apiVersion: owner.apiVersion ?? "",
    kind: owner.kind ?? "",
    name: owner.metadata.name ?? "",
    uid: owner.metadata.uid ?? "",
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** The writes claiming needs (a reconcile's client). */
export type PatchClient = Pick<ReconcileClient, "patch">;

export interface ClaimInput<T extends KubeObject> {
  owner: KubeObject;
  /** The kind of the claimed objects. */
  type: TypeRef;
  /** Objects whose controller is `owner` (by UID). */
  owned: readonly T[];
  /** Objects without a controller in the owner's namespace. */
  orphans: readonly T[];
  /** Whether an object's labels match the owner's selector. */
  matches(obj: T): boolean;
  client: PatchClient;
  /** Finalizers an adopted object gets in the same patch (a Job's Pods: its tracking finalizer). */
  adoptFinalizers?: readonly string[];
}

/** What claiming found: the owner's objects after adoption and release. */
export interface Claimed<T extends KubeObject> {
  claimed: T[];
  adopted: number;
  released: number;
}

/**
 * Adopts matching orphans and releases owned objects that no longer match.
 * Objects being deleted are neither adopted nor released (an owned one stays
 * claimed). An object that changed meanwhile (Conflict) or is gone is skipped;
 * its next event brings the owner back.
 */
export async function claimObjects<T extends KubeObject>(
  input: ClaimInput<T>,
): Promise<Claimed<T>> {
  const { owner, type, client } = input;
  const ownerUid = owner.metadata.uid ?? "";
  const deleting = owner.metadata.deletionTimestamp !== undefined;
  const out: Claimed<T> = { claimed: [], adopted: 0, released: 0 };
  for (const o of input.owned) {
    if (input.matches(o) || deleting || o.metadata.deletionTimestamp) {
      out.claimed.push(o);
      continue;
    }
    const refs = (o.metadata.ownerReferences ?? []).filter((r) => r.uid !== ownerUid);
    if (await patchRefs(client, type, o, refs)) out.released++;
  }
  if (deleting) return out;
  for (const o of input.orphans) {
    if (o.metadata.deletionTimestamp || !input.matches(o)) continue;
    const refs = [...(o.metadata.ownerReferences ?? []), controllerRefTo(owner)];
    const finalizers = input.adoptFinalizers?.length
      ? [...new Set([...(o.metadata.finalizers ?? []), ...input.adoptFinalizers])]
      : undefined;
    const adopted = await patchRefs<T>(client, type, o, refs, finalizers);
    if (adopted) {
      out.claimed.push(adopted);
      out.adopted++;
    }
  }
  return out;
}

async function patchRefs<T extends KubeObject>(
  client: PatchClient,
  type: TypeRef,
  o: T,
  refs: OwnerReference[],
  finalizers?: string[],
): Promise<T | undefined> {
  try {
    return await client.patch<T>(
      type,
      o.metadata.name ?? "",
      o.metadata.namespace,
      {
        metadata: {
          ownerReferences: refs.length > 0 ? refs : null,
          resourceVersion: o.metadata.resourceVersion,
          uid: o.metadata.uid,
          ...(finalizers ? { finalizers } : {}),
        },
      },
      { type: "merge" },
    );
  } catch (e) {
    if (isConflict(e) || isNotFound(e)) return undefined;
    throw e;
  }
}

/**
 * A workload's `spec.selector` (kubernetes-types' LabelSelector) as a selector;
 * throws (StatusError 400) on an invalid one, as LabelSelectorAsSelector does.
 */
export function selectorOf(sel: unknown): LabelSelector {
  return labelSelectorFromMetav1(sel as MetaV1LabelSelector | undefined);
}

/** The controlling owner reference of `obj` when it is a `kind` of API group `group`. */
export function controllerOfKind(
  obj: KubeObject,
  group: string,
  kind: string,
): OwnerReference | undefined {
  const ref = obj.metadata.ownerReferences?.find((r) => r.controller === true);
  return ref?.kind === kind && ref.apiVersion.startsWith(`${group}/`) ? ref : undefined;
}

/** The controlling owner reference of `obj` when it is an apps/v1 `kind` (ReplicaSet, Deployment). */
export function appsControllerOf(obj: KubeObject, kind: string): OwnerReference | undefined {
  return controllerOfKind(obj, "apps", kind);
}

/**
 * Whom an event on `obj` wakes: its controller of `kind` (in API group
 * `group`, apps unless told); for an orphan,
 * every candidate (same namespace) whose non-empty selector matches its labels;
 * for an object another kind controls, nobody.
 */
export function ownersToWake(
  obj: KubeObject,
  kind: string,
  candidates: (namespace: string) => readonly (KubeObject & { spec?: { selector?: unknown } })[],
  group = "apps",
): { namespace: string; name: string }[] {
  const ns = obj.metadata.namespace ?? "";
  const ref = controllerOfKind(obj, group, kind);
  if (ref) return [{ namespace: ns, name: ref.name }];
  if (obj.metadata.ownerReferences?.some((r) => r.controller === true)) return [];
  const out: { namespace: string; name: string }[] = [];
  for (const c of candidates(ns)) {
    try {
      const sel = selectorOf(c.spec?.selector);
      if (!isEverything(sel) && matchesLabels(sel, obj.metadata.labels)) {
        out.push({ namespace: ns, name: c.metadata.name ?? "" });
      }
    } catch {
      // An invalid selector matches nothing.
    }
  }
  return out;
}
