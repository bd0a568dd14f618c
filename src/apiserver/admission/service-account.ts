/**
 * ServiceAccount admission, as kube-apiserver's plugin of that name does it for a
 * Pod being created (mirror Pods aside):
 * - `spec.serviceAccountName` defaults to `default`;
 * - the ServiceAccount must exist (read from the watch cache; `default`, which the
 *   service account controller makes for a new namespace, is looked for again ten
 *   times, 100 to 200 ms apart), else 403 `pods "NAME" is forbidden: error
 *   looking up service account NS/SA: serviceaccount "SA" not found`;
 * - unless `automountServiceAccountToken` is false on the Pod (or, the Pod saying
 *   nothing, on its ServiceAccount), a projected volume `kube-api-access-<5
 *   random characters>` is added (a bound token at `token`, expiring after 3607
 *   s; `ca.crt` from the namespace's `kube-root-ca.crt` ConfigMap; the namespace
 *   through the downward API; mode 0644) and mounted read-only at
 *   /var/run/secrets/kubernetes.io/serviceaccount in every init container and
 *   container that has nothing mounted there;
 * - a Pod without `imagePullSecrets` gets its ServiceAccount's.
 * It is on in `setpoint up` and off in test environments without controllers
 * (as envtest runs kube-apiserver), where no `default` ServiceAccount is made.
 */
import { deepClone, errors, type KubeObject } from "@setpoint/api";
import type { Registry } from "../../registry/registry.ts";
import { objectKey } from "../../registry/storage-keys.ts";
import type { AdmissionAttributes, StoreContext } from "../store/scope.ts";
import type { WatchCacheSet } from "../watchcache/watch-caches.ts";

/** The ServiceAccount a Pod that names none runs as. */
export const DEFAULT_SERVICE_ACCOUNT_NAME = "default";
/** The prefix of the projected volume's name. */
export const SERVICE_ACCOUNT_VOLUME_PREFIX = "kube-api-access-";
/** Where a container finds its token, CA and namespace. */
export const SERVICE_ACCOUNT_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount";
/** The ConfigMap every namespace holds the cluster's CA in (root-ca-publisher controller). */
export const ROOT_CA_CONFIGMAP = "kube-root-ca.crt";
/** The token's lifetime Kubernetes asks for in the volume (an hour and seven seconds). */
export const SERVICE_ACCOUNT_TOKEN_EXPIRATION_SECONDS = 3607;
/** How often `default` is looked for again, and how long apart (ms, the first of a random 100-200). */
const DEFAULT_LOOKUPS = 10;
const MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror";
/** The characters of generated names (Kubernetes' utilrand alphabet). */
const NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789";

type Obj = Record<string, unknown>;
interface Mount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
}
interface ContainerSpec {
  volumeMounts?: Mount[];
}
interface PodSpec {
  serviceAccountName?: string;
  serviceAccount?: string;
  automountServiceAccountToken?: boolean;
  volumes?: { name: string }[];
  initContainers?: ContainerSpec[];
  containers?: ContainerSpec[];
  imagePullSecrets?: { name: string }[];
}
interface ServiceAccount {
  automountServiceAccountToken?: boolean;
  imagePullSecrets?: { name: string }[];
}

/** The projected volume source of the kube-api-access volume (Kubernetes' TokenVolumeSource). */
export function tokenVolumeSource(): Obj {
  return {
    defaultMode: 0o644,
    sources: [
      {
        serviceAccountToken: {
          expirationSeconds: SERVICE_ACCOUNT_TOKEN_EXPIRATION_SECONDS,
          path: "token",
        },
      },
      { configMap: { name: ROOT_CA_CONFIGMAP, items: [{ key: "ca.crt", path: "ca.crt" }] } },
      {
        downwardAPI: {
          items: [
            { path: "namespace", fieldRef: { apiVersion: "v1", fieldPath: "metadata.namespace" } },
          ],
        },
      },
    ],
  };
}

