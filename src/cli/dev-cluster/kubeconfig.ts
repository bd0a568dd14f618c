/**
 * The dev cluster's kubeconfigs: one context per apiserver (`apiserver-0`, the
 * current one, and `apiserver-1`), the same CA and credentials for each (the
 * admin's token, or a component's client certificate), and in
 * each cluster entry the runtime's servers extension listing every apiserver,
 * that one first, so Setpoint's clients fail over along it while kubectl talks to
 * the context's `server`.
 */
import { randomBytes } from "node:crypto";
import { rename, rm, writeFile } from "node:fs/promises";
import { SERVERS_EXTENSION } from "@setpoint/runtime";
import { stringify } from "yaml";

export async function writeDevClusterKubeconfig(
  path: string,
  opts: {
    servers: string[];
    caCert: string;
    /** The admin's token; or `clientCertificate` for a component's own identity. */
    token?: string;
    clientCertificate?: { cert: string; key: string };
    /** The user entry's name (default "admin"). */
    user?: string;
  },
): Promise<void> {
  const userName = opts.user ?? "admin";
  const user = opts.clientCertificate
    ? {
        "client-certificate-data": Buffer.from(opts.clientCertificate.cert).toString("base64"),
        "client-key-data": Buffer.from(opts.clientCertificate.key).toString("base64"),
      }
    : { token: opts.token ?? "" };
  const names = opts.servers.map((_, i) => `apiserver-${i}`);
  const doc = {
    apiVersion: "v1",
    kind: "Config",
    clusters: opts.servers.map((server, i) => ({
      name: names[i],
      cluster: {
        server,
        "certificate-authority-data": Buffer.from(opts.caCert).toString("base64"),
        extensions: [
          {
            name: SERVERS_EXTENSION,
            extension: { servers: [server, ...opts.servers.filter((s) => s !== server)] },
          },
        ],
      },
    })),
    users: [{ name: userName, user }],
    contexts: names.map((name) => ({
      name,
      context: { cluster: name, user: userName, namespace: "default" },
    })),
    "current-context": names[0],
    preferences: {},
  };
  const temp = `${path}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    await writeFile(temp, stringify(doc), { mode: 0o600 });
    await rename(temp, path);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
}
