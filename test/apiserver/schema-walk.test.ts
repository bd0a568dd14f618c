import { deepClone, type Schema } from "@setpoint/api";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  applySchemaDefaults,
  checkAgainstSchema,
  defaultsOnly,
  MAX_SCHEMA_WALK_DEPTH,
  type SchemaCheck,
} from "../../src/apiserver/wire/index.ts";
import { objectMetaSchema } from "../../src/registry/builtin/meta-schemas.ts";

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

/** The walk as it was written before strictMetadata: what checkAgainstSchema must still give. */
function previousCheck(
  obj: Record<string, unknown>,
  schema: Schema,
  opts: { checkTypes: boolean; dropNulls: boolean; kind: string },
): SchemaCheck {
  const out: SchemaCheck = { unknown: [], typeErrors: [] };
  const render = (path: (string | number)[]) =>
    path.reduce<string>(
      (s, seg) => (typeof seg === "number" ? `${s}[${seg}]` : s === "" ? seg : `${s}.${seg}`),
      "",
    );
  const isObj = (v: unknown): v is Record<string, unknown> =>
    typeof v === "object" && v !== null && !Array.isArray(v);
  const go = (s: Schema): string => {
    if (s["x-kubernetes-int-or-string"]) return "intstr.IntOrString";
    if (s.type === "string") return "string";
    if (s.type === "integer") return s.format === "int32" ? "int32" : "int64";
    if (s.type === "number") return "float64";
    if (s.type === "boolean") return "bool";
    if (s.type === "array") return s.items ? `[]${go(s.items)}` : "[]interface {}";
    if (s.type === "object") {
      return s.properties ? "struct" : s.additionalProperties ? "map[string]string" : "object";
    }
    return "interface {}";
  };
  const rfc3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
  const matches = (v: unknown, s: Schema): boolean => {
    if (s["x-kubernetes-int-or-string"]) {
      return typeof v === "string" || (typeof v === "number" && Number.isInteger(v));
    }
    if (s.type === "string") {
      return typeof v === "string" && !(s.format === "date-time" && v !== "" && !rfc3339.test(v));
    }
    if (s.type === "integer") return typeof v === "number" && Number.isInteger(v);
    if (s.type === "number") return typeof v === "number";
    if (s.type === "boolean") return typeof v === "boolean";
    if (s.type === "array") return Array.isArray(v);
    if (s.type === "object") return isObj(v);
    return true;
  };
  const walk = (
    value: unknown,
    s: Schema,
    path: (string | number)[],
    depth: number,
    top: boolean,
  ) => {
    if (depth > MAX_SCHEMA_WALK_DEPTH) return;
    if (opts.checkTypes && value !== null && !matches(value, s)) {
      const type =
        value === null
          ? "null"
          : Array.isArray(value)
            ? "array"
            : typeof value === "boolean"
              ? "bool"
              : typeof value;
      out.typeErrors.push(
        s.format === "date-time" && typeof value === "string"
          ? `parsing time ${JSON.stringify(value)} as "2006-01-02T15:04:05Z07:00": cannot parse ${JSON.stringify(value)} as a time in RFC 3339 form`
          : `json: cannot unmarshal ${type} into Go struct field ${opts.kind}.${render(path)} of type ${go(s)}`,
      );
      return;
    }
    if (Array.isArray(value)) {
      if (s.items) {
        for (let i = 0; i < value.length; i++) {
          walk(value[i], s.items, [...path, i], depth + 1, false);
        }
      }
      return;
    }
    if (!isObj(value)) return;
    const props = s.properties;
    const extra = s.additionalProperties;
    for (const key of Object.keys(value)) {
      const child = value[key];
      if (child === null && opts.dropNulls) {
        delete value[key];
        continue;
      }
      const next =
        (props && Object.hasOwn(props, key) ? props[key] : undefined) ??
        (typeof extra === "object" ? extra : undefined);
      if (next) {
        walk(child, next, [...path, key], depth + 1, false);
        continue;
      }
      if (extra === true || s["x-kubernetes-preserve-unknown-fields"] === true) continue;
      if (
        (s["x-kubernetes-embedded-resource"] === true || top) &&
        (key === "apiVersion" || key === "kind" || key === "metadata")
      ) {
        continue;
      }
      if (!props && s.type === undefined) continue;
      out.unknown.push(render([...path, key]));
      delete value[key];
    }
  };
  walk(obj, schema, [], 0, true);
  return out;
}

/** A custom resource's check as it was: a lenient walk, then metadata alone, strictly. */
function previousCustomCheck(obj: Record<string, unknown>, schema: Schema): SchemaCheck {
  const kind = "Widget";
  const result = previousCheck(obj, schema, { checkTypes: false, dropNulls: false, kind });
  const metaSchema = schema.properties?.metadata;
  if (metaSchema) {
    const wrapper: Schema = { type: "object", properties: { metadata: metaSchema } };
    const meta = previousCheck({ metadata: obj.metadata }, wrapper, {
      checkTypes: true,
      dropNulls: true,
      kind,
    });
    result.typeErrors.push(...meta.typeErrors);
    result.unknown.push(...meta.unknown);
  }
  return result;
}

const walkKeys = fc.constantFrom("a", "b", "apiVersion", "kind", "metadata", "labels", "1");

