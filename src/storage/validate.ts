/** Input checks of the Store contract, shared by every backend. */
import { InvalidKeyError, TooLargeError } from "./errors.ts";
import { MAX_KEY_BYTES, MAX_VALUE_BYTES } from "./store.ts";

/** A UTF-16 surrogate that is not part of a pair (cannot be stored as UTF-8). */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Checks a key against the contract: non-empty, starts with "/", no NUL, well-formed
 * Unicode, at most MAX_KEY_BYTES of UTF-8. Throws InvalidKeyError or TooLargeError.
 */
export function checkKey(key: string): void {
  if (typeof key !== "string" || key.length === 0) {
    throw new InvalidKeyError(String(key ?? ""), "key is empty");
  }
  const bytes = Buffer.byteLength(key, "utf8");
  if (bytes > MAX_KEY_BYTES) throw new TooLargeError("key", bytes, MAX_KEY_BYTES);
  if (key[0] !== "/") throw new InvalidKeyError(key, 'key must start with "/"');
  if (key.includes("\0")) throw new InvalidKeyError(key, "key contains a NUL character");
  if (LONE_SURROGATE.test(key)) throw new InvalidKeyError(key, "key is not well-formed Unicode");
}

/**
 * Checks a value: a string of at most MAX_VALUE_BYTES of UTF-8, well-formed Unicode
 * (a lone surrogate could not be stored without changing it).
 */
export function checkValue(key: string, value: string): void {
  if (typeof value !== "string") throw new InvalidKeyError(key, "value must be a string");
  // UTF-8 needs at least one byte per UTF-16 unit, so a long string is over without counting.
  const bytes = value.length > MAX_VALUE_BYTES ? value.length : Buffer.byteLength(value, "utf8");
  if (bytes > MAX_VALUE_BYTES) throw new TooLargeError("value", bytes, MAX_VALUE_BYTES);
  if (LONE_SURROGATE.test(value)) {
    throw new InvalidKeyError(key, "value is not well-formed Unicode (lone surrogate)");
  }
}

/** Checks a revision argument: a non-negative safe integer. */
export function checkRevision(what: string, revision: number): void {
  if (!Number.isSafeInteger(revision) || revision < 0) {
    throw new InvalidKeyError(String(revision), `${what} must be a non-negative integer`);
  }
}
