import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compareStrings, sortInPlace } from "../../packages/api/src/managedfields/value.ts";

describe("sortInPlace", () => {
  it("orders as Array.prototype.sort does, ties kept in their order, short and long arrays", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 5 }), fc.nat()), { maxLength: 40 }),
        (items) => {
          const byFirst = (a: [number, number], b: [number, number]) => a[0] - b[0];
          const want = [...items].sort(byFirst);
          const got = [...items];
          expect(sortInPlace(got, byFirst)).toBe(got);
          expect(got).toEqual(want);
        },
      ),
    );
    fc.assert(
      fc.property(fc.array(fc.string({ unit: "binary" }), { maxLength: 20 }), (names) => {
        expect(sortInPlace([...names], compareStrings)).toEqual([...names].sort(compareStrings));
      }),
    );
  });
});
