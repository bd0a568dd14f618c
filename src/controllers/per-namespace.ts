/**
 * What the controllers that keep one object in every namespace share (the
 * service account controller's `default` ServiceAccount, the root CA publisher's
 * `kube-root-ca.crt`): a loop keyed by namespace name, woken by changes to
 * namespaces and to objects of that kind and name, that acts only on a namespace
 * that exists and is not being deleted.
 */
import type { KubeObject } from "@setpoint/api";
import {
  type Client,
  isAlreadyExists,
  isForbidden,
  isNotFound,
  type Manager,
  type ReconcileContext,
  type Result,
} from "@setpoint/runtime";

const NAMESPACE = { apiVersion: "v1", kind: "Namespace" } as const;

export interface PerNamespaceLoop {
  /** The controller's name. */
  name: string;
  /** The kind of the object each namespace holds, and its name. */
  kind: { apiVersion: string; kind: string };
  objectName: string;
  workers: number;
  /** Called with a namespace that exists and is not being deleted. */
  reconcile: (namespace: string, ctx: ReconcileContext) => Promise<Result | undefined>;
}

export function setUpPerNamespace(mgr: Manager, client: Client, loop: PerNamespaceLoop): void {
  mgr
    .controller(loop.name)
    .for(NAMESPACE)
    .watches(loop.kind, (o) =>
      o.metadata.name === loop.objectName && o.metadata.namespace
        ? { name: o.metadata.namespace }
        : undefined,
    )
    .withOptions({ client, maxConcurrentReconciles: loop.workers })
    .complete(async (req, ctx) =>
      (await isActiveNamespace(req.name, ctx)) ? loop.reconcile(req.name, ctx) : undefined,
    );
}

/** Whether the namespace exists and is not being deleted (read from the cache). */
async function isActiveNamespace(namespace: string, ctx: ReconcileContext): Promise<boolean> {
  let ns: KubeObject;
  try {
    ns = await ctx.reader.get<KubeObject>(NAMESPACE, namespace);
  } catch (e) {
    if (isNotFound(e)) return false;
    throw e;
  }
  const phase = (ns.status as { phase?: string } | undefined)?.phase;
  return !ns.metadata.deletionTimestamp && phase !== "Terminating";
}

/**
 * Creates a namespace's object; true when made. There already (the cache was
 * behind), or the namespace began terminating or went away meanwhile: false,
 * nothing to do.
 */
export async function createInNamespace(ctx: ReconcileContext, obj: KubeObject): Promise<boolean> {
  try {
    await ctx.client.create(obj);
    return true;
  } catch (e) {
    if (!isAlreadyExists(e) && !isForbidden(e) && !isNotFound(e)) throw e;
    return false;
  }
}
