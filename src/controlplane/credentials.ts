/**
 * The control plane's credentials: the serving certificate and its CA, the admin
 * bearer token, and the key ServiceAccount tokens are signed with. Kept in the data
 * dir (made on first start, owner-only keys, reused afterwards; what this start made
 * is recorded so a failed start can take it back), or made fresh in memory for a
 * throwaway control plane (tests, benchmarks).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { generateToken, loadOrCreateToken } from "../apiserver/server/auth.ts";
import {
  CLIENT_CERT_FILES,
  generateTlsMaterial,
  loadOrCreateTlsMaterial,
  TLS_FILES,
  type TlsMaterial,
} from "../apiserver/server/certs.ts";
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
