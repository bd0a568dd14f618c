/**
 * Pod volumes as files, as the kubelet sets them up, for processes that have no
 * mount namespace: every volume is a directory under the Pod's directory,
 * `DATA/pods/<ns>_<name>_<uid>/_volumes/<volume>`, and every container gets a root,
 * `_root/<container>`, in which each of its volumeMounts' `mountPath` is a
 * symbolic link to its volume (or the volume's `subPath`). A process finds its
 * mounts through its environment: `SETPOINT_ROOT` (that root: `/etc/config/k` is
 * `$SETPOINT_ROOT/etc/config/k`) and one `SETPOINT_VOLUME_<MOUNT>` per mount (the
 * directory itself; the mount's name upper-cased, other characters as `_`).
 *
 * - emptyDir: an empty directory, kept while the Pod lives; `medium: Memory` puts
 *   it in /dev/shm (tmpfs) when the machine has one. `sizeLimit` is not enforced.
 * - configMap, secret, downwardAPI and projected (configMap, secret, downwardAPI,
 *   serviceAccountToken sources): written by the atomic writer (atomic-writer.ts),
 *   `items` choosing keys and paths, `defaultMode`/`mode` the files' modes (0644 by
 *   default), `optional` sources skipped when missing. Written again, atomically,
 *   whenever a source changes (the agent calls `setUpVolumes` again).
 * - A volume that cannot be set up (a ConfigMap not found) keeps what it had; its
 *   error is returned, worded as the kubelet's FailedMount.
 * - `readOnly` cannot be enforced on a process of the agent's own user; the files
 *   of configMap, secret, downwardAPI and projected volumes are only replaced by
 *   the agent, never written through.
 */
import { existsSync, lstatSync, mkdirSync, rmSync, symlinkSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import type { Container, Pod } from "@setpoint/api";
import type { BindMount } from "../sandbox/index.ts";
import { type PayloadFile, validPayloadPath, writePayload } from "./atomic-writer.ts";
import { type EnvSources, fieldValue, type NodeResources, resourceValue } from "./env.ts";

type Volume = NonNullable<NonNullable<Pod["spec"]>["volumes"]>[number];
type Projection = NonNullable<NonNullable<Volume["projected"]>["sources"]>[number];
type TokenProjection = NonNullable<Projection["serviceAccountToken"]>;
type DownwardFile = NonNullable<NonNullable<Volume["downwardAPI"]>["items"]>[number];
type VolumeMount = NonNullable<Container["volumeMounts"]>[number];
type KeyToPath = { key: string; path: string; mode?: number };

/** Kubernetes' default mode of a volume's files (0644). */
export const DEFAULT_FILE_MODE = 0o644;

/** What volumes read: ConfigMaps and Secrets (as for env), and ServiceAccount tokens. */
export interface VolumeSources extends EnvSources {
  /** A ConfigMap's binaryData, or a Secret's values that are not UTF-8 text, as bytes. */
  binary?(
    kind: "configmap" | "secret",
    namespace: string,
    name: string,
  ): Record<string, Buffer> | undefined;
  /** The token of a serviceAccountToken projection; undefined when none could be had yet. */
  token?(pod: Pod, volume: string, projection: TokenProjection): string | undefined;
}

/** A volume that could not be set up, with the kubelet's FailedMount message. */
export interface VolumeError {
  volume: string;
  message: string;
}

/** The directory of a Pod's volumes. */
export function volumesDir(podDir: string): string {
  return join(podDir, "_volumes");
}

/** A container's root, in which its mountPaths are links to its volumes. */
export function containerRoot(podDir: string, container: string): string {
  return join(podDir, "_root", container);
}

function shmDir(uid: string, volume: string): string | undefined {
  return existsSync("/dev/shm") ? join("/dev/shm", `setpoint-${uid}-${volume}`) : undefined;
}

class MountError extends Error {}

function keyFiles(
  what: "configmap" | "secret",
  name: string,
  data: Record<string, string | Buffer> | undefined,
  items: KeyToPath[] | undefined,
  optional: boolean | undefined,
  mode: number,
  out: Map<string, PayloadFile>,
): void {
  if (!data) {
    if (optional) return;
    throw new MountError(`${what} "${name}" not found`);
  }
  if (!items?.length) {
    for (const [k, v] of Object.entries(data)) out.set(k, { data: v, mode });
    return;
  }
  for (const item of items) {
    if (!(item.key in data)) {
      if (optional) continue;
      throw new MountError(
        what === "configmap"
          ? `configmap references non-existent config key: ${item.key}`
          : `references non-existent secret key: ${item.key}`,
      );
    }
    out.set(item.path, { data: data[item.key], mode: item.mode ?? mode });
  }
}

/** A map as the kubelet writes labels and annotations: `key="value"` lines, sorted. */
export function formatMap(m: Record<string, string> | undefined): string {
  return Object.keys(m ?? {})
    .sort()
    .map((k) => `${k}=${JSON.stringify(m?.[k] ?? "")}`)
    .join("\n");
}

function downwardFiles(
  pod: Pod,
  items: DownwardFile[],
  mode: number,
  node: NodeResources,
  out: Map<string, PayloadFile>,
): void {
  for (const item of items) {
    let value: string;
    if (item.fieldRef) {
      const path = item.fieldRef.fieldPath;
      if (path === "metadata.labels") value = formatMap(pod.metadata.labels);
      else if (path === "metadata.annotations") value = formatMap(pod.metadata.annotations);
      else value = fieldValue(pod, path);
    } else if (item.resourceFieldRef) {
      const ref = item.resourceFieldRef;
      const c = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])].find(
        (x) => x.name === ref.containerName,
      );
      if (!c) throw new MountError(`container "${ref.containerName}" not found in the pod`);
      value = resourceValue(c, ref.resource, ref.divisor, node);
    } else continue;
    out.set(item.path, { data: value, mode: item.mode ?? mode });
  }
}

