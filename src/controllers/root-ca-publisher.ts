/**
 * The root CA certificate publisher (kube-controller-manager's
 * `root-ca-cert-publisher`): every namespace that is not being deleted has a
 * ConfigMap `kube-root-ca.crt` whose `ca.crt` is the CA that signed the
 * apiserver's serving certificate, with Kubernetes' description annotation. Pods
 * read it through their kube-api-access volume (ServiceAccount admission) to
 * verify the apiserver. A ConfigMap deleted or changed by hand is put back.
 *
 * The CA is the controller manager's own (the CA of the kubeconfig it runs on, as
 * kube-controller-manager falls back to without --root-ca-file), or the one given.
 * The key is a namespace's name; the controller reconciles on changes to
 * namespaces and to ConfigMaps named `kube-root-ca.crt`.
 */
import type { KubeObject } from "@setpoint/api";
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
export const ROOT_CA_PUBLISHER_CONTROLLER = "root-ca-cert-publisher";
/** The ConfigMap each namespace gets. */
export const ROOT_CA_CONFIGMAP_NAME = "kube-root-ca.crt";
/** The annotation that says what the ConfigMap is for, and its text (Kubernetes' own). */
export const ROOT_CA_DESCRIPTION_ANNOTATION = "kubernetes.io/description";
export const ROOT_CA_DESCRIPTION =
  "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";
/** Concurrent reconciles. */
export const DEFAULT_ROOT_CA_PUBLISHER_WORKERS = 1;

const CONFIG_MAP = { apiVersion: "v1", kind: "ConfigMap" } as const;

export interface RootCaPublisherOptions {
  /** The CA bundle (PEM) to publish; default: the CA of the controller manager's kubeconfig. */
  rootCa?: string;
  workers?: number;
}

type ConfigMap = KubeObject & { data?: Record<string, string> };

export class RootCaPublisher implements BuiltinController {
  readonly name = ROOT_CA_PUBLISHER_CONTROLLER;
  private rootCa = "";

  constructor(private readonly opts: RootCaPublisherOptions = {}) {}

  setup(mgr: Manager, client: Client = mgr.client): void {
    this.rootCa = this.opts.rootCa ?? client.config.ca?.toString("utf8") ?? "";
    setUpPerNamespace(mgr, client, {
      name: ROOT_CA_PUBLISHER_CONTROLLER,
      kind: CONFIG_MAP,
      objectName: ROOT_CA_CONFIGMAP_NAME,
      workers: this.opts.workers ?? DEFAULT_ROOT_CA_PUBLISHER_WORKERS,
      reconcile: (namespace, ctx) => this.reconcile(namespace, ctx),
    });
  }

  private async reconcile(namespace: string, ctx: ReconcileContext): Promise<Result | undefined> {
    const data = { "ca.crt": this.rootCa };
    let cm: ConfigMap;
    try {
      cm = await ctx.reader.get<ConfigMap>(CONFIG_MAP, ROOT_CA_CONFIGMAP_NAME, namespace);
    } catch (e) {
      if (!isNotFound(e)) throw e;
      const made = await createInNamespace(ctx, {
        ...CONFIG_MAP,
        metadata: {
          name: ROOT_CA_CONFIGMAP_NAME,
          namespace,
          annotations: { [ROOT_CA_DESCRIPTION_ANNOTATION]: ROOT_CA_DESCRIPTION },
        },
        data,
      } as ConfigMap);
      if (made) ctx.log.info("published the root CA");
      return undefined;
    }
    const same =
      Object.keys(cm.data ?? {}).length === 1 &&
      cm.data?.["ca.crt"] === this.rootCa &&
      Boolean(cm.metadata.annotations?.[ROOT_CA_DESCRIPTION_ANNOTATION]);
    if (same) return undefined;
    await ctx.client.update<ConfigMap>({
      ...cm,
      metadata: {
        ...cm.metadata,
        annotations: {
          ...(cm.metadata.annotations ?? {}),
          [ROOT_CA_DESCRIPTION_ANNOTATION]: ROOT_CA_DESCRIPTION,
        },
      },
      data,
    });
    return undefined;
  }
}
