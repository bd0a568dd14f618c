/**
 * Writes the kubeconfig that lets kubectl and the official clients reach this
 * apiserver: one cluster (with the CA inline), one user (the admin token), and a
 * context named `setpoint` that is current.
 */
import { randomBytes } from "node:crypto";
import { rename, rm, writeFile } from "node:fs/promises";
import { stringify } from "yaml";

export interface KubeconfigParams {
  server: string;
  /** PEM of the CA to trust (omitted for plain http). */
  caCert?: string;
  /** Bearer token (omitted when authentication is off). */
  token?: string;
  /** Context, cluster and user name. Default "setpoint". */
  name?: string;
  /** Namespace of the context. Default "default". */
  namespace?: string;
}

export function kubeconfigYaml(p: KubeconfigParams): string {
  const name = p.name ?? "setpoint";
  const cluster: Record<string, unknown> = { server: p.server };
  if (p.caCert) cluster["certificate-authority-data"] = Buffer.from(p.caCert).toString("base64");
  const user: Record<string, unknown> = {};
  if (p.token) user.token = p.token;
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name, cluster }],
    users: [{ name, user }],
    contexts: [
      { name, context: { cluster: name, user: name, namespace: p.namespace ?? "default" } },
    ],
    "current-context": name,
    preferences: {},
  });
}

/**
 * Writes the kubeconfig to `path`, readable by the owner only (it holds a
 * credential). Atomically: written beside it and renamed into place, so a reader
 * (or a crash) never sees half a file.
 */
export async function writeKubeconfig(path: string, p: KubeconfigParams): Promise<void> {
  const temp = `${path}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    await writeFile(temp, kubeconfigYaml(p), { mode: 0o600 });
    await rename(temp, path);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
}
