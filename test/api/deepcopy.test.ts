import { deepClone, deepEqual, deepFreeze, setMember } from "@setpoint/api";
import fc from "fast-check";
import { describe, expect, it } from "vitest";

const json = fc.jsonValue({ maxDepth: 4 });

describe("deepClone", () => {
  it("copies without sharing", () => {
    const v = { a: [1, { b: "x" }], c: { d: null, e: true } };
    const c = deepClone(v);
    expect(c).toEqual(v);
    expect(c).not.toBe(v);
    expect(c.a).not.toBe(v.a);
    expect(c.a[1]).not.toBe(v.a[1]);
    (c.a[1] as { b: string }).b = "changed";
    expect((v.a[1] as { b: string }).b).toBe("x");
  });

  it("keeps a __proto__ member as data, never as a prototype", () => {
    const v = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}');
    const c = deepClone(v) as Record<string, unknown>;
    expect(Object.getPrototypeOf(c)).toBe(Object.prototype);
    expect((c as { polluted?: boolean }).polluted).toBeUndefined();
    expect(Object.keys(c)).toEqual(["__proto__", "a"]);
    expect(JSON.stringify(c)).toBe(JSON.stringify(v));
  });

  it("round-trips any JSON value", () => {
    fc.assert(
      fc.property(json, (v) => {
        const c = deepClone(v);
        expect(JSON.stringify(c)).toBe(JSON.stringify(v));
        expect(deepEqual(c, v)).toBe(true);
      }),
    );
  });
});

describe("deepEqual", () => {
  it("ignores key order but not array order", () => {
    expect(deepEqual({ a: 1, b: [1, 2] }, { b: [1, 2], a: 1 })).toBe(true);
    expect(deepEqual([1, 2], [2, 1])).toBe(false);
    expect(deepEqual({ a: 1 }, { a: 1, b: 2 })).toBe(false);
    expect(deepEqual({ a: undefined }, {})).toBe(true);
    expect(deepEqual(null, {})).toBe(false);
    expect(deepEqual([], {})).toBe(false);
    expect(deepEqual(1, "1")).toBe(false);
    expect(deepEqual({ a: { b: null } }, { a: { b: null } })).toBe(true);
  });

  it("agrees with comparing canonical JSON", () => {
    const canonical = (v: unknown): string =>
      JSON.stringify(v, (_k, x) =>
        x && typeof x === "object" && !Array.isArray(x)
          ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : 1)))
          : x,
      );
    fc.assert(
      fc.property(json, json, (a, b) => {
        expect(deepEqual(a, b)).toBe(canonical(a) === canonical(b));
        expect(deepEqual(a, a)).toBe(true);
      }),
    );
  });
});

describe("deepFreeze", () => {
  it("freezes everything inside", () => {
    const v = deepFreeze({ a: [{ b: 1 }], c: { d: "x" } });
    expect(Object.isFrozen(v)).toBe(true);
    expect(Object.isFrozen(v.a)).toBe(true);
    expect(Object.isFrozen(v.a[0])).toBe(true);
    expect(Object.isFrozen(v.c)).toBe(true);
    expect(() => {
      (v.c as { d: string }).d = "y";
    }).toThrow(TypeError);
  });
});

describe("setMember", () => {
  it("sets __proto__ as an own member", () => {
    const o: Record<string, unknown> = {};
    setMember(o, "__proto__", { x: 1 });
    expect(Object.getPrototypeOf(o)).toBe(Object.prototype);
    expect(Object.hasOwn(o, "__proto__")).toBe(true);
  });
});
