/**
 * What a custom resource's strategy refuses on every write (create, update and
 * patch all validate through it), as Kubernetes refuses it: duplicates in
 * `x-kubernetes-list-type: set` lists and in the keys of `map` lists; CEL rules
 * not run on an object the schema found missing, mistyped or too large fields in;
 * and CRDs whose count bounds are negative.
 */
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../packages/api/src/meta.ts";
import type { Schema } from "../../packages/api/src/schema.ts";
import { crdToDefinition } from "../../src/registry/crd/convert.ts";
import { structuralSchemaCauses } from "../../src/registry/crd/structural.ts";

const NOT_CHECKED =
  'Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation';

function definitionOf(spec: Schema) {
  const crd: KubeObject = {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "things.example.com", uid: `u-${Math.random()}`, generation: 1 },
    spec: {
      group: "example.com",
      scope: "Namespaced",
      names: { plural: "things", singular: "thing", kind: "Thing" },
      versions: [
        {
          name: "v1",
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: "object", properties: { spec } } },
        },
      ],
    },
  };
  return crdToDefinition(crd);
}

function causesOf(spec: Schema, value: unknown): string[] {
  const def = definitionOf(spec);
  const obj: KubeObject = {
    apiVersion: "example.com/v1",
    kind: "Thing",
    metadata: { name: "t", namespace: "default" },
    spec: value,
  };
  return (def.strategy.validate?.(obj, undefined) ?? []).map(
    (c) => `${c.field ?? ""}|${c.reason}|${c.message}`,
  );
}

describe("list types", () => {
  const spec: Schema = {
    type: "object",
    properties: {
      tags: { type: "array", "x-kubernetes-list-type": "set", items: { type: "string" } },
      sizes: { type: "array", "x-kubernetes-list-type": "set", items: { type: "integer" } },
      ports: {
        type: "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
        items: {
          type: "object",
          properties: { name: { type: "string" }, port: { type: "integer" } },
        },
      },
      routes: {
        type: "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["host", "path"],
        items: {
          type: "object",
          properties: { host: { type: "string" }, path: { type: "string" } },
        },
      },
    },
  };

  it("refuses each repeated set item once, at its second appearance", () => {
    expect(causesOf(spec, { tags: ["a", "b", "a", "a", "b"], sizes: [1, 2, 1] })).toEqual([
      'spec.tags[2]|FieldValueDuplicate|Duplicate value: "a"',
      'spec.tags[4]|FieldValueDuplicate|Duplicate value: "b"',
      "spec.sizes[2]|FieldValueDuplicate|Duplicate value: 1",
    ]);
    expect(causesOf(spec, { tags: ["a", "b"], sizes: [1, 2] })).toEqual([]);
  });

  it("refuses repeated keys of map lists, printed as Go prints them", () => {
    expect(
      causesOf(spec, {
        ports: [{ name: "a", port: 1 }, { name: "a", port: 2 }, { port: 3 }, { port: 4 }],
        routes: [
          { host: "h", path: "/" },
          { host: "h", path: "/x" },
          { path: "/", host: "h" },
        ],
      }),
    ).toEqual([
      'spec.ports[1]|FieldValueDuplicate|Duplicate value: map[string]interface {}{"name":"a"}',
      "spec.ports[3]|FieldValueDuplicate|Duplicate value: map[string]interface {}{}",
      'spec.routes[2]|FieldValueDuplicate|Duplicate value: map[string]interface {}{"host":"h", "path":"/"}',
    ]);
  });
});

describe("CEL rules after schema failures", () => {
  const spec: Schema = {
    type: "object",
    required: ["size"],
    properties: {
      size: { type: "integer", maximum: 10 },
      name: { type: "string", pattern: "^[a-z]+$", maxLength: 20 },
    },
    "x-kubernetes-validations": [{ rule: "self.size > 5", message: "size must be above 5" }],
  };

  it("are not run when a field is missing, mistyped or too long, and say so", () => {
    for (const value of [{}, { size: "big" }, { size: 1, name: "x".repeat(30) }]) {
      const causes = causesOf(spec, value);
      expect(causes.at(-1)).toBe(`|FieldValueInvalid|${NOT_CHECKED}`);
      expect(causes.join("\n")).not.toContain("size must be above 5");
    }
  });

  it("run when the schema's failures do not block them", () => {
    const causes = causesOf(spec, { size: 1, name: "NOT" });
    expect(causes).toContain(
      'spec|FieldValueInvalid|Invalid value: "object": size must be above 5',
    );
    expect(causes.join("\n")).not.toContain("some validation rules were not checked");
  });
});

describe("negative count bounds", () => {
  it("refuses maxLength: -1 and the other negative bounds", () => {
    const causes = structuralSchemaCauses(
      {
        type: "object",
        properties: {
          s: { type: "string", maxLength: -1, minLength: -2 },
          l: { type: "array", items: { type: "string" }, maxItems: -1 },
          m: { type: "object", maxProperties: -1 },
        },
      },
      "spec.versions[0].schema.openAPIV3Schema",
      false,
    );
    expect(causes.map((c) => `${c.field}: ${c.message}`)).toEqual([
      "spec.versions[0].schema.openAPIV3Schema.properties[s].maxLength: Invalid value: -1: must be greater than or equal to 0",
      "spec.versions[0].schema.openAPIV3Schema.properties[s].minLength: Invalid value: -2: must be greater than or equal to 0",
      "spec.versions[0].schema.openAPIV3Schema.properties[l].maxItems: Invalid value: -1: must be greater than or equal to 0",
      "spec.versions[0].schema.openAPIV3Schema.properties[m].maxProperties: Invalid value: -1: must be greater than or equal to 0",
    ]);
  });
});
