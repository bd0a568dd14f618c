import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { deepClone } from "../../src/api/deepcopy.ts";
import type { Schema } from "../../src/api/schema.ts";
import { applySchemaDefaults, defaultsOnly } from "../../src/apiserver/schemawalk.ts";

/** Defaulting walking the whole schema: what applySchemaDefaults must give. */
function fullWalk(value: unknown, schema: Schema): void {
  if (Array.isArray(value)) {
    if (schema.items) for (const item of value) fullWalk(item, schema.items);
    return;
  }
  if (typeof value !== "object" || value === null) return;
  const obj = value as Record<string, unknown>;
  if (schema.properties) {
    for (const [key, prop] of Object.entries(schema.properties)) {
      if (obj[key] === undefined && prop.default !== undefined) obj[key] = deepClone(prop.default);
      if (obj[key] !== undefined) fullWalk(obj[key], prop);
    }
  }
  if (typeof schema.additionalProperties === "object") {
    for (const key of Object.keys(obj)) {
      if (schema.properties && Object.hasOwn(schema.properties, key)) continue;
      fullWalk(obj[key], schema.additionalProperties);
    }
  }
}

const keys = fc.constantFrom("a", "b", "c");

/** Schemas over a few keys, some properties with defaults. */
const schemas: fc.Arbitrary<Schema> = fc.letrec<{ node: Schema }>((tie) => ({
  node: fc.oneof(
    { depthSize: "small" },
    fc.record(
      { type: fc.constant("string" as const), default: fc.option(fc.string(), { nil: undefined }) },
      { requiredKeys: ["type"] },
    ),
    fc.record(
      {
        type: fc.constant("object" as const),
        properties: fc.dictionary(keys, tie("node"), { maxKeys: 3 }),
        additionalProperties: fc.option(tie("node"), { nil: undefined }),
        default: fc.option(fc.dictionary(keys, fc.string(), { maxKeys: 2 }), { nil: undefined }),
      },
      { requiredKeys: ["type"] },
    ),
    fc.record({ type: fc.constant("array" as const), items: tie("node") }),
  ),
})).node;

/** Values over the same keys. */
const values = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: "small" },
    fc.string(),
    fc.dictionary(keys, tie("v"), { maxKeys: 3 }),
    fc.array(tie("v"), { maxLength: 3 }),
  ),
})).v;

describe("schema defaults", () => {
  it("fill the same values as walking the whole schema", () => {
    fc.assert(
      fc.property(schemas, values, (schema, value) => {
        const want = deepClone(value);
        fullWalk(want, schema);
        const got = deepClone(value);
        applySchemaDefaults(got, schema);
        expect(got).toEqual(want);
      }),
      { numRuns: 1000 },
    );
  });

  it("never default a declared property as an additional one", () => {
    const schema: Schema = {
      type: "object",
      properties: { a: { type: "string" } },
      additionalProperties: {
        type: "object",
        properties: { b: { type: "string", default: "x" } },
      },
    };
    const obj = { a: {}, c: {} };
    applySchemaDefaults(obj, schema);
    expect(obj).toEqual({ a: {}, c: { b: "x" } });
  });

  it("cost nothing for a schema without defaults", () => {
    const schema: Schema = {
      type: "object",
      properties: { data: { type: "object", additionalProperties: { type: "string" } } },
    };
    expect(defaultsOnly(schema)).toBeNull();
    const obj = { data: { a: "1" } };
    applySchemaDefaults(obj, schema);
    expect(obj).toEqual({ data: { a: "1" } });
    const withDefault: Schema = {
      type: "object",
      properties: {
        spec: { type: "object", properties: { n: { type: "string", default: "x" } } },
        other: { type: "string" },
      },
    };
    expect(defaultsOnly(withDefault)).toEqual({
      properties: { spec: { properties: { n: { default: "x" } } } },
    });
  });
});
