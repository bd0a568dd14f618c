import { deepClone, deepFreeze, type Schema, StatusError } from "@setpoint/api";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { applyPatch, patchTypeOf } from "../../packages/api/src/patch/index.ts";
import { applyStrategicMergePatch } from "../../packages/api/src/patch/strategic.ts";

const mergeByName = (items: Schema): Schema => ({
  type: "array",
  items,
  "x-kubernetes-patch-strategy": "merge",
  "x-kubernetes-patch-merge-key": "name",
});

const itemSchema: Schema = {
  type: "object",
  properties: {
    name: { type: "string" },
    nonMergingList: { type: "array", items: { type: "object" } },
    mergingIntList: {
      type: "array",
      items: { type: "integer" },
      "x-kubernetes-patch-strategy": "merge",
    },
  },
};

const schema: Schema = {
  type: "object",
  properties: {
    metadata: {
      type: "object",
      properties: {
        labels: { type: "object", additionalProperties: { type: "string" } },
        finalizers: {
          type: "array",
          items: { type: "string" },
          "x-kubernetes-patch-strategy": "merge",
        },
      },
    },
    spec: {
      type: "object",
      properties: {
        mergingList: mergeByName(itemSchema),
        mergingIntList: {
          type: "array",
          items: { type: "integer" },
          "x-kubernetes-patch-strategy": "merge",
        },
        nonMergingList: { type: "array", items: { type: "object" } },
        replacedMap: { type: "object", "x-kubernetes-patch-strategy": "replace" },
        strategy: {
          type: "object",
          "x-kubernetes-patch-strategy": "retainKeys",
          properties: { type: { type: "string" }, rollingUpdate: { type: "object" } },
        },
        listOfLists: {
          type: "array",
          items: { type: "array", items: { type: "string" } },
          "x-kubernetes-patch-strategy": "merge",
        },
        unkeyedMerge: {
          type: "array",
          items: { type: "object" },
          "x-kubernetes-patch-strategy": "merge",
        },
      },
    },
  },
};

const smp = (target: unknown, patch: unknown) => applyStrategicMergePatch(target, patch, schema);
const spec = (s: Record<string, unknown>) => ({ spec: s });

function failure(fn: () => unknown): StatusError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(StatusError);
    return e as StatusError;
  }
  throw new Error("expected a StatusError");
}

describe("maps", () => {
  it("merge member by member; null deletes; unmatched nulls vanish", () => {
    expect(
      smp(spec({ a: 1, b: 2, c: { d: 1, e: 2 } }), spec({ b: null, c: { e: 3 }, z: null })),
    ).toEqual(spec({ a: 1, c: { d: 1, e: 3 } }));
  });

  it("$patch: replace replaces the map, $patch: delete empties it, merge is the default", () => {
    expect(smp(spec({ a: 1, b: { c: 1 } }), { spec: { $patch: "replace", x: 1 } })).toEqual(
      spec({ x: 1 }),
    );
    expect(smp(spec({ a: 1 }), { spec: { $patch: "delete" } })).toEqual({ spec: {} });
    expect(smp(spec({ a: 1 }), { spec: { $patch: "merge", b: 2 } })).toEqual(spec({ a: 1, b: 2 }));
    expect(smp({ metadata: {} }, { spec: { $patch: "delete" } })).toEqual({ metadata: {} });
  });

  it("maps with the replace strategy are replaced", () => {
    expect(smp(spec({ replacedMap: { a: 1, b: 2 } }), spec({ replacedMap: { b: 3 } }))).toEqual(
      spec({ replacedMap: { b: 3 } }),
    );
  });

  it("$retainKeys clears unlisted members", () => {
    const before = spec({ strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1 } } });
    expect(
      smp(
        before,
        spec({ strategy: { $retainKeys: ["type"], type: "Recreate", rollingUpdate: null } }),
      ),
    ).toEqual(spec({ strategy: { type: "Recreate" } }));
    const e = failure(() =>
      smp(before, spec({ strategy: { $retainKeys: ["type"], rollingUpdate: { maxSurge: 2 } } })),
    );
    expect(e.code).toBe(400);
    expect(e.message).toBe("invalid patch format of retainKeys");
  });

  it("a value of another type replaces the old one", () => {
    expect(smp(spec({ mergingList: [{ name: "a" }] }), spec({ mergingList: "x" }))).toEqual(
      spec({ mergingList: "x" }),
    );
    expect(smp(spec({ a: "x" }), spec({ a: { b: null, c: 1 } }))).toEqual(spec({ a: { c: 1 } }));
  });
});

