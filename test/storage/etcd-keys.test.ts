/** The etcd backend's key layout and continue tokens (pure functions, no etcd needed). */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeContinue, encodeContinue } from "../../src/storage/etcd/continue-token.ts";
import { KeySpace, prefixEnd } from "../../src/storage/etcd/key-space.ts";
import { InvalidKeyError } from "../../src/storage/index.ts";

const inRange = (k: Buffer, r: { key: Buffer; rangeEnd: Buffer }) =>
  Buffer.compare(k, r.key) >= 0 && Buffer.compare(k, r.rangeEnd) < 0;

describe("etcd key layout", () => {
  it("computes etcd's prefix range end, carrying over 0xff bytes", () => {
    expect(prefixEnd(Buffer.from("/a/"))).toEqual(Buffer.from("/a0"));
    expect(prefixEnd(Buffer.from([0x61, 0xff, 0xff]))).toEqual(Buffer.from([0x62]));
    expect(prefixEnd(Buffer.from([0xff, 0xff]))).toEqual(Buffer.from([0]));
  });

  it("selects exactly the installation's keys that start with a prefix", () => {
    const ks = new KeySpace("/setpoint/");
    const neighbour = new KeySpace("/setpoint2");
    fc.assert(
      fc.property(fc.string(), fc.string(), (prefix, rest) => {
        const key = `/${prefix}${rest}`;
        const range = ks.range(`/${prefix}`);
        expect(inRange(ks.encode(key), range)).toBe(true);
        expect(inRange(neighbour.encode(key), range)).toBe(false);
        expect(ks.decode(ks.encode(key))).toBe(key);
      }),
    );
  });

  it("maps a prefix that no key can start with to a range holding no key", () => {
    const ks = new KeySpace("/setpoint");
    const range = ks.range("2/");
    expect(inRange(Buffer.from("/setpoint2/a"), range)).toBe(false);
    expect(inRange(ks.encode("/a"), range)).toBe(false);
    // The empty prefix selects every key of the installation, and only those.
    const all = ks.range("");
    expect(inRange(ks.encode("/a"), all)).toBe(true);
    expect(inRange(Buffer.from("/setpoint2/a"), all)).toBe(false);
  });
});

describe("etcd continue tokens", () => {
  it("round-trip and refuse tampering or another prefix", () => {
    const token = encodeContinue({ prefix: "/p/", revision: 42, after: "/p/k" });
    expect(decodeContinue(token, "/p/")).toEqual({ prefix: "/p/", revision: 42, after: "/p/k" });
    expect(() => decodeContinue(token, "/q/")).toThrow(InvalidKeyError);
    expect(() => decodeContinue("garbage", "/p/")).toThrow(InvalidKeyError);
    const forged = Buffer.from(JSON.stringify({ v: 1, p: "/p/", r: -1, a: "/p/k" })).toString(
      "base64url",
    );
    expect(() => decodeContinue(forged, "/p/")).toThrow(InvalidKeyError);
  });
});
