import type { Schema } from "@setpoint/api";
import { keyKey } from "@setpoint/api/managedfields";
import { describe, expect, it } from "vitest";
import { ITEM_KEY_CACHE_SIZE, indexList } from "../../packages/api/src/managedfields/type-info.ts";

const env: Schema = {
  type: "array",
  "x-kubernetes-list-type": "map",
  "x-kubernetes-list-map-keys": ["name"],
  items: { type: "object", properties: { name: { type: "string" }, value: { type: "string" } } },
};

describe("keyed list items", () => {
  it("get the same path elements when remembered, past the memory's size too", () => {
    const names = Array.from({ length: ITEM_KEY_CACHE_SIZE + 50 }, (_, i) =>
      i % 3 === 0 ? `n<${i}>&"x"` : `name-${i}`,
    );
    for (let round = 0; round < 2; round++) {
      const index = indexList(
        names.map((name) => ({ name, value: "v" })),
        env,
        false,
      );
      if (Array.isArray(index)) throw new Error(index.join("; "));
      expect(index.keys).toEqual(names.map((n) => keyKey([["name", n]])));
      expect(index.count.get(keyKey([["name", names[0]]]))).toBe(1);
    }
  });

  it("still tell items without their key, and repeated keys", () => {
    const repeated = indexList([{ name: "a" }, { name: "a" }, { name: 1 }], env, false);
    if (Array.isArray(repeated)) throw new Error("unexpected errors");
    expect(repeated.keys).toEqual(['k:{"name":"a"}', 'k:{"name":"a"}', 'k:{"name":1}']);
    expect(repeated.count.get('k:{"name":"a"}')).toBe(2);
    expect(indexList([{ value: "x" }], env, false)).toEqual([
      'element 0: associative list with keys has an element that omits all key fields ["name"] (and doesn\'t have default values for any key fields)',
    ]);
  });
});
