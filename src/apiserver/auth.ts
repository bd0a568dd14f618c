/**
 * Authentication: who is making a request. Setpoint authenticates bearer tokens
 * from a static table (the admin token written at first start, plus any others the
 * operator adds); requests without a valid token are refused with 401, except the
 * public endpoints (health and version), as in Kubernetes.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import type { IncomingMessage } from "node:http";

export interface UserInfo {
  name: string;
  groups: string[];
}

/** The identity used when authentication is switched off (test environments). */
export const ANONYMOUS_ADMIN: UserInfo = { name: "admin", groups: ["system:masters"] };

/** Paths anyone may read without credentials. */
export function isPublicPath(path: string): boolean {
  return (
    path === "/version" ||
    path === "/healthz" ||
    path === "/livez" ||
    path === "/readyz" ||
    path.startsWith("/healthz/") ||
    path.startsWith("/livez/") ||
    path.startsWith("/readyz/")
  );
}

export interface Authenticator {
  /** The user a request is from, or undefined if it carries no valid credentials. */
  authenticate(req: IncomingMessage): UserInfo | undefined;
}

/** Authenticates `Authorization: Bearer <token>` against a fixed table of tokens. */
export class TokenAuthenticator implements Authenticator {
  private readonly tokens: { token: Buffer; user: UserInfo }[];
  constructor(tokens: Iterable<[string, UserInfo]>) {
    this.tokens = [...tokens].map(([token, user]) => ({ token: Buffer.from(token), user }));
  }
  authenticate(req: IncomingMessage): UserInfo | undefined {
    const header = req.headers.authorization;
    if (!header) return undefined;
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) return undefined;
    const presented = Buffer.from(match[1]!);
    for (const { token, user } of this.tokens) {
      if (token.length === presented.length && timingSafeEqual(token, presented)) return user;
    }
    return undefined;
  }
}

/** Bytes of randomness in a generated token. */
export const TOKEN_BYTES = 32;

export function generateToken(): string {
  return randomBytes(TOKEN_BYTES).toString("base64url");
}

/** Reads the token kept at `path`, generating and saving one on first use. */
export async function loadOrCreateToken(path: string): Promise<string> {
  if (existsSync(path)) {
    const token = (await readFile(path, "utf8")).trim();
    if (token) return token;
  }
  const token = generateToken();
  await writeFile(path, `${token}\n`, { mode: 0o600 });
  return token;
}