describe("lists with the merge strategy", () => {
  it("merge items by key, leaving the others alone", () => {
    expect(
      smp(
        spec({
          mergingList: [
            { name: "1", other: "a" },
            { name: "2", value: 2 },
          ],
        }),
        spec({ mergingList: [{ name: "2", value: 5, extra: true }] }),
      ),
    ).toEqual(
      spec({
        mergingList: [
          { name: "1", other: "a" },
          { name: "2", value: 5, extra: true },
        ],
      }),
    );
  });

  it("put new items first when no order is given", () => {
    expect(
      smp(
        spec({ mergingList: [{ name: "1" }, { name: "2", value: 2 }] }),
        spec({ mergingList: [{ name: "3", value: 3 }] }),
      ),
    ).toEqual(
      spec({ mergingList: [{ name: "3", value: 3 }, { name: "1" }, { name: "2", value: 2 }] }),
    );
  });

  it("drop nulls and resolve directives inside new items", () => {
    expect(
      smp(
        spec({ mergingList: [] }),
        spec({ mergingList: [{ name: "7", value: null, other: { x: null, y: 1 } }] }),
      ),
    ).toEqual(spec({ mergingList: [{ name: "7", other: { y: 1 } }] }));
  });

  it("merge nested lists inside items", () => {
    expect(
      smp(
        spec({ mergingList: [{ name: "a", mergingIntList: [1], nonMergingList: [{ x: 1 }] }] }),
        spec({ mergingList: [{ name: "a", mergingIntList: [2], nonMergingList: [{ y: 2 }] }] }),
      ),
    ).toEqual(
      spec({ mergingList: [{ name: "a", mergingIntList: [2, 1], nonMergingList: [{ y: 2 }] }] }),
    );
  });

  it("delete items with $patch: delete and replace the list with $patch: replace", () => {
    const before = spec({ mergingList: [{ name: "1" }, { name: "2" }, { name: "3" }] });
    expect(smp(before, spec({ mergingList: [{ name: "2", $patch: "delete" }] }))).toEqual(
      spec({ mergingList: [{ name: "1" }, { name: "3" }] }),
    );
    expect(smp(before, spec({ mergingList: [{ name: "5" }, { $patch: "replace" }] }))).toEqual(
      spec({ mergingList: [{ name: "5" }] }),
    );
  });

  it("merge scalars as a set", () => {
    expect(smp(spec({ mergingIntList: [1, 2] }), spec({ mergingIntList: [3] }))).toEqual(
      spec({ mergingIntList: [3, 1, 2] }),
    );
    expect(smp(spec({ mergingIntList: [1, 2] }), spec({ mergingIntList: [2, 3] }))).toEqual(
      spec({ mergingIntList: [1, 2, 3] }),
    );
    expect(
      smp({ metadata: { finalizers: ["a"] } }, { metadata: { finalizers: ["a", "b"] } }),
    ).toEqual({
      metadata: { finalizers: ["a", "b"] },
    });
  });

  it("remove scalars with $deleteFromPrimitiveList", () => {
    const before = { metadata: { finalizers: ["a", "b", "c"] } };
    expect(
      smp(before, { metadata: { "$deleteFromPrimitiveList/finalizers": ["b", "x"] } }),
    ).toEqual({
      metadata: { finalizers: ["a", "c"] },
    });
    expect(
      smp(before, {
        metadata: { finalizers: ["d"], "$deleteFromPrimitiveList/finalizers": ["a"] },
      }),
    ).toEqual({ metadata: { finalizers: ["d", "b", "c"] } });
    // Nothing to delete from: no list appears.
    expect(
      smp({ metadata: {} }, { metadata: { "$deleteFromPrimitiveList/finalizers": ["a"] } }),
    ).toEqual({
      metadata: {},
    });
  });
});

