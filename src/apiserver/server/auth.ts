/**
 * Authentication: who is making a request. Setpoint authenticates bearer tokens
 * from a static table (the admin token written at first start, plus those of a
 * token file in Kubernetes' `--token-auth-file` format) and ServiceAccount tokens
 * (../tokens/, issued by `serviceaccounts/token`); requests without a valid
 * token are refused with 401, except the public endpoints (health and version), as
 * in Kubernetes.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import type { IncomingMessage } from "node:http";
import type { TLSSocket } from "node:tls";
import {
  SERVICE_ACCOUNTS_GROUP,
  ServiceAccountTokens,
  serviceAccountUserName,
  type TokenRefusal,
} from "../tokens/index.ts";

export interface UserInfo {
  name: string;
  groups: string[];
  uid?: string;
  /** What the authenticator adds, by key (Kubernetes' user.Info extra). */
  extra?: Record<string, string[]>;
}

/**
 * The extra a ServiceAccount token's user carries, as Kubernetes 1.32 sets it: the
 * token's id (`JTI=<jti>`), and for a token bound to a Pod its name and uid and the
 * name and uid of the Node it runs on (ServiceAccountTokenPodNodeInfo).
 */
export const CREDENTIAL_ID_EXTRA = "authentication.kubernetes.io/credential-id";
export const POD_NAME_EXTRA = "authentication.kubernetes.io/pod-name";
export const POD_UID_EXTRA = "authentication.kubernetes.io/pod-uid";
export const NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name";
export const NODE_UID_EXTRA = "authentication.kubernetes.io/node-uid";

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
  /** The user of a bearer token, when this authenticator knows tokens (for TokenReview). */
  authenticateToken?(token: string): UserInfo | undefined;
}

/** The token of an `Authorization: Bearer <token>` header, if the request has one. */
export function bearerToken(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : undefined;
}

/** The extended key usage a client certificate must allow (TLS Web Client Authentication). */
const CLIENT_AUTH_USAGE = "1.3.6.1.5.5.7.3.2";

/**
 * Authenticates the TLS client certificate of a request, once the server has
 * verified it against its client CAs, as Kubernetes does: the subject's CN is the
 * user and each O a group; a certificate not meant for client authentication is
 * not accepted. The user is worked out once per connection (the certificate is
 * the handshake's; a renegotiation, which emits `secure` again, forgets it).
 */
export class ClientCertificateAuthenticator implements Authenticator {
  readonly #users = new WeakMap<TLSSocket, UserInfo | null>();

  authenticate(req: IncomingMessage): UserInfo | undefined {
    const socket = req.socket as TLSSocket;
    if (!socket.encrypted || !socket.authorized) return undefined;
    const known = this.#users.get(socket);
    if (known !== undefined) return known ?? undefined;
    const user = this.#fromCertificate(socket);
    this.#users.set(socket, user ?? null);
    socket.once("secure", () => this.#users.delete(socket));
    return user;
  }

  #fromCertificate(socket: TLSSocket): UserInfo | undefined {
    const cert = socket.getPeerCertificate();
    const name = cert?.subject?.CN;
    if (typeof name !== "string" || name === "") return undefined;
    if (!(cert.ext_key_usage ?? []).includes(CLIENT_AUTH_USAGE)) return undefined;
    const o: unknown = cert.subject.O;
    const groups = (Array.isArray(o) ? o : o === undefined ? [] : [o]).map(String);
    return { name, groups };
  }
}

/** Authenticates `Authorization: Bearer <token>` against a fixed table of tokens. */
export class TokenAuthenticator implements Authenticator {
  private readonly tokens: { token: Buffer; user: UserInfo }[];
  constructor(tokens: Iterable<[string, UserInfo]>) {
    this.tokens = [...tokens].map(([token, user]) => ({ token: Buffer.from(token), user }));
  }
  /** Accepts `token` as `user` from now on. */
  add(token: string, user: UserInfo): void {
    this.tokens.push({ token: Buffer.from(token), user });
  }
  authenticate(req: IncomingMessage): UserInfo | undefined {
    const bearer = bearerToken(req);
    return bearer === undefined ? undefined : this.authenticateToken(bearer);
  }
  authenticateToken(bearer: string): UserInfo | undefined {
    const presented = Buffer.from(bearer);
    for (const { token, user } of this.tokens) {
      if (token.length === presented.length && timingSafeEqual(token, presented)) return user;
    }
    return undefined;
  }
}

/**
 * The uid of a ServiceAccount as the server knows it now, or undefined when it does
 * not exist, is being deleted, or cannot be told yet (the cache is not ready).
 */
export type ServiceAccountLookup = (namespace: string, name: string) => string | undefined;

/** The uid of a Pod or Secret as the server knows it now (undefined as for ServiceAccounts). */
export type BoundObjectLookup = (
  kind: "Pod" | "Secret",
  namespace: string,
  name: string,
) => string | undefined;

/**
 * Authenticates ServiceAccount tokens: a bearer JWT whose signature, times and
 * audience `tokens` accepts, for a ServiceAccount that still exists with the uid
 * in the token (Kubernetes' bound tokens: deleting or recreating the account
 * revokes its tokens). The user is `system:serviceaccount:NS:NAME` with the
 * account's uid, in the groups `system:serviceaccounts` and
 * `system:serviceaccounts:NS`.
 */
