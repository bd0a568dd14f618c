/**
 * ServiceAccount tokens: the JWT format and its verification (signature, issuer,
 * times, audience), and the authenticator that also requires the account to still
 * exist with the token's uid.
 */
import type { IncomingMessage } from "node:http";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  CLOCK_LEEWAY_SECONDS,
  DEFAULT_SERVICE_ACCOUNT_ISSUER,
  ServiceAccountTokenAuthenticator,
  ServiceAccountTokens,
} from "../../src/apiserver/server/index.ts";

const KEY = "k".repeat(32);
const NOW = new Date("2030-01-01T00:00:00Z");
const CLAIMS = { namespace: "team", name: "bot", uid: "uid-1", audiences: ["api"] };

function decodePart(token: string, i: number): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split(".")[i]!, "base64url").toString("utf8"));
}

function encodePart(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString("base64url");
}

/** The token with its payload replaced by `edit(payload)` (the signature kept). */
function withPayload(token: string, edit: (p: Record<string, unknown>) => void): string {
  const [h, , s] = token.split(".");
  const payload = decodePart(token, 1);
  edit(payload);
  return `${h}.${encodePart(payload)}.${s}`;
}

describe("ServiceAccountTokens", () => {
  const tokens = new ServiceAccountTokens({ key: KEY, audiences: ["api", "other-api"] });

  it("issues a JWT with Kubernetes' claims, which it then accepts", () => {
    const { token, expires } = tokens.issue(CLAIMS, 3600, NOW);
    expect(token.split(".")).toHaveLength(3);
    expect(decodePart(token, 0)).toMatchObject({ alg: "HS256", typ: "JWT" });
    const iat = NOW.getTime() / 1000;
    const payload = decodePart(token, 1);
    expect(payload).toMatchObject({
      iss: DEFAULT_SERVICE_ACCOUNT_ISSUER,
      sub: "system:serviceaccount:team:bot",
      aud: ["api"],
      iat,
      nbf: iat,
      exp: iat + 3600,
      "kubernetes.io": { namespace: "team", serviceaccount: { name: "bot", uid: "uid-1" } },
    });
    expect(payload.jti).toMatch(/^[0-9a-f-]{36}$/);
    expect(expires.getTime()).toBe(NOW.getTime() + 3600_000);
    expect(tokens.verify(token, NOW)).toEqual({ ok: true, ...CLAIMS, jti: payload.jti });
    // Every token gets its own id.
    expect(decodePart(tokens.issue(CLAIMS, 3600, NOW).token, 1).jti).not.toBe(payload.jti);
  });

  it("refuses a token whose payload was changed (another name, uid, audience, expiry)", () => {
    const { token } = tokens.issue(CLAIMS, 3600, NOW);
    const edits: ((p: Record<string, unknown>) => void)[] = [
      (p) => {
        p.sub = "system:serviceaccount:team:admin";
      },
      (p) => {
        (p["kubernetes.io"] as { namespace: string }).namespace = "kube-system";
      },
      (p) => {
        p.aud = ["other-api"];
      },
      (p) => {
        p.exp = (p.exp as number) + 1;
      },
    ];
    for (const edit of edits) {
      expect(tokens.verify(withPayload(token, edit), NOW)).toEqual({
        ok: false,
        reason: "signature",
      });
    }
  });

  it("refuses any token with one character changed", () => {
    const { token } = tokens.issue(CLAIMS, 3600, NOW);
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.";
    fc.assert(
      fc.property(fc.nat({ max: token.length - 1 }), fc.constantFrom(...alphabet), (at, c) => {
        fc.pre(token[at] !== c);
        const changed = token.slice(0, at) + c + token.slice(at + 1);
        // A change in the last character's unused low bits may decode to the same bytes.
        const sameBytes =
          at === token.length - 1 &&
          Buffer.from(changed.split(".")[2]!, "base64url").equals(
            Buffer.from(token.split(".")[2]!, "base64url"),
          );
        fc.pre(!sameBytes);
        expect(tokens.verify(changed, NOW).ok).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it("refuses an expired token and one not valid yet, allowing a minute of clock skew", () => {
    const { token } = tokens.issue(CLAIMS, 600, NOW);
    const at = (seconds: number) => new Date(NOW.getTime() + seconds * 1000);
    expect(tokens.verify(token, at(600 + CLOCK_LEEWAY_SECONDS - 1)).ok).toBe(true);
    expect(tokens.verify(token, at(600 + CLOCK_LEEWAY_SECONDS))).toEqual({
      ok: false,
      reason: "expired",
    });
    expect(tokens.verify(token, at(-CLOCK_LEEWAY_SECONDS)).ok).toBe(true);
    expect(tokens.verify(token, at(-CLOCK_LEEWAY_SECONDS - 1))).toEqual({
      ok: false,
      reason: "not-yet-valid",
    });
  });

  it("refuses a token for an audience it does not serve", () => {
    const { token } = tokens.issue({ ...CLAIMS, audiences: ["vault"] }, 3600, NOW);
    expect(tokens.verify(token, NOW)).toEqual({ ok: false, reason: "audience" });
    const some = tokens.issue({ ...CLAIMS, audiences: ["vault", "other-api"] }, 3600, NOW);
    expect(tokens.verify(some.token, NOW).ok).toBe(true);
    // A token accepted a moment ago is judged again for each audience asked about.
    expect(tokens.verify(some.token, NOW, ["vault"]).ok).toBe(true);
    expect(tokens.verify(some.token, NOW, ["elsewhere"])).toEqual({
      ok: false,
      reason: "audience",
    });
  });

  it("refuses a token signed with another key, or by another issuer", () => {
    const other = new ServiceAccountTokens({ key: "o".repeat(32), audiences: ["api"] });
    const { token } = other.issue(CLAIMS, 3600, NOW);
    expect(other.verify(token, NOW).ok).toBe(true);
    expect(tokens.verify(token, NOW).ok).toBe(false);
    const elsewhere = new ServiceAccountTokens({
      key: KEY,
      issuer: "https://elsewhere.example",
      audiences: ["api"],
    });
    expect(tokens.verify(elsewhere.issue(CLAIMS, 3600, NOW).token, NOW)).toEqual({
      ok: false,
      reason: "issuer",
    });
  });

  it("refuses unsigned tokens, other algorithms and what is not a JWT", () => {
    const { token } = tokens.issue(CLAIMS, 3600, NOW);
    const [, p] = token.split(".");
    const none = `${encodePart({ alg: "none", typ: "JWT" })}.${p}.`;
    expect(tokens.verify(none, NOW).ok).toBe(false);
    const rs = `${encodePart({ alg: "RS256", typ: "JWT" })}.${p}.${token.split(".")[2]}`;
    expect(tokens.verify(rs, NOW)).toEqual({ ok: false, reason: "algorithm" });
    for (const bad of ["", "abc", "a.b", "a.b.c.d", "not a token", `${token}.`, "!.!.!"]) {
      expect(tokens.verify(bad, NOW).ok, bad).toBe(false);
    }
  });

  it("needs a key of at least 32 bytes", () => {
    expect(() => new ServiceAccountTokens({ key: "short" })).toThrow(/at least 32 bytes/);
  });
});

describe("ServiceAccountTokenAuthenticator", () => {
  const tokens = new ServiceAccountTokens({ key: KEY });
  const request = (token: string) =>
    ({ headers: { authorization: `Bearer ${token}` } }) as IncomingMessage;

  it("names the service account while it exists with the token's uid", () => {
    let current: string | undefined = "uid-1";
    const auth = new ServiceAccountTokenAuthenticator(tokens, (ns, name) =>
      ns === "team" && name === "bot" ? current : undefined,
    );
    const { token } = tokens.issue({ ...CLAIMS, audiences: [...tokens.audiences] }, 3600);
    const jti = JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString()).jti;
    expect(auth.authenticate(request(token))).toEqual({
      name: "system:serviceaccount:team:bot",
      uid: "uid-1",
      groups: ["system:serviceaccounts", "system:serviceaccounts:team"],
      extra: { "authentication.kubernetes.io/credential-id": [`JTI=${jti}`] },
    });
    current = "uid-2"; // deleted and created again
    expect(auth.authenticate(request(token))).toBeUndefined();
    current = undefined; // deleted, or not known yet
    expect(auth.authenticate(request(token))).toBeUndefined();
    expect(auth.authenticate({ headers: {} } as IncomingMessage)).toBeUndefined();
  });
});