function payloadOf(pod: Pod, v: Volume, sources: VolumeSources, node: NodeResources) {
  const ns = pod.metadata.namespace ?? "default";
  const withBytes = (kind: "configmap" | "secret", name: string) => {
    const text = kind === "configmap" ? sources.configMap(ns, name) : sources.secret(ns, name);
    if (!text) return undefined;
    const bytes = sources.binary?.(kind, ns, name);
    return bytes ? { ...text, ...bytes } : text;
  };
  const out = new Map<string, PayloadFile>();
  if (v.configMap) {
    const cm = v.configMap;
    const name = cm.name ?? "";
    const mode = cm.defaultMode ?? DEFAULT_FILE_MODE;
    keyFiles("configmap", name, withBytes("configmap", name), cm.items, cm.optional, mode, out);
  } else if (v.secret) {
    const s = v.secret;
    const name = s.secretName ?? "";
    const mode = s.defaultMode ?? DEFAULT_FILE_MODE;
    keyFiles("secret", name, withBytes("secret", name), s.items, s.optional, mode, out);
  } else if (v.downwardAPI) {
    const mode = v.downwardAPI.defaultMode ?? DEFAULT_FILE_MODE;
    downwardFiles(pod, v.downwardAPI.items ?? [], mode, node, out);
  } else if (v.projected) {
    const mode = v.projected.defaultMode ?? DEFAULT_FILE_MODE;
    for (const s of v.projected.sources ?? []) {
      if (s.configMap) {
        const name = s.configMap.name ?? "";
        const data = withBytes("configmap", name);
        keyFiles("configmap", name, data, s.configMap.items, s.configMap.optional, mode, out);
      } else if (s.secret) {
        const name = s.secret.name ?? "";
        const data = withBytes("secret", name);
        keyFiles("secret", name, data, s.secret.items, s.secret.optional, mode, out);
      } else if (s.downwardAPI) {
        downwardFiles(pod, s.downwardAPI.items ?? [], mode, node, out);
      } else if (s.serviceAccountToken) {
        const token = sources.token?.(pod, v.name, s.serviceAccountToken);
        if (token === undefined) {
          throw new MountError(
            `failed to fetch token: no token for service account "${pod.spec?.serviceAccountName ?? "default"}" yet`,
          );
        }
        out.set(s.serviceAccountToken.path, { data: token, mode });
      }
    }
  }
  return out;
}

/** Whether a volume's files come from sources that change (and are written again). */
export function isProjectedKind(v: Volume): boolean {
  return !!(v.configMap || v.secret || v.downwardAPI || v.projected);
}

/**
 * Sets up (or brings up to date) every volume of `pod` under `podDir`, and each
 * container's root; returns the volumes that could not be set up.
 */
