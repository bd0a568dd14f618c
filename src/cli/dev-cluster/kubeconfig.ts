/**
 * The dev cluster's kubeconfig: one context per apiserver (`apiserver-0`, the
 * current one, and `apiserver-1`), the same CA and admin token for each, and in
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
  opts: { servers: string[]; caCert: string; token: string },
): Promise<void> {
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
    users: [{ name: "admin", user: { token: opts.token } }],
    contexts: names.map((name) => ({
      name,
      context: { cluster: name, user: "admin", namespace: "default" },
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
