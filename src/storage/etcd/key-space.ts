/**
 * How the etcd store lays out one installation's keys: every key the caller sees is
 * stored as `base + key`, where `base` is the installation prefix without its trailing
 * slashes (prefix "/setpoint/" stores "/registry/pods/a" as "/setpoint/registry/pods/a").
 * Caller keys always start with "/", so one installation's keys all lie in the range
 * of `base + "/"` and never overlap another installation's ("/setpoint2/...").
 */
import { InvalidKeyError } from "../errors.ts";
import type { KeyValue } from "../store.ts";
import type { EtcdKeyValue } from "./messages.ts";

/**
 * Checks a list or watch prefix is a string. Any string is accepted: "" selects every
 * key, and a prefix no valid key can start with simply selects none.
 */
export function validatePrefix(prefix: string): void {
  if (typeof prefix !== "string") {
    throw new InvalidKeyError(String(prefix), "prefix must be a string");
  }
}

/**
 * The smallest byte string greater than every string starting with `prefix`: etcd's
 * range end for a prefix. An all-0xff prefix has none; "\0" then means "to the end".
 */
export function prefixEnd(prefix: Uint8Array): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i] < 0xff) {
      end[i]++;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]);
}

/** Maps caller keys to etcd keys under one installation prefix, and back. */
export class KeySpace {
  /** The installation prefix without trailing slashes. */
  readonly base: string;
  private readonly baseBytes: number;

  constructor(prefix: string) {
    if (typeof prefix !== "string" || prefix.includes("\0")) {
      throw new TypeError(`invalid etcd key prefix ${JSON.stringify(prefix)}`);
    }
    this.base = prefix.replace(/\/+$/, "");
    this.baseBytes = Buffer.byteLength(this.base, "utf8");
  }

  /** The etcd key of a caller key. */
  encode(key: string): Buffer {
    return Buffer.from(this.base + key, "utf8");
  }

  /** The caller key of an etcd key under this prefix. */
  decode(raw: Buffer): string {
    return raw.toString("utf8", this.baseBytes);
  }

  /** The Store item of an etcd key-value under this prefix. */
  item(kv: EtcdKeyValue): KeyValue {
    return {
      key: this.decode(kv.key),
      value: kv.value.toString("utf8"),
      createRevision: kv.create_revision,
      modRevision: kv.mod_revision,
    };
  }

  /**
   * The etcd range [key, rangeEnd) holding every caller key that starts with `prefix`.
   * A prefix without the leading "/" selects no key; it maps to a range under the
   * installation that no key can be in (keys never contain NUL), never to a range
   * reaching out of the installation ("2/" must not select "/setpoint2/...").
   */
  range(prefix: string): { key: Buffer; rangeEnd: Buffer } {
    if (prefix === "") prefix = "/";
    const key = prefix.startsWith("/") ? this.encode(prefix) : this.encode("\0");
    return { key, rangeEnd: prefixEnd(key) };
  }
}
