/**
 * The opaque `continue` token of a paged etcd list: the prefix being listed, the
 * revision the first page was read at (every later page is read at the same
 * revision, so the pages form one snapshot), and the last key returned.
 */
import { InvalidKeyError } from "../errors.ts";

export interface ContinueState {
  /** The list prefix the token belongs to. */
  prefix: string;
  /** The revision of the first page. */
  revision: number;
  /** The last key already returned; the next page starts after it. */
  after: string;
}

/** Token format version, so a change of layout is detected instead of misread. */
const VERSION = 1;

export function encodeContinue(state: ContinueState): string {
  const json = JSON.stringify({ v: VERSION, p: state.prefix, r: state.revision, a: state.after });
  return Buffer.from(json, "utf8").toString("base64url");
}

/** Decodes a token for a list of `prefix`; InvalidKeyError if it is malformed or foreign. */
export function decodeContinue(token: string, prefix: string): ContinueState {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
  } catch {
    throw new InvalidKeyError(prefix, "malformed continue token");
  }
  const t = parsed as { v?: unknown; p?: unknown; r?: unknown; a?: unknown } | null;
  if (
    !t ||
    t.v !== VERSION ||
    typeof t.p !== "string" ||
    typeof t.a !== "string" ||
    typeof t.r !== "number" ||
    !Number.isSafeInteger(t.r) ||
    t.r <= 0
  ) {
    throw new InvalidKeyError(prefix, "malformed continue token");
  }
  if (t.p !== prefix) {
    throw new InvalidKeyError(prefix, `continue token belongs to a list of ${JSON.stringify(t.p)}`);
  }
  if (!t.a.startsWith(prefix === "" ? "/" : prefix)) {
    throw new InvalidKeyError(prefix, "malformed continue token");
  }
  return { prefix: t.p, revision: t.r, after: t.a };
}
