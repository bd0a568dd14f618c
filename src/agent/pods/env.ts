/**
 * A container's environment as the kubelet makes it: the image's env, then
 * `envFrom` (ConfigMaps and Secrets, with their prefix), then `env` in order, each
 * value expanding `$(NAME)` references to variables defined before it (`$$` escapes),
 * with `valueFrom` read from the Pod (fieldRef), its resources (resourceFieldRef),
 * ConfigMaps and Secrets (through `EnvSources`, which the agent keeps on disk so a
 * Pod restarts without the apiserver). Then the Service variables
 * (NAME_SERVICE_HOST, NAME_SERVICE_PORT, ... from `EnvSources.services`, the
 * service proxy's table) for names the container did not define, which `$(NAME)`
 * references may also use, as the kubelet does. Then the agent's own variables:
 * HOSTNAME (the Pod's name), SETPOINT_POD_IP, SETPOINT_IMAGE and
 * SETPOINT_IMAGE_DIR. `command` and `args` expand `$(NAME)` against the result.
 */
import type { Container, EnvVar, Pod } from "@setpoint/api";
import { parseQuantity } from "@setpoint/api";

/** ConfigMap and Secret data by namespace and name (Secret values decoded). */
export interface EnvSources {
  configMap(namespace: string, name: string): Record<string, string> | undefined;
  secret(namespace: string, name: string): Record<string, string> | undefined;
  /** The Service variables of a Pod in `namespace` (none when absent). */
  services?(namespace: string, enableServiceLinks: boolean): Record<string, string>;
}

/** What the Node offers, for resourceFieldRef of a container without limits. */
export interface NodeResources {
  cpu: number;
  memory: number;
  ephemeralStorage: number;
}

/** A reference that cannot be resolved: the container waits with CreateContainerConfigError. */
export class EnvConfigError extends Error {
  override name = "EnvConfigError";
}

/** Expands `$(NAME)` with `vars`; `$$` is a literal `$`; unknown names stay as written. */
export function expandVars(text: string, vars: Readonly<Record<string, string>>): string {
  return text.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (all, name?: string) => {
    if (all === "$$") return "$";
    return name !== undefined && name in vars ? vars[name] : all;
  });
}

/** The value of a `fieldRef` path of a Pod (its env form: one label or annotation by key). */
export function fieldValue(pod: Pod, path: string): string {
  const m = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(path);
  if (m) {
    const map = (m[1] === "labels" ? pod.metadata.labels : pod.metadata.annotations) ?? {};
    return map[m[2]] ?? "";
  }
  switch (path) {
    case "metadata.name":
      return pod.metadata.name ?? "";
    case "metadata.namespace":
      return pod.metadata.namespace ?? "";
    case "metadata.uid":
      return pod.metadata.uid ?? "";
    case "spec.nodeName":
      return pod.spec?.nodeName ?? "";
    case "spec.serviceAccountName":
      return pod.spec?.serviceAccountName ?? "";
    case "status.hostIP":
      return pod.status?.hostIP ?? "";
    case "status.hostIPs":
      return (pod.status?.hostIPs ?? []).map((i) => i.ip).join(",");
    case "status.podIP":
      return pod.status?.podIP ?? "";
    case "status.podIPs":
      return (pod.status?.podIPs ?? []).map((i) => i.ip).join(",");
    default:
      throw new EnvConfigError(`unsupported fieldRef ${JSON.stringify(path)}`);
  }
}

/** The value of a `resourceFieldRef` of `container` (node values for absent limits). */
export function resourceValue(
  container: Container,
  resource: string,
  divisor: string | number | undefined,
  node: NodeResources,
): string {
  const [kind, name] = resource.split(".");
  const limits = container.resources?.limits ?? {};
  const requests = container.resources?.requests ?? {};
  const nodeValue =
    name === "cpu" ? node.cpu : name === "memory" ? node.memory : node.ephemeralStorage;
  const raw =
    kind === "limits"
      ? (parseQuantity(limits[name]) ?? nodeValue)
      : (parseQuantity(requests[name]) ?? parseQuantity(limits[name]) ?? 0);
  const div = parseQuantity(divisor) || 1;
  return String(Math.ceil(raw / div));
}

