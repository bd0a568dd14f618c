/**
 * List continue tokens. A token carries the resourceVersion of the list's first
 * page, the last key returned (relative to the collection's prefix), and, when the
 * page came from storage, the store's own token for the next page. A token whose
 * revision was compacted is answered with 410 and a fresh token (rv -1: continue at
 * the latest revision from the same key), as Kubernetes does.
 */
import { errors } from "@setpoint/api";

/** The version tag of the token format (Kubernetes' own). */
export const CONTINUE_TOKEN_VERSION = "meta.k8s.io/v1";

/** Longest continue token accepted, in characters. */
export const MAX_CONTINUE_TOKEN_LENGTH = 8192;

export interface ContinueToken {
  /** Revision the list is read at; -1 means "the latest". */
  rv: number;
  /** Last key returned, relative to the collection prefix. */
  start: string;
  /** The store's token for the next page, when it has one for this position. */
  store?: string;
}

/** The opaque token handed to clients. */
export function encodeContinueToken(t: ContinueToken): string {
  const body: Record<string, unknown> = { v: CONTINUE_TOKEN_VERSION, rv: t.rv, start: t.start };
  if (t.store !== undefined) body.st = t.store;
  return Buffer.from(JSON.stringify(body), "utf8").toString("base64url");
}

function invalid(why: string) {
  return errors.badRequest(`invalid continue token: ${why}`);
}

/** Decodes a client's token; 400 "invalid continue token" when it is not one of ours. */
export function decodeContinueToken(s: string): ContinueToken {
  if (s.length > MAX_CONTINUE_TOKEN_LENGTH || !/^[A-Za-z0-9_=-]+$/.test(s)) {
    throw invalid("continue key is not valid: illegal base64 data");
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(s, "base64url").toString("utf8"));
  } catch {
    throw invalid("continue key is not valid: malformed content");
  }
  if (typeof parsed !== "object" || parsed === null) {
    throw invalid("continue key is not valid: malformed content");
  }
  const p = parsed as Record<string, unknown>;
  if (p.v !== CONTINUE_TOKEN_VERSION) {
    throw invalid(`continue key is not valid: server does not recognize this encoded version`);
  }
  if (typeof p.rv !== "number" || !Number.isSafeInteger(p.rv) || (p.rv < 1 && p.rv !== -1)) {
    throw invalid("continue key is not valid: incorrect encoded start resourceVersion");
  }
  if (typeof p.start !== "string" || p.start === "" || p.start.includes("..")) {
    throw invalid("continue key is not valid: incorrect encoded start key");
  }
  const out: ContinueToken = { rv: p.rv, start: p.start };
  if (typeof p.st === "string") out.store = p.st;
  return out;
}
