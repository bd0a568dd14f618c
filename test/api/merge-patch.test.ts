import { deepClone, deepFreeze } from "@setpoint/api";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { applyMergePatch, createMergePatch } from "../../packages/api/src/patch/merge.ts";

describe("applyMergePatch", () => {
  // RFC 7386, Appendix A.
  const cases: [unknown, unknown, unknown][] = [
    [{ a: "b" }, { a: "c" }, { a: "c" }],
    [{ a: "b" }, { b: "c" }, { a: "b", b: "c" }],
    [{ a: "b" }, { a: null }, {}],
    [{ a: "b", b: "c" }, { a: null }, { b: "c" }],
    [{ a: ["b"] }, { a: "c" }, { a: "c" }],
    [{ a: "c" }, { a: ["b"] }, { a: ["b"] }],
    [{ a: { b: "c" } }, { a: { b: "d", c: null } }, { a: { b: "d" } }],
    [{ a: [{ b: "c" }] }, { a: [1] }, { a: [1] }],
    [
      ["a", "b"],
      ["c", "d"],
      ["c", "d"],
    ],
    [{ a: "b" }, ["c"], ["c"]],
    [{ a: "foo" }, null, null],
    [{ a: "foo" }, "bar", "bar"],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: "b", c: null }, { a: "b" }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ];
  it.each(cases)("RFC 7386 example %#", (target, patch, result) => {
    expect(applyMergePatch(target, patch)).toEqual(result);
  });

  it("keeps the target's member order and appends new members", () => {
    const out = applyMergePatch({ b: 1, a: 2, c: 3 }, { z: 0, a: 9 }) as object;
    expect(Object.keys(out)).toEqual(["b", "a", "c", "z"]);
  });

  it("does not let a __proto__ member change the prototype", () => {
    const out = applyMergePatch({}, JSON.parse('{"__proto__": {"x": 1}}')) as object;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.hasOwn(out, "__proto__")).toBe(true);
  });
});

// JSON values whose objects hold no null members: the documents RFC 7386 can reach.
function withoutNullMembers(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutNullMembers);
  if (v && typeof v === "object") {
    return Object.fromEntries(
      Object.entries(v)
        .filter(([, x]) => x !== null)
        .map(([k, x]) => [k, withoutNullMembers(x)]),
    );
  }
  return v;
}

const value = fc.jsonValue({ maxDepth: 3 });
const object = fc.dictionary(fc.string({ maxLength: 4 }), value, { maxKeys: 6 });
// Documents with shared keys so diffs recurse.
const keyed = fc.dictionary(
  fc.constantFrom("a", "b", "c", "d"),
  fc.oneof(value, fc.dictionary(fc.constantFrom("a", "b", "c"), value, { maxKeys: 3 })),
  { maxKeys: 4 },
);

describe("merge patch properties", () => {
  it("applying the diff of a→b to a yields b", () => {
    fc.assert(
      fc.property(fc.oneof(object, keyed), fc.oneof(object, keyed), (a, b0) => {
        const b = withoutNullMembers(b0);
        const patch = createMergePatch(a, b);
        expect(applyMergePatch(a, patch)).toEqual(b);
      }),
      { numRuns: 1000 },
    );
  });

  it("is idempotent", () => {
    fc.assert(
      fc.property(fc.oneof(value, keyed), fc.oneof(value, keyed), (a, p) => {
        const once = applyMergePatch(a, p);
        expect(applyMergePatch(once, p)).toEqual(once);
      }),
      { numRuns: 1000 },
    );
  });

  it("never changes its inputs", () => {
    fc.assert(
      fc.property(keyed, keyed, (a, p) => {
        const a0 = deepClone(a);
        const p0 = deepClone(p);
        const out = applyMergePatch(deepFreeze(a), deepFreeze(p));
        expect(a).toEqual(a0);
        expect(p).toEqual(p0);
        // The result is free to change.
        if (out && typeof out === "object") (out as Record<string, unknown>).fresh = 1;
      }),
    );
  });

  it("an empty diff for equal documents", () => {
    fc.assert(
      fc.property(object, (a) => {
        expect(createMergePatch(a, deepClone(a))).toEqual({});
      }),
    );
  });
});
