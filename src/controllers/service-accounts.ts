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
import {
  type Client,
  isNotFound,
  type Manager,
  type ReconcileContext,
  type Result,
} from "@setpoint/runtime";
import type { BuiltinController } from "./builtin-controller.ts";
import { createInNamespace, setUpPerNamespace } from "./per-namespace.ts";

/** The controller's name (what `--disable-controllers` takes). */
export const SERVICE_ACCOUNT_CONTROLLER = "serviceaccount";
/** The ServiceAccount every namespace gets. */
export const DEFAULT_SERVICE_ACCOUNT = "default";
/** Concurrent reconciles (Kubernetes' --concurrent-serviceaccount-token-syncs default). */
export const DEFAULT_SERVICE_ACCOUNT_WORKERS = 5;

const SERVICE_ACCOUNT = { apiVersion: "v1", kind: "ServiceAccount" } as const;

export interface ServiceAccountControllerOptions {
  workers?: number;
}

export class ServiceAccountController implements BuiltinController {
  readonly name = SERVICE_ACCOUNT_CONTROLLER;

  constructor(private readonly opts: ServiceAccountControllerOptions = {}) {}

  setup(mgr: Manager, client: Client = mgr.client): void {
    setUpPerNamespace(mgr, client, {
      name: SERVICE_ACCOUNT_CONTROLLER,
      kind: SERVICE_ACCOUNT,
      objectName: DEFAULT_SERVICE_ACCOUNT,
      workers: this.opts.workers ?? DEFAULT_SERVICE_ACCOUNT_WORKERS,
      reconcile: (namespace, ctx) => this.reconcile(namespace, ctx),
    });
  }

  private async reconcile(namespace: string, ctx: ReconcileContext): Promise<Result | undefined> {
    try {
      await ctx.reader.get(SERVICE_ACCOUNT, DEFAULT_SERVICE_ACCOUNT, namespace);
      return undefined;
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    const made = await createInNamespace(ctx, {
      ...SERVICE_ACCOUNT,
      metadata: { name: DEFAULT_SERVICE_ACCOUNT, namespace },
    });
    if (made) ctx.log.info("created the default service account");
    return undefined;
  }
}