describe("$setElementOrder", () => {
  it("orders patched and added items, keeping server-only ones among their neighbours", () => {
    expect(
      smp(
        spec({
          mergingList: [
            { name: "1", other: "a" },
            { name: "2", value: 2, other: "b" },
          ],
        }),
        spec({
          "$setElementOrder/mergingList": [
            { name: "4" },
            { name: "1" },
            { name: "2" },
            { name: "3" },
          ],
          mergingList: [
            { name: "4", value: 4 },
            { name: "3", value: 3 },
          ],
        }),
      ),
    ).toEqual(
      spec({
        mergingList: [
          { name: "4", value: 4 },
          { name: "1", other: "a" },
          { name: "2", value: 2, other: "b" },
          { name: "3", value: 3 },
        ],
      }),
    );
  });

  it("reorders without changes, server-only items following the items before them", () => {
    const order = (names: string[]) => names.map((name) => ({ name }));
    expect(
      smp(
        spec({ mergingList: order(["1", "3", "4", "2", "9"]) }),
        spec({ "$setElementOrder/mergingList": order(["4", "2", "3", "1"]) }),
      ),
    ).toEqual(spec({ mergingList: order(["4", "2", "3", "1", "9"]) }));
    expect(
      smp(
        spec({ mergingList: order(["1", "2", "9", "3", "4"]) }),
        spec({ "$setElementOrder/mergingList": order(["2", "1", "4", "3"]) }),
      ),
    ).toEqual(spec({ mergingList: order(["2", "1", "9", "4", "3"]) }));
  });

  it("orders scalar lists", () => {
    expect(
      smp(
        spec({ mergingIntList: [1, 2, 4] }),
        spec({ "$setElementOrder/mergingIntList": [1, 2, 3], mergingIntList: [3] }),
      ),
    ).toEqual(spec({ mergingIntList: [1, 2, 3, 4] }));
  });

  it("rejects an order that contradicts the patch list", () => {
    const e = failure(() =>
      smp(
        spec({ mergingList: [] }),
        spec({
          "$setElementOrder/mergingList": [{ name: "2" }, { name: "1" }],
          mergingList: [{ name: "1" }, { name: "2" }],
        }),
      ),
    );
    expect(e.code).toBe(400);
    expect(e.message).toMatch(/^The order in patch list:/);
  });
});

describe("other lists", () => {
  it("are replaced whole", () => {
    expect(
      smp(spec({ nonMergingList: [{ a: 1 }, { b: 2 }] }), spec({ nonMergingList: [{ c: 3 }] })),
    ).toEqual(spec({ nonMergingList: [{ c: 3 }] }));
    // No schema for the field: replaced too (as for unknown fields).
    expect(smp(spec({ other: [1, 2] }), spec({ other: [3] }))).toEqual(spec({ other: [3] }));
  });
});

describe("errors as Kubernetes answers them", () => {
  it("400 for a missing merge key, with Kubernetes' wording", () => {
    const e = failure(() =>
      smp(spec({ mergingList: [{ name: "a" }] }), spec({ mergingList: [{ value: 1 }] })),
    );
    expect(e.code).toBe(400);
    expect(e.message).toBe("map: map[value:1] does not contain declared merge key: name");
  });

  it("422 for lists of lists", () => {
    const e = failure(() => smp(spec({ listOfLists: [["a"]] }), spec({ listOfLists: [["b"]] })));
    expect(e.code).toBe(422);
    expect(e.message).toContain("lists of lists are not supported");
  });

  it("400 for documents that are not objects and bad directives", () => {
    expect(failure(() => smp({}, [1])).message).toBe("invalid JSON document");
    expect(failure(() => smp([], {})).code).toBe(400);
    expect(failure(() => smp(spec({}), spec({ a: { $patch: "frob" } }))).message).toBe(
      "unknown patch type: frob in map: map[]",
    );
    expect(
      failure(() =>
        smp(spec({ mergingList: [{ name: "a" }] }), spec({ mergingList: [{ $patch: "merge" }] })),
      ).message,
    ).toBe("merging lists cannot yet be specified in the patch");
    expect(
      failure(() => smp(spec({ unkeyedMerge: [{ a: 1 }] }), spec({ unkeyedMerge: [{ a: 2 }] })))
        .message,
    ).toBe("cannot merge lists without merge key for unkeyedMerge");
    expect(
      failure(() => smp({ metadata: {} }, { metadata: { $deleteFromPrimitiveList: [1] } })).message,
    ).toBe("invalid patch format of primitive list");
  });
});

describe("applyPatch", () => {
  it("dispatches on the patch type and refuses strategic patches without a schema", () => {
    expect(patchTypeOf("application/strategic-merge-patch+json; charset=utf-8")).toBe("strategic");
    expect(patchTypeOf("application/json")).toBeUndefined();
    expect(applyPatch("merge", { a: 1 }, { b: 2 })).toEqual({ a: 1, b: 2 });
    expect(applyPatch("json", { a: 1 }, [{ op: "remove", path: "/a" }])).toEqual({});
    expect(
      applyPatch("strategic", spec({ mergingIntList: [1] }), spec({ mergingIntList: [2] }), schema),
    ).toEqual(spec({ mergingIntList: [2, 1] }));
    expect(failure(() => applyPatch("strategic", {}, {})).code).toBe(415);
  });
});

// --- properties on random keyed lists ----------------------------------------

interface Item {
  name: string;
  [k: string]: unknown;
}

const NAMES = ["a", "b", "c", "d", "e", "f", "g", "h"];

