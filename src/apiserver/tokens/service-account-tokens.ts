/**
 * ServiceAccount tokens: JSON Web Tokens (RFC 7519) signed with HMAC-SHA256 under a
 * key the server keeps (in the data dir, `service-account.key`), carrying
 * Kubernetes' claims for a bound service account token:
 *
 *   iss, sub "system:serviceaccount:NS:NAME", aud, exp, iat, nbf, jti,
 *   "kubernetes.io": { namespace, serviceaccount: { name, uid }, [pod | secret]: { name, uid },
 *                      [node: { name, uid }] (a Pod-bound token: the Node the Pod runs on) }
 *
 * A token is valid while its signature, times and audience check out; the
 * authenticator (auth.ts) also requires the ServiceAccount to still exist with the
 * uid in the token, so deleting or recreating it revokes every token issued for it,
 * and a token bound to a Pod or Secret (`kubectl create token --bound-object-kind`)
 * stops working when that object is gone or being deleted.
 * Apiservers sharing storage must share the key.
 */
import { createHmac, randomUUID, timingSafeEqual } from "node:crypto";

/** Issuer (`iss`) and default audience of tokens, as Kubernetes' default `--service-account-issuer`. */
export const DEFAULT_SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local";

/** Prefix of a service account's user name: `system:serviceaccount:NS:NAME`. */
export const SERVICE_ACCOUNT_USER_PREFIX = "system:serviceaccount:";

/** The group of every service account, and the prefix of each namespace's group. */
export const SERVICE_ACCOUNTS_GROUP = "system:serviceaccounts";

/** The JWS algorithm of every token. */
export const TOKEN_ALGORITHM = "HS256";

/** Longest token text looked at (longer bearer tokens are not service account tokens). */
export const MAX_TOKEN_LENGTH = 16 * 1024;

/**
 * Clock skew allowed on exp and nbf, in seconds (as Kubernetes' JWT validation):
 * apiservers sharing a key need not have exactly the same time.
 */
export const CLOCK_LEEWAY_SECONDS = 60;

/** Fewest bytes of a signing key. */
export const MIN_KEY_BYTES = 32;

/** Where a token is valid for, and for whom. */
export interface TokenClaims {
  namespace: string;
  name: string;
  uid: string;
  audiences: string[];
  /** The object the token is bound to (in the ServiceAccount's namespace). */
  bound?: BoundObject;
  /** For a token bound to a Pod: the Node it is scheduled to (uid when the Node exists). */
  node?: NodeRef;
}

/** A Node a Pod-bound token names. */
export interface NodeRef {
  name: string;
  uid?: string;
}

/** A Pod or Secret a token lives only as long as. */
export interface BoundObject {
  kind: "Pod" | "Secret";
  name: string;
  uid: string;
}

const BOUND_CLAIMS = { Pod: "pod", Secret: "secret" } as const;

/** A token issued, and when it stops being valid. */
export interface IssuedToken {
  token: string;
  /** exp, in whole seconds. */
  expires: Date;
}

/** Why a token was refused. */
export type TokenRefusal =
  | "malformed"
  | "algorithm"
  | "signature"
  | "issuer"
  | "claims"
  | "expired"
  | "not-yet-valid"
  | "audience";

/** The outcome of verifying a token: its service account, or why it was refused. */
export type TokenVerdict =
  | {
      ok: true;
      namespace: string;
      name: string;
      uid: string;
      audiences: string[];
      bound?: BoundObject;
      /** The token's id (`jti`), when it has one. */
      jti?: string;
      node?: NodeRef;
    }
  | { ok: false; reason: TokenRefusal };

export interface ServiceAccountTokensOptions {
  /** The signing key: at least MIN_KEY_BYTES bytes (as text, its UTF-8 bytes). */
  key: string | Buffer;
  /** `iss` of issued tokens, and the only one accepted (default DEFAULT_SERVICE_ACCOUNT_ISSUER). */
  issuer?: string;
  /** Audiences this server accepts, the first also the default of a request (default: [issuer]). */
  audiences?: string[];
}