/** The environment of `container` in `pod` (podIP already decided). */
export function containerEnv(
  pod: Pod,
  container: Container,
  opts: {
    imageEnv?: Record<string, string> | undefined;
    sources: EnvSources;
    node: NodeResources;
    podIP: string;
    image: string;
    imageDir: string;
  },
): Record<string, string> {
  const ns = pod.metadata.namespace ?? "default";
  const withIP: Pod = {
    ...pod,
    status: { ...pod.status, podIP: opts.podIP, podIPs: [{ ip: opts.podIP }] },
  };
  const env: Record<string, string> = { ...(opts.imageEnv ?? {}) };
  const serviceVars = opts.sources.services?.(ns, pod.spec?.enableServiceLinks !== false) ?? {};
  for (const from of container.envFrom ?? []) {
    const prefix = from.prefix ?? "";
    if (from.configMapRef) {
      const data = opts.sources.configMap(ns, from.configMapRef.name ?? "");
      if (!data && !from.configMapRef.optional) {
        throw new EnvConfigError(`configmap "${from.configMapRef.name}" not found`);
      }
      for (const [k, v] of Object.entries(data ?? {})) env[prefix + k] = v;
    } else if (from.secretRef) {
      const data = opts.sources.secret(ns, from.secretRef.name ?? "");
      if (!data && !from.secretRef.optional) {
        throw new EnvConfigError(`secret "${from.secretRef.name}" not found`);
      }
      for (const [k, v] of Object.entries(data ?? {})) env[prefix + k] = v;
    }
  }
  for (const v of container.env ?? []) {
    const value = envValue(withIP, container, v, { ...serviceVars, ...env }, opts);
    if (value !== undefined) env[v.name] = value;
  }
  for (const [k, v] of Object.entries(serviceVars)) if (!(k in env)) env[k] = v;
  env.HOSTNAME = pod.metadata.name ?? "";
  env.SETPOINT_POD_IP = opts.podIP;
  env.SETPOINT_IMAGE = opts.image;
  env.SETPOINT_IMAGE_DIR = opts.imageDir;
  return env;
}

function envValue(
  pod: Pod,
  container: Container,
  v: EnvVar,
  defined: Record<string, string>,
  opts: { sources: EnvSources; node: NodeResources },
): string | undefined {
  const ns = pod.metadata.namespace ?? "default";
  const from = v.valueFrom;
  if (!from) return expandVars(v.value ?? "", defined);
  if (from.fieldRef) return fieldValue(pod, from.fieldRef.fieldPath);
  if (from.resourceFieldRef) {
    const target = from.resourceFieldRef.containerName
      ? [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])].find(
          (c) => c.name === from.resourceFieldRef?.containerName,
        )
      : container;
    if (!target) {
      throw new EnvConfigError(
        `container "${from.resourceFieldRef.containerName}" not found in the pod`,
      );
    }
    return resourceValue(
      target,
      from.resourceFieldRef.resource,
      from.resourceFieldRef.divisor,
      opts.node,
    );
  }
  if (from.configMapKeyRef) {
    const ref = from.configMapKeyRef;
    const data = opts.sources.configMap(ns, ref.name ?? "");
    if (!data) {
      if (ref.optional) return undefined;
      throw new EnvConfigError(`configmap "${ref.name}" not found`);
    }
    if (!(ref.key in data)) {
      if (ref.optional) return undefined;
      throw new EnvConfigError(`couldn't find key ${ref.key} in ConfigMap ${ns}/${ref.name}`);
    }
    return data[ref.key];
  }
  if (from.secretKeyRef) {
    const ref = from.secretKeyRef;
    const data = opts.sources.secret(ns, ref.name ?? "");
    if (!data) {
      if (ref.optional) return undefined;
      throw new EnvConfigError(`secret "${ref.name}" not found`);
    }
    if (!(ref.key in data)) {
      if (ref.optional) return undefined;
      throw new EnvConfigError(`couldn't find key ${ref.key} in Secret ${ns}/${ref.name}`);
    }
    return data[ref.key];
  }
  return "";
}

/** The ConfigMaps and Secrets a Pod's containers and volumes read, by namespace/name. */
export function referencedSources(pod: Pod): { configMaps: string[]; secrets: string[] } {
  const ns = pod.metadata.namespace ?? "default";
  const cms = new Set<string>();
  const secrets = new Set<string>();
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    for (const f of c.envFrom ?? []) {
      if (f.configMapRef?.name) cms.add(`${ns}/${f.configMapRef.name}`);
      if (f.secretRef?.name) secrets.add(`${ns}/${f.secretRef.name}`);
    }
    for (const v of c.env ?? []) {
      if (v.valueFrom?.configMapKeyRef?.name) cms.add(`${ns}/${v.valueFrom.configMapKeyRef.name}`);
      if (v.valueFrom?.secretKeyRef?.name) secrets.add(`${ns}/${v.valueFrom.secretKeyRef.name}`);
    }
  }
  for (const v of pod.spec?.volumes ?? []) {
    if (v.configMap?.name) cms.add(`${ns}/${v.configMap.name}`);
    if (v.secret?.secretName) secrets.add(`${ns}/${v.secret.secretName}`);
    for (const s of v.projected?.sources ?? []) {
      if (s.configMap?.name) cms.add(`${ns}/${s.configMap.name}`);
      if (s.secret?.name) secrets.add(`${ns}/${s.secret.name}`);
    }
  }
  return { configMaps: [...cms], secrets: [...secrets] };
}
