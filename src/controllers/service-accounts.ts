/**
 * The service account controller: every namespace that is not being deleted has a
 * ServiceAccount named `default`, as in Kubernetes, so `kubectl create token
 * default -n NS` works in any namespace. A `default` account deleted by hand comes
 * back; nothing else about it is managed (its labels, annotations and secrets are
 * the users').
 *
 * The key is a namespace's name; the controller reconciles on changes to
 * namespaces and to ServiceAccounts named `default`.
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
import type { BuiltinController } from "./builtin-controller.ts";

/** The controller's name (what `--disable-controllers` takes). */
export const SERVICE_ACCOUNT_CONTROLLER = "serviceaccount";
/** The ServiceAccount every namespace gets. */
export const DEFAULT_SERVICE_ACCOUNT = "default";
/** Concurrent reconciles (Kubernetes' --concurrent-serviceaccount-token-syncs default). */
export const DEFAULT_SERVICE_ACCOUNT_WORKERS = 5;

const NAMESPACE = { apiVersion: "v1", kind: "Namespace" } as const;
const SERVICE_ACCOUNT = { apiVersion: "v1", kind: "ServiceAccount" } as const;

export interface ServiceAccountControllerOptions {
  workers?: number;
}

export class ServiceAccountController implements BuiltinController {
  readonly name = SERVICE_ACCOUNT_CONTROLLER;

  constructor(private readonly opts: ServiceAccountControllerOptions = {}) {}

  setup(mgr: Manager, client: Client = mgr.client): void {
    mgr
      .controller(SERVICE_ACCOUNT_CONTROLLER)
      .for(NAMESPACE)
      .watches(SERVICE_ACCOUNT, (sa) =>
        sa.metadata.name === DEFAULT_SERVICE_ACCOUNT && sa.metadata.namespace
          ? { name: sa.metadata.namespace }
          : undefined,
      )
      .withOptions({
        client,
        maxConcurrentReconciles: this.opts.workers ?? DEFAULT_SERVICE_ACCOUNT_WORKERS,
      })
      .complete((req, ctx) => this.reconcile(req.name, ctx));
  }

  private async reconcile(namespace: string, ctx: ReconcileContext): Promise<Result | undefined> {
    let ns: KubeObject;
    try {
      ns = await ctx.reader.get<KubeObject>(NAMESPACE, namespace);
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
    const phase = (ns.status as { phase?: string } | undefined)?.phase;
    if (ns.metadata.deletionTimestamp || phase === "Terminating") return undefined;
    try {
      await ctx.reader.get(SERVICE_ACCOUNT, DEFAULT_SERVICE_ACCOUNT, namespace);
      return undefined;
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    try {
      await ctx.client.create({
        ...SERVICE_ACCOUNT,
        metadata: { name: DEFAULT_SERVICE_ACCOUNT, namespace },
      });
      ctx.log.info("created the default service account");
    } catch (e) {
      // There already (the cache was behind), or the namespace began terminating or
      // went away meanwhile: nothing to do.
      if (!isAlreadyExists(e) && !isForbidden(e) && !isNotFound(e)) throw e;
    }
    return undefined;
  }
}