/** Schemas of every sort the walk tells apart. */
const walkSchemas: fc.Arbitrary<Schema> = fc.letrec<{ node: Schema }>((tie) => ({
  node: fc.oneof(
    { depthSize: "small" },
    fc.constantFrom<Schema>(
      { type: "string" },
      { type: "string", format: "date-time" },
      { type: "integer", format: "int32" },
      { type: "integer" },
      { type: "number" },
      { type: "boolean" },
      { "x-kubernetes-int-or-string": true },
      {},
      { type: "object" },
      { type: "object", "x-kubernetes-preserve-unknown-fields": true },
    ),
    fc.record(
      {
        type: fc.constant("object" as const),
        properties: fc.dictionary(walkKeys, tie("node"), { maxKeys: 4 }),
        additionalProperties: fc.oneof(fc.boolean(), tie("node")),
        "x-kubernetes-preserve-unknown-fields": fc.constant(true),
        "x-kubernetes-embedded-resource": fc.constant(true),
      },
      { requiredKeys: ["type"] },
    ),
    fc.record(
      { type: fc.constant("array" as const), items: tie("node") },
      { requiredKeys: ["type"] },
    ),
  ),
})).node;

/** Values of every JSON type, nulls and times included, over the same keys. */
const walkValues = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: "small" },
    fc.constantFrom(null, "x", "2024-01-02T03:04:05Z", "yesterday", 1, 1.5, true, false),
    fc.dictionary(walkKeys, tie("v"), { maxKeys: 4 }),
    fc.array(tie("v"), { maxLength: 3 }),
  ),
})).v;

/** Whole objects: any members, metadata of any value or left out, over a schema with metadata or none. */
const walkCases = fc.record({
  schema: fc.record(
    {
      type: fc.constant("object" as const),
      properties: fc
        .tuple(
          fc.dictionary(walkKeys, walkSchemas, { maxKeys: 3 }),
          fc.oneof(fc.constant(undefined), fc.constant(objectMetaSchema), walkSchemas),
        )
        .map(([props, meta]) => {
          const out: Record<string, Schema> = { ...props };
          delete out.metadata;
          if (meta !== undefined) out.metadata = meta;
          return out;
        }),
      "x-kubernetes-preserve-unknown-fields": fc.constant(true),
    },
    { requiredKeys: ["type", "properties"] },
  ),
  obj: fc
    .tuple(
      fc.dictionary(walkKeys, walkValues, { maxKeys: 5 }),
      fc.oneof(
        walkValues,
        fc.constant(undefined),
        fc.record(
          {
            name: fc.constantFrom("n", null, 3),
            labels: fc.dictionary(fc.constantFrom("a", "b"), fc.constantFrom("v", null, 1)),
            creationTimestamp: fc.constantFrom("2024-01-02T03:04:05Z", "now", null),
            finalizers: fc.constantFrom(["a"], [null], "a", null),
            ownerReferences: fc.constantFrom([{ name: "o", x: 1 }], {}, [null], [{ uid: null }]),
            x: walkValues,
          },
          { requiredKeys: [] },
        ),
      ),
    )
    .map(([members, metadata]) => {
      const obj: Record<string, unknown> = { ...members };
      if (metadata === undefined) delete obj.metadata;
      else obj.metadata = metadata;
      return obj;
    }),
});

describe("checkAgainstSchema", () => {
  it("finds and removes what the walk as it was did, for every option (property)", () => {
    fc.assert(
      fc.property(
        walkCases,
        fc.boolean(),
        fc.boolean(),
        ({ schema, obj }, checkTypes, dropNulls) => {
          const opts = { checkTypes, dropNulls, kind: "Widget" };
          const before = deepClone(obj);
          expect(checkAgainstSchema(obj, schema, opts)).toEqual(
            previousCheck(before, schema, opts),
          );
          expect(obj).toEqual(before);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("reads metadata strictly in the same walk as a second, strict walk of it did (property)", () => {
    fc.assert(
      fc.property(walkCases, ({ schema, obj }) => {
        const before = deepClone(obj);
        const result = checkAgainstSchema(obj, schema, {
          checkTypes: false,
          dropNulls: false,
          strictMetadata: true,
          kind: "Widget",
        });
        expect(result).toEqual(previousCustomCheck(before, schema));
        expect(obj).toEqual(before);
      }),
      { numRuns: 3000 },
    );
  });

  it("reads a custom resource's metadata strictly (table)", () => {
    const schema: Schema = {
      type: "object",
      properties: { metadata: objectMetaSchema, spec: { type: "object", properties: {} } },
    };
    const cases: [Record<string, unknown>, SchemaCheck, Record<string, unknown>][] = [
      [
        { metadata: { name: "a", labels: { x: null }, foo: null }, spec: { bar: null } },
        { unknown: ["metadata.foo", "spec.bar"], typeErrors: [] },
        { metadata: { name: "a", labels: {} }, spec: {} },
      ],
      [
        { metadata: { name: 3 } },
        {
          unknown: [],
          typeErrors: [
            "json: cannot unmarshal number into Go struct field Widget.metadata.name of type string",
          ],
        },
        { metadata: { name: 3 } },
      ],
      [
        { spec: {} },
        {
          unknown: [],
          typeErrors: [
            "json: cannot unmarshal undefined into Go struct field Widget.metadata of type struct",
          ],
        },
        { spec: {} },
      ],
    ];
    for (const [obj, want, after] of cases) {
      const result = checkAgainstSchema(obj, schema, {
        checkTypes: false,
        dropNulls: false,
        strictMetadata: true,
        kind: "Widget",
      });
      expect(result).toEqual(want);
      expect(obj).toEqual(after);
    }
  });
});