export class ServiceAccountTokenAuthenticator implements Authenticator {
  constructor(
    private readonly tokens: ServiceAccountTokens,
    private readonly lookup: ServiceAccountLookup,
    private readonly boundLookup?: BoundObjectLookup,
  ) {}
  authenticate(req: IncomingMessage): UserInfo | undefined {
    const bearer = bearerToken(req);
    if (bearer === undefined) return undefined;
    return this.authenticateToken(bearer);
  }
  /** The user of a token, or undefined if it is not a valid ServiceAccount token now. */
  authenticateToken(token: string, now = new Date()): UserInfo | undefined {
    const review = this.review(token, this.tokens.audiences, now);
    return review.user;
  }
  /**
   * A TokenReview of a token for `audiences`: its user and the audiences it is good
   * for among them, or the reason it is refused (Kubernetes' words) when it is a
   * ServiceAccount token that fails.
   */
  review(
    token: string,
    audiences: readonly string[],
    now = new Date(),
  ): { user?: UserInfo; audiences: string[]; error?: string } {
    if (!ServiceAccountTokens.looksLikeJwt(token)) return { audiences: [] };
    const verdict = this.tokens.verify(token, now, audiences);
    if (!verdict.ok) {
      // Another issuer's token is not this authenticator's to judge.
      const why = TOKEN_REFUSALS[verdict.reason];
      return why ? { audiences: [], error: `[invalid bearer token, ${why}]` } : { audiences: [] };
    }
    const { namespace, name, uid } = verdict;
    if (this.lookup(namespace, name) !== uid) {
      return {
        audiences: [],
        error: `[invalid bearer token, service account ${namespace}/${name} (uid ${uid}) no longer exists]`,
      };
    }
    const bound = verdict.bound;
    if (bound) {
      const live = this.boundLookup?.(bound.kind, namespace, bound.name);
      if (live === undefined) {
        return {
          audiences: [],
          error: "[invalid bearer token, service account token has been invalidated]",
        };
      }
      if (live !== bound.uid) {
        return {
          audiences: [],
          error: `[invalid bearer token, ${bound.kind.toLowerCase()} UID (${live}) does not match claim (${bound.uid})]`,
        };
      }
    }
    const extra: Record<string, string[]> = {};
    if (bound?.kind === "Pod") {
      extra[POD_NAME_EXTRA] = [bound.name];
      extra[POD_UID_EXTRA] = [bound.uid];
    }
    if (verdict.jti) extra[CREDENTIAL_ID_EXTRA] = [`JTI=${verdict.jti}`];
    if (bound?.kind === "Pod" && verdict.node) {
      extra[NODE_NAME_EXTRA] = [verdict.node.name];
      if (verdict.node.uid) extra[NODE_UID_EXTRA] = [verdict.node.uid];
    }
    return {
      user: {
        name: serviceAccountUserName(namespace, name),
        uid,
        groups: [SERVICE_ACCOUNTS_GROUP, `${SERVICE_ACCOUNTS_GROUP}:${namespace}`],
        ...(Object.keys(extra).length > 0 ? { extra } : {}),
      },
      audiences: verdict.audiences.filter((a) => audiences.includes(a)),
    };
  }
}

/** Why a ServiceAccount token is refused, as a TokenReview's `error` says it. */
const TOKEN_REFUSALS: Partial<Record<TokenRefusal, string>> = {
  malformed: "token is malformed",
  algorithm: "token is signed with an algorithm or key this server does not use",
  signature: "token signature is invalid",
  claims: "token claims are invalid",
  expired: "service account token has expired",
  "not-yet-valid": "service account token is not valid yet",
  audience: "token audiences are invalid for the target audiences",
};

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

/** A token file that cannot be used: the message names the line and what is wrong. */
export class TokenFileError extends Error {}

/** Splits one CSV line: fields separated by commas, a field in double quotes may hold commas ("" is a quote). */
function csvFields(line: string): string[] | null {
  const out: string[] = [];
  let i = 0;
  for (;;) {
    let value = "";
    if (line[i] === '"') {
      i++;
      for (;;) {
        if (i >= line.length) return null; // unterminated quote
        if (line[i] === '"') {
          if (line[i + 1] === '"') {
            value += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        value += line[i++];
      }
      if (i < line.length && line[i] !== ",") return null;
    } else {
      const comma = line.indexOf(",", i);
      const end = comma === -1 ? line.length : comma;
      value = line.slice(i, end);
      i = end;
    }
    out.push(value.trim());
    if (i >= line.length) return out;
    i++; // the comma
  }
}

/**
 * Parses a static token file as Kubernetes' `--token-auth-file` reads it: one CSV
 * line per token, `token,user,uid[,"group1,group2"]`; blank lines and lines starting
 * with `#` are skipped. Throws TokenFileError naming the line of the first problem
 * (fewer than three fields, an empty token or user, a token given twice).
 */
export function parseTokenFile(text: string, source = "token file"): [string, UserInfo][] {
  const out: [string, UserInfo][] = [];
  const seen = new Set<string>();
  const lines = text.split(/\r?\n/);
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n].trim();
    if (line === "" || line.startsWith("#")) continue;
    const where = `${source}, line ${n + 1}`;
    const fields = csvFields(line);
    if (!fields) throw new TokenFileError(`${where}: unbalanced double quotes`);
    if (fields.length < 3) {
      throw new TokenFileError(
        `${where}: want token,user,uid[,"group,..."], got ${fields.length} fields`,
      );
    }
    const [token, name, uid, groups = ""] = fields;
    if (!token) throw new TokenFileError(`${where}: empty token`);
    if (!name) throw new TokenFileError(`${where}: empty user name`);
    if (seen.has(token)) throw new TokenFileError(`${where}: a token given twice`);
    seen.add(token);
    const user: UserInfo = {
      name,
      groups: groups
        .split(",")
        .map((g) => g.trim())
        .filter(Boolean),
    };
    if (uid) user.uid = uid;
    out.push([token, user]);
  }
  return out;
}
