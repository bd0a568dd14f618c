/**
 * Writes the kubeconfig that lets kubectl and the official clients reach this
 * apiserver: one cluster (with the CA inline), one user (the admin token) and a
 * context named `setpoint` that is current, and, when there is one, the admin's
 * client certificate as the user and context `setpoint-cert`.
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
  /** A client certificate and its key (PEM): a context of its own beside the token's. */
  clientCertificate?: { cert: string; key: string };
  /** Context, cluster and user name. Default "setpoint". */
  name?: string;
  /** Namespace of the context. Default "default". */
  namespace?: string;
}

export function kubeconfigYaml(p: KubeconfigParams): string {
  const name = p.name ?? "setpoint";
  const namespace = p.namespace ?? "default";
  const cluster: Record<string, unknown> = { server: p.server };
  if (p.caCert) cluster["certificate-authority-data"] = Buffer.from(p.caCert).toString("base64");
  const certUser = (c: { cert: string; key: string }) => ({
    "client-certificate-data": Buffer.from(c.cert).toString("base64"),
    "client-key-data": Buffer.from(c.key).toString("base64"),
  });
  // The token is the current context's credential; a certificate given beside it is a
  // context of its own (NAME-cert), so a copy with its token swapped never still
  // authenticates as the certificate's user.
  const users: { name: string; user: Record<string, unknown> }[] = [];
  if (p.token || !p.clientCertificate) {
    users.push({ name, user: p.token ? { token: p.token } : {} });
    if (p.clientCertificate) {
      users.push({ name: `${name}-cert`, user: certUser(p.clientCertificate) });
    }
  } else {
    users.push({ name, user: certUser(p.clientCertificate) });
  }
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name, cluster }],
    users,
    contexts: users.map((u) => ({
      name: u.name,
      context: { cluster: name, user: u.name, namespace },
    })),
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
