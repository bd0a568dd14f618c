/**
 * The control plane's credentials: the serving certificate and its CA, the admin
 * bearer token, and the key ServiceAccount tokens are signed with. Kept in the data
 * dir (made on first start, owner-only keys, reused afterwards; what this start made
 * is recorded so a failed start can take it back), or made fresh in memory for a
 * throwaway control plane (tests, benchmarks).
 */
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { RestConfig } from "@setpoint/runtime";
import { generateToken, loadOrCreateToken } from "../apiserver/server/auth.ts";
import {
  CLIENT_CERT_FILES,
  generateTlsMaterial,
  issueCertificate,
  loadOrCreateTlsMaterial,
  TLS_FILES,
  type TlsMaterial,
} from "../apiserver/server/certs.ts";
import { writeKubeconfig } from "../apiserver/server/kubeconfig-yaml.ts";
import { CONTROLLER_MANAGER_USER, SCHEDULER_USER } from "../registry/builtin/rbac/index.ts";
import type { CreatedFiles } from "./created-files.ts";

/** The file in the data dir holding the admin bearer token (0600). */
export const ADMIN_TOKEN_FILE = "admin-token";
/** The file in the data dir holding the ServiceAccount token signing key (0600). */
export const SERVICE_ACCOUNT_KEY_FILE = "service-account.key";

export interface Credentials {
  /** Serving certificate, key and CA; undefined: plain http. */
  tls: TlsMaterial | undefined;
  /** The admin's bearer token; undefined: no authentication. */
  adminToken: string | undefined;
  /** The ServiceAccount token signing key; undefined: a random one per start. */
  serviceAccountKey: string | undefined;
}

/** Loads the data dir's credentials, making the missing ones (recorded in `created`). */
export async function dataDirCredentials(
  dir: string,
  hosts: string[],
  created: CreatedFiles,
): Promise<Credentials> {
  const fresh = (name: string): string[] => {
    const path = join(dir, name);
    return existsSync(path) ? [] : [path];
  };
  // Recorded before they are written, so a write that fails half-way is taken back too.
  created.add(...[...Object.values(TLS_FILES), ...Object.values(CLIENT_CERT_FILES)].flatMap(fresh));
  const tls = await loadOrCreateTlsMaterial(dir, hosts);
  created.add(...fresh(ADMIN_TOKEN_FILE));
  const adminToken = await loadOrCreateToken(join(dir, ADMIN_TOKEN_FILE));
  created.add(...fresh(SERVICE_ACCOUNT_KEY_FILE));
  const serviceAccountKey = await loadOrCreateToken(join(dir, SERVICE_ACCOUNT_KEY_FILE));
  return { tls, adminToken, serviceAccountKey };
}

/** Fresh credentials held in memory only: https with a new CA, and/or a new admin token. */
export async function ephemeralCredentials(opts: {
  tls: boolean;
  auth: boolean;
  hosts: string[];
}): Promise<Credentials> {
  return {
    tls: opts.tls ? await generateTlsMaterial(opts.hosts) : undefined,
    adminToken: opts.auth ? generateToken() : undefined,
    serviceAccountKey: undefined,
  };
}

/** The kubeconfig `setpoint up` writes in the data dir for its node agent. */
export const NODE_KUBECONFIG_FILE = "node.kubeconfig";

/** Who a component's client certificate names: its user and groups (CN and O). */
export interface ComponentIdentity {
  user: string;
  groups: string[];
}

/** The identity of node NAME, as a kubelet's certificate names it. */
export function nodeIdentity(nodeName: string): ComponentIdentity {
  return { user: `system:node:${nodeName}`, groups: ["system:nodes"] };
}

/** The gateway's identity (bound to the `system:setpoint:gateway` ClusterRole). */
export const GATEWAY_IDENTITY: ComponentIdentity = { user: "system:setpoint:gateway", groups: [] };

/** The controller manager's identity (bound to `system:kube-controller-manager`). */
export const CONTROLLER_MANAGER_IDENTITY: ComponentIdentity = {
  user: CONTROLLER_MANAGER_USER,
  groups: [],
};

/** The scheduler's identity (bound to `system:kube-scheduler` and `system:volume-scheduler`). */
export const SCHEDULER_IDENTITY: ComponentIdentity = { user: SCHEDULER_USER, groups: [] };

/** A client certificate for `who` signed by the CA `ca` (its certificate and key, PEM). */
export async function signComponentCertificate(
  ca: { cert: string; key: string },
  who: ComponentIdentity,
): Promise<{ caCert: string; cert: string; key: string }> {
  const made = await issueCertificate({
    commonName: who.user,
    ...(who.groups.length > 0 ? { organizations: who.groups } : {}),
    issuer: ca,
    clientAuth: true,
  });
  return { caCert: ca.cert, ...made };
}

/**
 * A client certificate for `who`, signed by the CA kept in `dir` (ca.crt and
 * ca.key, as `setpoint up` makes them); throws when the data dir has no CA key.
 */
export async function issueComponentCertificate(
  dir: string,
  who: ComponentIdentity,
): Promise<{ caCert: string; cert: string; key: string }> {
  const caPath = join(dir, TLS_FILES.caCert);
  const keyPath = join(dir, CLIENT_CERT_FILES.caKey);
  if (!existsSync(caPath) || !existsSync(keyPath)) {
    throw new Error(
      `${dir} holds no CA to sign with (${TLS_FILES.caCert} and ${CLIENT_CERT_FILES.caKey})`,
    );
  }
  const [caCert, caKey] = await Promise.all([readFile(caPath, "utf8"), readFile(keyPath, "utf8")]);
  return signComponentCertificate({ cert: caCert, key: caKey }, who);
}

/** The RestConfig of a component presenting a certificate for `who` signed by `dir`'s CA. */
export async function componentRestConfig(
  dir: string,
  server: string,
  who: ComponentIdentity,
): Promise<RestConfig> {
  return certificateRestConfig(server, await issueComponentCertificate(dir, who));
}

/** The RestConfig presenting a client certificate `c` to `server` (trusting c.caCert). */
export function certificateRestConfig(
  server: string,
  c: { caCert: string; cert: string; key: string },
): RestConfig {
  return {
    server,
    ca: Buffer.from(c.caCert),
    cert: Buffer.from(c.cert),
    key: Buffer.from(c.key),
  };
}

/**
 * Writes a kubeconfig (0600, atomically) for `who` at `path`: the server, its CA,
 * and a client certificate signed by `dir`'s CA. How `setpoint up` hands its agent
 * a node identity, and what `setpoint credentials` writes for standalone agents
 * and gateways.
 */
export async function writeComponentKubeconfig(
  path: string,
  dir: string,
  server: string,
  who: ComponentIdentity,
): Promise<void> {
  const c = await issueComponentCertificate(dir, who);
  await writeKubeconfig(path, {
    server,
    caCert: c.caCert,
    clientCertificate: { cert: c.cert, key: c.key },
    name: "setpoint",
  });
}
