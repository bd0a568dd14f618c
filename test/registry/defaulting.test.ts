import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { deepClone } from "../../packages/api/src/deep-copy.ts";
import type { KubeObject } from "../../packages/api/src/meta.ts";
import type { Schema } from "../../packages/api/src/schema.ts";
import { applyDefaults } from "../../src/apiserver/store/lifecycle.ts";
import { crdToDefinition } from "../../src/registry/crd/convert.ts";
import type { ResourceDefinition } from "../../src/registry/types.ts";

/**
 * The two paths that default an object on create and update: a built-in type
 * (the generic schema defaulting of its version) and a custom resource (its
 * strategy, per the object's version). Both run src/registry/defaulting.ts and
 * must give the same object for the same schema.
 */
function builtinType(spec: Schema): ResourceDefinition {
  return {
    group: "example.com",
    names: {
      plural: "gadgets",
      singular: "gadget",
      kind: "Gadget",
      listKind: "GadgetList",
      shortNames: [],
      categories: [],
    },
    namespaced: true,
    custom: false,
    strategy: { allowUnconditionalUpdate: true, tracksGeneration: true },
    versions: [
      {
        name: "v1",
        served: true,
        storage: true,
        statusSubresource: false,
        printerColumns: [],
        schema: {
          type: "object",
          properties: {
            apiVersion: { type: "string" },
            kind: { type: "string" },
            metadata: { type: "object" },
            spec,
          },
        },
      },
    ],
  };
}

function customType(spec: Schema): ResourceDefinition {
  return crdToDefinition({
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "gadgets.example.com" },
    spec: {
      group: "example.com",
      scope: "Namespaced",
      names: { plural: "gadgets", singular: "gadget", kind: "Gadget", listKind: "GadgetList" },
      versions: [
        {
          name: "v1",
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: "object", properties: { spec } } },
        },
      ],
    },
  });
}

function gadget(spec: unknown): KubeObject {
  return {
    apiVersion: "example.com/v1",
    kind: "Gadget",
    metadata: { name: "g", namespace: "default" },
    spec,
  } as KubeObject;
}

/** The object each path makes of `spec`: [built-in, custom]. */
function bothPaths(schema: Schema, spec: unknown): [unknown, unknown] {
  const out: unknown[] = [];
  for (const def of [builtinType(schema), customType(schema)]) {
    const obj = gadget(deepClone(spec));
    applyDefaults(obj, def, def.versions[0]);
    out.push(obj.spec);
  }
  return [out[0], out[1]];
}

const specSchema: Schema = {
  type: "object",
  properties: {
    mode: { type: "string", default: "auto" },
    label: { type: "string", nullable: true, default: "x" },
    note: { type: "string" },
    comment: { type: "string", nullable: true },
    template: {
      type: "object",
      default: {},
      properties: { tier: { type: "string", default: "web" } },
    },
    ports: {
      type: "array",
      items: {
        type: "object",
        default: { protocol: "UDP" },
        properties: { protocol: { type: "string", default: "TCP" } },
      },
    },
    limits: {
      type: "object",
      properties: { cpu: { type: "object" } },
      additionalProperties: {
        type: "object",
        properties: { unit: { type: "string", default: "m" } },
      },
    },
  },
};

describe("one defaulting engine for built-in and custom types", () => {
  const table: { name: string; spec: Record<string, unknown>; want: Record<string, unknown> }[] = [
    {
      name: "absent fields get their defaults, also inside a defaulted parent",
      spec: {},
      want: { mode: "auto", label: "x", template: { tier: "web" } },
    },
    {
      name: "a null field that is not nullable gets its default",
      spec: { mode: null },
      want: { mode: "auto", label: "x", template: { tier: "web" } },
    },
    {
      name: "a nullable null stays null",
      spec: { label: null, comment: null },
      want: { mode: "auto", label: null, comment: null, template: { tier: "web" } },
    },
    {
      name: "a null that is neither nullable nor defaulted is dropped",
      spec: { note: null },
      want: { mode: "auto", label: "x", template: { tier: "web" } },
    },
    {
      name: "array items: a null item gets the items' default, every item its fields'",
      spec: { ports: [null, {}, { protocol: "SCTP" }] },
      want: {
        mode: "auto",
        label: "x",
        template: { tier: "web" },
        ports: [{ protocol: "UDP" }, { protocol: "TCP" }, { protocol: "SCTP" }],
      },
    },
    {
      name: "additionalProperties values are defaulted, declared properties are not",
      spec: { limits: { cpu: {}, memory: {} } },
      want: {
        mode: "auto",
        label: "x",
        template: { tier: "web" },
        limits: { cpu: {}, memory: { unit: "m" } },
      },
    },
  ];
  for (const c of table) {
    it(c.name, () => {
      const [builtin, custom] = bothPaths(specSchema, c.spec);
      expect(builtin).toEqual(c.want);
      expect(custom).toEqual(c.want);
    });
  }

  const keys = fc.constantFrom("a", "b", "c");
  const schemas: fc.Arbitrary<Schema> = fc.letrec<{ node: Schema }>((tie) => ({
    node: fc.oneof(
      { depthSize: "small" },
      fc.record(
        {
          type: fc.constant("string" as const),
          nullable: fc.option(fc.constant(true), { nil: undefined }),
          default: fc.option(fc.string({ maxLength: 3 }), { nil: undefined }),
        },
        { requiredKeys: ["type"] },
      ),
      fc.record(
        {
          type: fc.constant("object" as const),
          nullable: fc.option(fc.constant(true), { nil: undefined }),
          properties: fc.dictionary(keys, tie("node"), { maxKeys: 3 }),
          additionalProperties: fc.option(tie("node"), { nil: undefined }),
          default: fc.option(fc.constant({}), { nil: undefined }),
        },
        { requiredKeys: ["type", "properties"] },
      ),
      fc.record({ type: fc.constant("array" as const), items: tie("node") }),
    ),
  })).node;
  const values = fc.letrec<{ v: unknown }>((tie) => ({
    v: fc.oneof(
      { depthSize: "small" },
      fc.string({ maxLength: 3 }),
      fc.constant(null),
      fc.dictionary(keys, tie("v"), { maxKeys: 3 }),
      fc.array(tie("v"), { maxLength: 3 }),
    ),
  })).v;

  it("gives the same object on both paths (property)", () => {
    fc.assert(
      fc.property(
        schemas.filter((s) => s.type === "object"),
        fc.dictionary(keys, values, { maxKeys: 3 }),
        (schema, spec) => {
          const [builtin, custom] = bothPaths(schema, spec);
          expect(builtin).toEqual(custom);
        },
      ),
      { numRuns: 300 },
    );
  });
});