/** The user name of a service account. */
export function serviceAccountUserName(namespace: string, name: string): string {
  return `${SERVICE_ACCOUNT_USER_PREFIX}${namespace}:${name}`;
}

function b64json(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString("base64url");
}

const BASE64URL = /^[A-Za-z0-9_-]*$/;

function parseSegment(segment: string): Record<string, unknown> | undefined {
  if (!BASE64URL.test(segment)) return undefined;
  try {
    const value: unknown = JSON.parse(Buffer.from(segment, "base64url").toString("utf8"));
    if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
    return value as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

function isString(v: unknown): v is string {
  return typeof v === "string" && v !== "";
}

function isTime(v: unknown): v is number {
  return typeof v === "number" && Number.isFinite(v);
}

/**
 * Tokens whose signature was found good, kept with their decoded claims so that
 * the next request with one is not checked and decoded again (its times,
 * audience and claims are judged on every request). The oldest is forgotten
 * beyond this.
 */
export const SIGNED_TOKENS_KEPT = 1024;

/** Signs and verifies service account tokens with one key. */
export class ServiceAccountTokens {
  readonly issuer: string;
  readonly audiences: readonly string[];
  readonly #key: Buffer;
  /** Tokens signed with this key, and their claims (never modified), oldest first. */
  readonly #signed = new Map<string, Readonly<Record<string, unknown>>>();
  /** Key id: names the key without revealing it (a verifier with another key refuses early). */
  readonly #kid: string;

  constructor(opts: ServiceAccountTokensOptions) {
    this.#key = Buffer.isBuffer(opts.key) ? Buffer.from(opts.key) : Buffer.from(opts.key, "utf8");
    if (this.#key.length < MIN_KEY_BYTES) {
      throw new Error(`a service account signing key needs at least ${MIN_KEY_BYTES} bytes`);
    }
    this.issuer = opts.issuer ?? DEFAULT_SERVICE_ACCOUNT_ISSUER;
    this.audiences = opts.audiences?.length ? [...opts.audiences] : [this.issuer];
    this.#kid = createHmac("sha256", this.#key)
      .update("setpoint key id")
      .digest()
      .subarray(0, 16)
      .toString("base64url");
  }

  #sign(input: string): Buffer {
    return createHmac("sha256", this.#key).update(input).digest();
  }

  /** A token for `claims`, valid from `now` for `expirationSeconds`. */
  issue(claims: TokenClaims, expirationSeconds: number, now = new Date()): IssuedToken {
    const iat = Math.floor(now.getTime() / 1000);
    const exp = iat + expirationSeconds;
    const header = { alg: TOKEN_ALGORITHM, kid: this.#kid, typ: "JWT" };
    const payload = {
      aud: claims.audiences,
      exp,
      iat,
      iss: this.issuer,
      jti: randomUUID(),
      "kubernetes.io": {
        namespace: claims.namespace,
        serviceaccount: { name: claims.name, uid: claims.uid },
        ...(claims.bound
          ? {
              [BOUND_CLAIMS[claims.bound.kind]]: { name: claims.bound.name, uid: claims.bound.uid },
            }
          : {}),
        ...(claims.node
          ? {
              node: {
                name: claims.node.name,
                ...(claims.node.uid ? { uid: claims.node.uid } : {}),
              },
            }
          : {}),
      },
      nbf: iat,
      sub: serviceAccountUserName(claims.namespace, claims.name),
    };
    const input = `${b64json(header)}.${b64json(payload)}`;
    const token = `${input}.${this.#sign(input).toString("base64url")}`;
    return { token, expires: new Date(exp * 1000) };
  }

  /**
   * Whether `token` looks like a JWT at all (three base64url segments): only those
   * are this authenticator's to judge.
   */
  static looksLikeJwt(token: string): boolean {
    if (token.length > MAX_TOKEN_LENGTH) return false;
    const parts = token.split(".");
    return parts.length === 3 && parts.every((p) => p !== "" && BASE64URL.test(p));
  }

  /**
   * Verifies a token: signature, issuer, times (at `now`) and audience (one of
   * `audiences`, by default the server's own).
   */
  verify(
    token: string,
    now = new Date(),
    audiences: readonly string[] = this.audiences,
  ): TokenVerdict {
    let claims = this.#signed.get(token);
    if (claims === undefined) {
      const signed = this.#checkSignature(token);
      if (!signed.ok) return signed;
      claims = signed.claims;
      this.#signed.set(token, claims);
      if (this.#signed.size > SIGNED_TOKENS_KEPT) {
        const oldest = this.#signed.keys().next().value;
        if (oldest !== undefined) this.#signed.delete(oldest);
      }
    }
    return this.#judge(claims, now, audiences);
  }

  /** A token's form, header and signature checked: its claims, decoded. */
  #checkSignature(
    token: string,
  ): { ok: true; claims: Record<string, unknown> } | { ok: false; reason: TokenRefusal } {
    if (!ServiceAccountTokens.looksLikeJwt(token)) return { ok: false, reason: "malformed" };
    const [h, p, s] = token.split(".") as [string, string, string];
    const header = parseSegment(h);
    if (!header) return { ok: false, reason: "malformed" };
    if (header.alg !== TOKEN_ALGORITHM || (header.kid !== undefined && header.kid !== this.#kid)) {
      return { ok: false, reason: "algorithm" };
    }
    const expected = this.#sign(`${h}.${p}`);
    const presented = Buffer.from(s, "base64url");
    if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) {
      return { ok: false, reason: "signature" };
    }
    const claims = parseSegment(p);
    if (!claims) return { ok: false, reason: "malformed" };
    return { ok: true, claims };
  }

  /** The verdict on a signed token's claims: issuer, account, times (at `now`), audience. */
  #judge(
    claims: Readonly<Record<string, unknown>>,
    now: Date,
    audiences: readonly string[],
  ): TokenVerdict {
    if (claims.iss !== this.issuer) return { ok: false, reason: "issuer" };
    const k8s = claims["kubernetes.io"] as Record<string, unknown> | undefined;
    const sa = k8s?.serviceaccount as Record<string, unknown> | undefined;
    const namespace = k8s?.namespace;
    const name = sa?.name;
    const uid = sa?.uid;
    if (!isString(namespace) || !isString(name) || !isString(uid)) {
      return { ok: false, reason: "claims" };
    }
    if (claims.sub !== serviceAccountUserName(namespace, name)) {
      return { ok: false, reason: "claims" };
    }
    if (!isTime(claims.exp)) return { ok: false, reason: "claims" };
    const seconds = now.getTime() / 1000;
    if (seconds >= claims.exp + CLOCK_LEEWAY_SECONDS) return { ok: false, reason: "expired" };
    if (claims.nbf !== undefined) {
      if (!isTime(claims.nbf)) return { ok: false, reason: "claims" };
      if (seconds < claims.nbf - CLOCK_LEEWAY_SECONDS)
        return { ok: false, reason: "not-yet-valid" };
    }
    const aud = typeof claims.aud === "string" ? [claims.aud] : claims.aud;
    if (!Array.isArray(aud) || !aud.every(isString)) return { ok: false, reason: "claims" };
    if (!aud.some((a) => audiences.includes(a))) return { ok: false, reason: "audience" };
    let bound: BoundObject | undefined;
    for (const kind of ["Pod", "Secret"] as const) {
      const ref = k8s?.[BOUND_CLAIMS[kind]] as Record<string, unknown> | undefined;
      if (ref === undefined) continue;
      if (!isString(ref.name) || !isString(ref.uid)) return { ok: false, reason: "claims" };
      bound = { kind, name: ref.name, uid: ref.uid };
    }
    let node: NodeRef | undefined;
    const nodeClaim = k8s?.node as Record<string, unknown> | undefined;
    if (nodeClaim !== undefined) {
      if (!isString(nodeClaim.name)) return { ok: false, reason: "claims" };
      node = { name: nodeClaim.name, ...(isString(nodeClaim.uid) ? { uid: nodeClaim.uid } : {}) };
    }
    return {
      ok: true,
      namespace,
      name,
      uid,
      audiences: [...aud],
      ...(bound ? { bound } : {}),
      ...(isString(claims.jti) ? { jti: claims.jti } : {}),
      ...(node ? { node } : {}),
    };
  }
}
