import { InvalidKeyError } from "../errors.ts";

/** The keys a prefix selects, as a half-open range [lower, upper) in UTF-8 byte order. */
export interface KeyRange {
  lower: string;
  upper: string;
}

const MAX_CODE_POINT = 0x10ffff;
const SURROGATE_START = 0xd800;
const SURROGATE_END = 0xdfff;

/**
 * The key range selected by `prefix`, or null when no valid key can start with it.
 * Keys always start with "/", so the empty prefix selects every key. UTF-8 keeps code
 * point order, so bumping the last code point of the prefix gives the exclusive upper
 * bound SQLite's byte-wise (BINARY) comparison needs.
 */
export function prefixRange(prefix: string): KeyRange | null {
  if (prefix === "") prefix = "/";
  if (!prefix.startsWith("/")) return null;
  const points = Array.from(prefix, (c) => c.codePointAt(0)!);
  while (points.at(-1) === MAX_CODE_POINT) points.pop();
  let last = points.pop()! + 1;
  if (last === SURROGATE_START) last = SURROGATE_END + 1;
  points.push(last);
  return { lower: prefix, upper: String.fromCodePoint(...points) };
}

/**
 * The smallest key after `key`: keys never contain NUL, so `key + "\0"` is an inclusive
 * lower bound equivalent to the exclusive bound `key`.
 */
export function keyAfter(key: string): string {
  return `${key}\0`;
}

/** What a continue token carries: the page's revision and the last key returned. */
export interface ContinuePosition {
  revision: number;
  lastKey: string;
}

/** Encodes a continue token (opaque to callers). */
export function encodeContinue(pos: ContinuePosition): string {
  return Buffer.from(JSON.stringify({ r: pos.revision, k: pos.lastKey })).toString("base64url");
}

/** Decodes a continue token given with a list of `prefix`; InvalidKeyError if malformed. */
export function decodeContinue(token: string, prefix: string): ContinuePosition {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
  } catch {
    throw new InvalidKeyError(token, "malformed continue token");
  }
  const { r, k } = (parsed ?? {}) as { r?: unknown; k?: unknown };
  if (typeof r !== "number" || !Number.isSafeInteger(r) || r <= 0 || typeof k !== "string") {
    throw new InvalidKeyError(token, "malformed continue token");
  }
  if (!k.startsWith(prefix)) {
    throw new InvalidKeyError(token, "continue token was issued for another prefix");
  }
  return { revision: r, lastKey: k };
}