export function setUpVolumes(
  pod: Pod,
  podDir: string,
  sources: VolumeSources,
  node: NodeResources,
): VolumeError[] {
  const errors: VolumeError[] = [];
  const dir = volumesDir(podDir);
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  for (const v of pod.spec?.volumes ?? []) {
    const target = join(dir, v.name);
    try {
      if (v.emptyDir) {
        const shm =
          v.emptyDir.medium === "Memory" ? shmDir(pod.metadata.uid ?? "", v.name) : undefined;
        if (shm) {
          mkdirSync(shm, { recursive: true, mode: 0o777 });
          if (!existsSync(target)) symlinkSync(shm, target);
        } else mkdirSync(target, { recursive: true, mode: 0o777 });
      } else if (isProjectedKind(v)) {
        writePayload(target, payloadOf(pod, v, sources, node));
      }
    } catch (err) {
      const message = err instanceof MountError ? err.message : (err as Error).message;
      errors.push({ volume: v.name, message });
    }
  }
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    linkMounts(pod, c, podDir);
  }
  return errors;
}

/** The directory a mount shows: its volume, or the volume's subPath (made if missing, as the kubelet does). */
function mountSource(
  podDir: string,
  m: VolumeMount,
  env?: Record<string, string>,
): string | undefined {
  const base = join(volumesDir(podDir), m.name);
  let sub = m.subPath ?? "";
  if (!sub && m.subPathExpr) {
    sub = m.subPathExpr.replace(
      /\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g,
      (_a, n: string) => env?.[n] ?? "",
    );
  }
  if (!sub) return base;
  if (!validPayloadPath(sub)) return undefined;
  return join(base, normalize(sub));
}

function linkMounts(pod: Pod, c: Container, podDir: string): void {
  const root = containerRoot(podDir, c.name);
  const names = new Set((pod.spec?.volumes ?? []).map((v) => v.name));
  for (const m of c.volumeMounts ?? []) {
    if (!names.has(m.name) || !m.mountPath.startsWith("/")) continue;
    const source = mountSource(podDir, m);
    if (!source) continue;
    const link = join(root, normalize(m.mountPath));
    try {
      if (m.subPath && !existsSync(source)) mkdirSync(source, { recursive: true, mode: 0o777 });
      try {
        lstatSync(link);
        continue;
      } catch {}
      mkdirSync(dirname(link), { recursive: true });
      symlinkSync(source, link);
    } catch {
      // A mountPath inside another mount: the process finds it by its variable.
    }
  }
}

/** A container's volume mounts as bind mounts at their mountPaths (the isolated mode), parents first. */
export function containerMounts(
  pod: Pod,
  c: Container,
  podDir: string,
  env?: Record<string, string>,
): BindMount[] {
  const volumes = new Map((pod.spec?.volumes ?? []).map((v) => [v.name, v]));
  const out: BindMount[] = [];
  for (const m of c.volumeMounts ?? []) {
    const v = volumes.get(m.name);
    if (!v || !m.mountPath.startsWith("/")) continue;
    const source = mountSource(podDir, m, env);
    if (!source) continue;
    if ((m.subPath || m.subPathExpr) && !existsSync(source)) {
      mkdirSync(source, { recursive: true, mode: 0o777 });
    }
    out.push({
      source,
      target: normalize(m.mountPath),
      readOnly: !!m.readOnly || isProjectedKind(v),
    });
  }
  return out.sort((a, b) => a.target.split("/").length - b.target.split("/").length);
}

/** `SETPOINT_VOLUME_<NAME>` of a mount named `name`. */
export function mountVariable(name: string): string {
  return `SETPOINT_VOLUME_${name.toUpperCase().replace(/[^A-Z0-9]/g, "_")}`;
}

/** The variables by which a container's process finds its mounts. */
export function mountEnv(
  pod: Pod,
  c: Container,
  podDir: string,
  env?: Record<string, string>,
): Record<string, string> {
  const out: Record<string, string> = {};
  const names = new Set((pod.spec?.volumes ?? []).map((v) => v.name));
  const mounts = (c.volumeMounts ?? []).filter((m) => names.has(m.name));
  if (!mounts.length) return out;
  out.SETPOINT_ROOT = containerRoot(podDir, c.name);
  for (const m of mounts) {
    const source = mountSource(podDir, m, env);
    const name = mountVariable(m.name);
    if (source && !(name in out)) out[name] = source;
  }
  return out;
}

/** Removes a Pod's volumes (emptyDirs with them, in /dev/shm too) and container roots. */
export function tearDownVolumes(pod: Pod, podDir: string): void {
  for (const v of pod.spec?.volumes ?? []) {
    if (v.emptyDir?.medium === "Memory") {
      const shm = shmDir(pod.metadata.uid ?? "", v.name);
      if (shm) rmSync(shm, { recursive: true, force: true });
    }
  }
  rmSync(volumesDir(podDir), { recursive: true, force: true });
  rmSync(join(podDir, "_root"), { recursive: true, force: true });
}