function randomSuffix(n = 5): string {
  let s = "";
  for (let i = 0; i < n; i++) s += NAME_ALPHABET[Math.floor(Math.random() * NAME_ALPHABET.length)];
  return s;
}

export class ServiceAccountAdmission {
  constructor(
    private readonly registry: Registry,
    private readonly caches: WatchCacheSet,
  ) {}

  /** The Pod as admitted (a copy), or undefined when the write is not a Pod's creation. */
  async admit(ctx: StoreContext, attrs: AdmissionAttributes): Promise<KubeObject | undefined> {
    if (ctx.def.group !== "" || ctx.def.names.plural !== "pods") return undefined;
    if (attrs.operation !== "CREATE" || ctx.scope.subresource || !attrs.object) return undefined;
    if (attrs.object.metadata.annotations?.[MIRROR_POD_ANNOTATION] !== undefined) return undefined;
    const pod = deepClone(attrs.object) as KubeObject & { spec?: PodSpec };
    const spec: PodSpec = pod.spec ?? {};
    pod.spec = spec;
    if (!spec.serviceAccountName) spec.serviceAccountName = DEFAULT_SERVICE_ACCOUNT_NAME;
    const namespace = pod.metadata.namespace ?? ctx.scope.namespace ?? "";
    const sa = await this.serviceAccount(namespace, spec.serviceAccountName);
    if (!sa) {
      const name = pod.metadata.name || pod.metadata.generateName || "Unknown";
      throw errors.forbidden(
        { resource: "pods", name },
        `error looking up service account ${namespace}/${spec.serviceAccountName}: serviceaccount ${JSON.stringify(spec.serviceAccountName)} not found`,
      );
    }
    if ((spec.automountServiceAccountToken ?? sa.automountServiceAccountToken) !== false) {
      mountToken(spec);
    }
    if (!spec.imagePullSecrets?.length && sa.imagePullSecrets?.length) {
      spec.imagePullSecrets = sa.imagePullSecrets.map((s) => ({ name: s.name }));
    }
    return pod;
  }

  private async serviceAccount(
    namespace: string,
    name: string,
  ): Promise<ServiceAccount | undefined> {
    const def = this.registry.get("", "serviceaccounts");
    if (!def) return undefined;
    const cache = this.caches.forDef(def);
    await cache.ready();
    const lookups = name === DEFAULT_SERVICE_ACCOUNT_NAME ? DEFAULT_LOOKUPS : 1;
    const wait = 100 + Math.floor(Math.random() * 100);
    for (let i = 0; i < lookups; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, wait));
      const entry = cache.get(objectKey(def, namespace, name));
      if (entry) return JSON.parse(entry.json) as ServiceAccount;
    }
    return undefined;
  }
}

/** Adds the kube-api-access volume and its mounts, as Kubernetes' mountServiceAccountToken. */
function mountToken(spec: PodSpec): void {
  const existing = spec.volumes?.find((v) => v.name.startsWith(SERVICE_ACCOUNT_VOLUME_PREFIX));
  const volumeName = existing?.name ?? `${SERVICE_ACCOUNT_VOLUME_PREFIX}${randomSuffix()}`;
  let needed = false;
  for (const c of [...(spec.initContainers ?? []), ...(spec.containers ?? [])]) {
    if (c.volumeMounts?.some((m) => m.mountPath === SERVICE_ACCOUNT_MOUNT_PATH)) continue;
    c.volumeMounts = [
      ...(c.volumeMounts ?? []),
      { name: volumeName, readOnly: true, mountPath: SERVICE_ACCOUNT_MOUNT_PATH },
    ];
    needed = true;
  }
  if (needed && !existing) {
    spec.volumes = [
      ...(spec.volumes ?? []),
      { name: volumeName, projected: tokenVolumeSource() } as { name: string },
    ];
  }
}