const scenario = fc
  .record({
    orig: fc.uniqueArray(fc.constantFrom(...NAMES), { maxLength: 6 }),
    patched: fc.uniqueArray(fc.constantFrom(...NAMES), { maxLength: 5 }),
    values: fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 8, maxLength: 8 }),
  })
  .map(({ orig, patched, values }) => ({
    original: orig.map((name, i): Item => ({ name, v: values[i], keep: `k-${name}` })),
    patch: patched.map((name, i): Item => ({ name, w: values[7 - i] })),
  }));

const namesOf = (items: unknown) => (items as Item[]).map((i) => i.name);

function subsequence<T>(list: T[], keep: (t: T) => boolean): T[] {
  return list.filter(keep);
}

describe("strategic merge patch properties", () => {
  it("merging by key keeps unpatched items, merges patched ones, and keeps relative orders", () => {
    fc.assert(
      fc.property(scenario, ({ original, patch }) => {
        const target = deepFreeze(spec({ mergingList: original }));
        const out = smp(target, spec({ mergingList: patch })) as { spec: { mergingList: Item[] } };
        const list = out.spec.mergingList;
        const patchedNames = new Set(patch.map((p) => p.name));
        const expectedNames = new Set([...namesOf(original), ...patchedNames]);
        expect(new Set(namesOf(list))).toEqual(expectedNames);
        expect(list).toHaveLength(expectedNames.size);
        for (const o of original) {
          const got = list.find((i) => i.name === o.name);
          if (patchedNames.has(o.name)) {
            const p = patch.find((x) => x.name === o.name)!;
            expect(got).toEqual({ ...o, ...p });
          } else {
            expect(got).toEqual(o);
          }
        }
        for (const p of patch) {
          if (!original.some((o) => o.name === p.name)) {
            expect(list.find((i) => i.name === p.name)).toEqual(p);
          }
        }
        // Server-only items keep their order; patch items follow the patch's order.
        expect(subsequence(namesOf(list), (n) => !patchedNames.has(n))).toEqual(
          subsequence(namesOf(original), (n) => !patchedNames.has(n)),
        );
        expect(subsequence(namesOf(list), (n) => patchedNames.has(n))).toEqual(namesOf(patch));
      }),
      { numRuns: 1000 },
    );
  });

  it("$setElementOrder covering the whole list decides the order exactly", () => {
    const withOrder = scenario.chain(({ original, patch }) => {
      const all = [...new Set([...namesOf(original), ...namesOf(patch)])];
      return fc
        .shuffledSubarray(all, { minLength: all.length, maxLength: all.length })
        .map((order) => ({
          original,
          // The patch list must follow the order list.
          patch: order
            .filter((n) => patch.some((p) => p.name === n))
            .map((n) => patch.find((p) => p.name === n)!),
          order,
        }));
    });
    fc.assert(
      fc.property(withOrder, ({ original, patch, order }) => {
        const out = smp(
          spec({ mergingList: original }),
          spec({
            "$setElementOrder/mergingList": order.map((name) => ({ name })),
            mergingList: patch,
          }),
        ) as { spec: { mergingList: Item[] } };
        expect(namesOf(out.spec.mergingList)).toEqual(order);
      }),
      { numRuns: 1000 },
    );
  });

  it("deletion directives remove exactly the named items", () => {
    fc.assert(
      fc.property(scenario, ({ original, patch }) => {
        const gone = new Set(patch.map((p) => p.name));
        const out = smp(
          spec({ mergingList: original }),
          spec({ mergingList: patch.map((p) => ({ name: p.name, $patch: "delete" })) }),
        ) as { spec: { mergingList: Item[] } };
        expect(out.spec.mergingList).toEqual(original.filter((o) => !gone.has(o.name)));
      }),
      { numRuns: 500 },
    );
  });

  it("applying the same patch twice changes nothing more", () => {
    fc.assert(
      fc.property(scenario, ({ original, patch }) => {
        const p = spec({ mergingList: patch });
        const once = smp(spec({ mergingList: original }), deepClone(p));
        expect(smp(once, p)).toEqual(once);
      }),
      { numRuns: 500 },
    );
  });

  it("scalar merge lists behave as sets", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 6 }), { maxLength: 6 }),
        fc.array(fc.integer({ min: 0, max: 6 }), { maxLength: 6 }),
        (o, p) => {
          const out = smp(spec({ mergingIntList: o }), spec({ mergingIntList: p })) as {
            spec: { mergingIntList: number[] };
          };
          const list = out.spec.mergingIntList;
          expect(new Set(list)).toEqual(new Set([...o, ...p]));
          expect(list).toHaveLength(new Set(list).size);
        },
      ),
      { numRuns: 500 },
    );
  });
});
