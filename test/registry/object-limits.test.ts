import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  checkObjectLimits,
  MAX_OBJECT_DEPTH,
  MAX_OBJECT_NODES,
  objectLimitsCause,
  withinObjectLimits,
} from "../../src/registry/index.ts";

/** `leaf` nested `depth` levels down, alternating maps and lists. */
function nested(depth: number, leaf: unknown): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = i % 2 === 0 ? { a: v } : [v];
  return v;
}

/** An object holding `n` values in all (itself included). */
function withValues(n: number): Record<string, unknown> {
  const items: number[] = new Array(n - 2).fill(1);
  return { items };
}

/** `v` with everything in it frozen. */
function deepFreeze<T>(v: T): T {
  if (typeof v === "object" && v !== null) {
    for (const c of Object.values(v)) deepFreeze(c);
    Object.freeze(v);
  }
  return v;
}

describe("withinObjectLimits", () => {
  it("agrees with checkObjectLimits on any JSON value (property)", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), (v) => {
        expect(withinObjectLimits(v)).toBe(checkObjectLimits(v) === undefined);
        expect(objectLimitsCause(v)).toEqual(checkObjectLimits(v));
      }),
      { numRuns: 300 },
    );
  });

  it("agrees at the depth limit, with empty and non-empty containers there", () => {
    for (const depth of [MAX_OBJECT_DEPTH - 1, MAX_OBJECT_DEPTH, MAX_OBJECT_DEPTH + 1]) {
      for (const leaf of [1, null, {}, [], { x: 1 }, [1], { x: undefined }]) {
        const v = nested(depth, leaf);
        expect(withinObjectLimits(v)).toBe(checkObjectLimits(v) === undefined);
        expect(objectLimitsCause(v)).toEqual(checkObjectLimits(v));
      }
    }
    expect(withinObjectLimits(nested(MAX_OBJECT_DEPTH, 1))).toBe(true);
    expect(withinObjectLimits(nested(MAX_OBJECT_DEPTH, [1]))).toBe(false);
  });

  it("agrees at the value count limit", () => {
    for (const n of [MAX_OBJECT_NODES, MAX_OBJECT_NODES + 1]) {
      const v = withValues(n);
      expect(withinObjectLimits(v)).toBe(n <= MAX_OBJECT_NODES);
      expect(objectLimitsCause(v)).toEqual(checkObjectLimits(v));
    }
  });

  it("counts deeply frozen values (measured once) as checkObjectLimits does (property)", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), fc.jsonValue({ maxDepth: 4 }), (a, b) => {
        const shared = deepFreeze(structuredClone(a));
        // The same frozen value twice, beside values that are not frozen, and partly frozen.
        const partly = Object.freeze({ frozen: shared, open: structuredClone(b) });
        const v = { x: shared, y: [shared, b], z: partly };
        for (const w of [v, v, shared, partly]) {
          expect(withinObjectLimits(w)).toBe(checkObjectLimits(w) === undefined);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("counts deeply frozen values at both limits", () => {
    for (const depth of [MAX_OBJECT_DEPTH - 2, MAX_OBJECT_DEPTH - 1, MAX_OBJECT_DEPTH]) {
      for (const leaf of [1, {}, [], { x: 1 }, [1], [[]], { x: {} }]) {
        const frozen = deepFreeze(nested(2, structuredClone(leaf)));
        const v = nested(depth, frozen);
        expect(withinObjectLimits(v)).toBe(checkObjectLimits(v) === undefined);
      }
    }
    // The same frozen value twice: 1 + 2 × (MAX / 2 - 2) + 1 + extra values in all.
    const many = deepFreeze(withValues(MAX_OBJECT_NODES / 2 - 2));
    for (const extra of [1, 2, 3]) {
      const v = { a: many, b: many, c: new Array(extra).fill(0) };
      expect(withinObjectLimits(v)).toBe(extra <= 2);
      expect(withinObjectLimits(v)).toBe(checkObjectLimits(v) === undefined);
    }
  });

  it("counts only own members, as checkObjectLimits does", () => {
    const proto = { inherited: { deep: nested(MAX_OBJECT_DEPTH + 2, [1]) } };
    const v = Object.create(proto) as Record<string, unknown>;
    v.own = 1;
    expect(withinObjectLimits(v)).toBe(true);
    expect(checkObjectLimits(v)).toBeUndefined();
  });
});
