import { deepClone, type KubeObject, type Schema, type StatusCause } from "@setpoint/api";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  applyDefaults,
  applyDefaultsWith,
  CRD_CLEANUP_FINALIZER,
  checkNames,
  compileSchema,
  compileSchemaRules,
  crdToDefinition,
  customResourceDefinitions,
  defaultsSkeleton,
  fillReadDefaults,
  MAX_OBJECT_DEPTH,
  pruneUnknownFields,
  validateAgainstSchema,
  validateRules,
} from "../../src/registry/crd/index.ts";
import { createBuiltinRegistry } from "../../src/registry/index.ts";

const webAppSchema: Schema = {
  type: "object",
  properties: {
    spec: {
      type: "object",
      required: ["image"],
      "x-kubernetes-validations": [
        {
          rule: "self.replicas <= self.maxReplicas",
          message: "replicas must be at most maxReplicas",
        },
      ],
      properties: {
        image: { type: "string", pattern: "^[a-z0-9./:-]+$", maxLength: 200 },
        replicas: { type: "integer", minimum: 0, default: 1 },
        maxReplicas: { type: "integer", default: 10 },
        port: {
          "x-kubernetes-int-or-string": true,
          anyOf: [{ type: "integer" }, { type: "string" }],
        },
        mode: { type: "string", enum: ["Rolling", "Recreate"] },
        template: {
          type: "object",
          default: {},
          properties: { tier: { type: "string", default: "web" } },
        },
        labels: { type: "object", additionalProperties: { type: "string" } },
        extra: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
      },
    },
    status: {
      type: "object",
      properties: { readyReplicas: { type: "integer" } },
    },
  },
};

function crd(overrides: Record<string, unknown> = {}, schema: Schema = webAppSchema): KubeObject {
  const base: KubeObject = {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "webapps.example.com" },
    spec: {
      group: "example.com",
      scope: "Namespaced",
      names: {
        plural: "webapps",
        singular: "webapp",
        kind: "WebApp",
        listKind: "WebAppList",
        shortNames: ["wa"],
        categories: ["all"],
      },
      versions: [
        {
          name: "v1",
          served: true,
          storage: true,
          schema: { openAPIV3Schema: schema },
          subresources: {
            status: {},
            scale: {
              specReplicasPath: ".spec.replicas",
              statusReplicasPath: ".status.readyReplicas",
            },
          },
          additionalPrinterColumns: [
            { name: "Image", type: "string", jsonPath: ".spec.image" },
            { name: "Replicas", type: "integer", jsonPath: ".spec.replicas" },
          ],
        },
      ],
    },
  };
  return { ...base, ...overrides };
}

function validateCrd(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const copy = deepClone(obj);
  customResourceDefinitions.strategy.default?.(copy);
  return customResourceDefinitions.strategy.validate?.(copy, old) ?? [];
}

function lines(causes: StatusCause[]): string[] {
  return causes.map((c) => `${c.field}: ${c.message}`);
}

describe("CustomResourceDefinition validation", () => {
  it("accepts a realistic CRD", () => {
    expect(lines(validateCrd(crd()))).toEqual([]);
  });

  it("defaults scope, conversion, singular and listKind", () => {
    const obj = crd();
    const spec = obj.spec as Record<string, unknown>;
    delete spec.scope;
    spec.names = { plural: "webapps", kind: "WebApp" };
    customResourceDefinitions.strategy.default?.(obj);
    expect(spec.scope).toBe("Namespaced");
    expect(spec.conversion).toEqual({ strategy: "None" });
    expect(spec.names).toMatchObject({ singular: "webapp", listKind: "WebAppList" });
  });

  it("puts the cleanup finalizer on at create and records the storage version", () => {
    const obj = crd({ status: { conditions: [{ type: "Established", status: "True" }] } });
    customResourceDefinitions.strategy.prepareForCreate?.(obj);
    expect(obj.metadata.finalizers).toContain(CRD_CLEANUP_FINALIZER);
    expect(obj.status).toEqual({ storedVersions: ["v1"] });
  });

  it("names the CRD <plural>.<group> and wants a dotted group", () => {
    const obj = crd({ metadata: { name: "webapps.other.com" } });
    (obj.spec as Record<string, unknown>).group = "example";
    expect(lines(validateCrd(obj))).toEqual(
      expect.arrayContaining([
        'metadata.name: Invalid value: "webapps.other.com": must be spec.names.plural+"."+spec.group',
        'spec.group: Invalid value: "example": should be a domain with at least one dot',
      ]),
    );
  });

  it("checks names, scope, versions and storage", () => {
    const obj = crd();
    const spec = obj.spec as Record<string, unknown>;
    spec.scope = "Global";
    spec.names = {
      plural: "Web_Apps",
      singular: "webapp",
      kind: "WebApp",
      listKind: "WebApp",
      shortNames: ["w a"],
    };
    const v = (spec.versions as Record<string, unknown>[])[0];
    spec.versions = [v, { ...v, storage: true }];
    const got = lines(validateCrd(obj));
    expect(got).toEqual(
      expect.arrayContaining([
        'spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"',
        "spec.versions: Invalid value: " +
          JSON.stringify(spec.versions) +
          ": must contain unique version names",
        "spec.versions: Invalid value: " +
          JSON.stringify(spec.versions) +
          ": must have exactly one version marked as storage version",
        'spec.names.listKind: Invalid value: "WebApp": kind and listKind may not be the same',
      ]),
    );
    expect(
      got.some((l) =>
        l.startsWith('spec.names.plural: Invalid value: "Web_Apps": a DNS-1035 label'),
      ),
    ).toBe(true);
    expect(got.some((l) => l.startsWith('spec.names.shortNames[0]: Invalid value: "w a"'))).toBe(
      true,
    );
  });

  it("refuses a CRD without versions", () => {
    const obj = crd();
    (obj.spec as Record<string, unknown>).versions = [];
    expect(lines(validateCrd(obj))).toContain(
      "spec.versions: Invalid value: []: must have exactly one version marked as storage version",
    );
  });

  it("refuses conversion webhooks, which this server does not call", () => {
    const obj = crd();
    (obj.spec as Record<string, unknown>).conversion = { strategy: "Webhook" };
    expect(lines(validateCrd(obj))).toContain(
      "spec.conversion.strategy: Forbidden: conversion webhooks are not supported by this server",
    );
  });

  it("refuses non-structural schemas with Kubernetes' paths and messages", () => {
    const schema: Schema = {
      type: "object",
      properties: {
        spec: {
          properties: { size: { type: "integer" }, list: { type: "array" } },
          anyOf: [{ type: "object", properties: { ghost: { minimum: 1 } } }],
        } as Schema,
        metadata: { type: "object", properties: { labels: { type: "object" } } },
        other: {
          type: "object",
          properties: { a: { type: "string" } },
          additionalProperties: { type: "string" },
        },
      },
    };
    const got = lines(validateCrd(crd({}, schema)));
    expect(got).toEqual(
      expect.arrayContaining([
        "spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
        "spec.validation.openAPIV3Schema.properties[spec].properties[list].items: Required value: must be specified",
        "spec.validation.openAPIV3Schema.properties[spec].anyOf[0].type: Forbidden: must be empty to be structural",
        "spec.validation.openAPIV3Schema.properties[spec].properties[ghost]: Required value: because it is defined in spec.validation.openAPIV3Schema.properties[spec].anyOf[0].properties[ghost]",
        "spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
        "spec.validation.openAPIV3Schema.properties[other].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
      ]),
    );
  });

  it("names schema paths per version when versions differ", () => {
    const obj = crd();
    const spec = obj.spec as { versions: Record<string, unknown>[] };
    spec.versions.push({
      name: "v2",
      served: true,
      storage: false,
      schema: { openAPIV3Schema: { type: "object", properties: { spec: { properties: {} } } } },
    });
    expect(lines(validateCrd(obj))).toContain(
      "spec.versions[1].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
    );
  });

  it("refuses bad printer columns and scale paths", () => {
    const obj = crd();
    const v = (obj.spec as { versions: Record<string, unknown>[] }).versions[0];
    v.additionalPrinterColumns = [
      { name: "A", type: "color", jsonPath: ".spec.a" },
      { name: "B", type: "string", jsonPath: "spec.b" },
      { name: "C", type: "string", jsonPath: ".spec[?(@.x==" },
    ];
    v.subresources = {
      scale: { specReplicasPath: ".status.replicas", statusReplicasPath: ".status.ready" },
    };
    const got = lines(validateCrd(obj));
    expect(got).toEqual(
      expect.arrayContaining([
        'spec.additionalPrinterColumns[0].type: Invalid value: "color": must be one of boolean,date,integer,number,string',
        'spec.additionalPrinterColumns[1].JSONPath: Invalid value: "spec.b": must be a simple json path starting with .',
        'spec.subresources.scale.specReplicasPath: Invalid value: ".status.replicas": should be a json path under .spec',
      ]),
    );
    expect(
      got.some((l) =>
        l.startsWith('spec.additionalPrinterColumns[2].JSONPath: Invalid value: ".spec[?(@.x=="'),
      ),
    ).toBe(true);
  });

  it("refuses CEL rules that do not compile, with the compile error", () => {
    const schema = deepClone(webAppSchema);
    schema.properties!.spec["x-kubernetes-validations"] = [
      { rule: "self.replicas <= " },
      { rule: "self.nosuchfield > 1" },
      { rule: "self.image.size()" },
    ];
    const got = validateCrd(crd({}, schema));
    const base = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations";
    expect(got.map((c) => c.field)).toEqual([
      `${base}[0].rule`,
      `${base}[1].rule`,
      `${base}[2].rule`,
    ]);
    expect(got[0].message).toContain("compilation failed: ERROR: <input>:1:18:");
    expect(got[1].message).toContain(
      "compilation failed: ERROR: <input>:1:5: undefined field 'nosuchfield'",
    );
    expect(got[2].message).toContain("cel expression must evaluate to a bool");
  });

  it("refuses a rule whose estimated cost is too high", () => {
    const schema: Schema = {
      type: "object",
      properties: {
        spec: {
          type: "object",
          properties: { names: { type: "array", items: { type: "string" } } },
          "x-kubernetes-validations": [
            { rule: "self.names.all(a, self.names.all(b, a == b || a != b))" },
          ],
        },
      },
    };
    const got = lines(validateCrd(crd({}, schema)));
    expect(got).toContain(
      "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)",
    );
    // Bounding the list brings it under the limit.
    schema.properties!.spec.properties!.names.maxItems = 10;
    schema.properties!.spec.properties!.names.items!.maxLength = 20;
    expect(lines(validateCrd(crd({}, schema)))).toEqual([]);
  });

  it("refuses defaults that do not validate against their own schema", () => {
    const schema = deepClone(webAppSchema);
    schema.properties!.spec.properties!.replicas.default = "three";
    schema.properties!.spec.properties!.template.default = { tier: "web", color: "blue" };
    const got = lines(validateCrd(crd({}, schema)));
    expect(got).toEqual(
      expect.arrayContaining([
        'spec.validation.openAPIV3Schema.properties[spec].properties[replicas].default: Invalid value: "string":  in body must be of type integer: "string"',
        'spec.validation.openAPIV3Schema.properties[spec].properties[template].default: Invalid value: {"tier":"web","color":"blue"}: must not have unknown fields',
      ]),
    );
  });

  it("keeps group and plural immutable", () => {
    const old = crd();
    const next = crd();
    (next.spec as { names: { plural: string } }).names.plural = "apps";
    expect(lines(validateCrd(next, old))).toContain(
      'spec.names.plural: Invalid value: "apps": field is immutable',
    );
  });
});

describe("custom resource schema validation", () => {
  const compiled = compileSchema(webAppSchema);

  it("words errors as Kubernetes does", () => {
    const obj = {
      apiVersion: "example.com/v1",
      kind: "WebApp",
      metadata: { name: "a" },
      spec: { image: "Bad Image!", replicas: "string", mode: "Blue", port: true, labels: { a: 1 } },
    };
    expect(lines(validateAgainstSchema(obj, compiled))).toEqual(
      expect.arrayContaining([
        'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"',
        "spec.image: Invalid value: \"Bad Image!\": spec.image in body should match '^[a-z0-9./:-]+$'",
        'spec.mode: Unsupported value: "Blue": supported values: "Rolling", "Recreate"',
        'spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"',
        'spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string: "integer"',
      ]),
    );
  });

  it("requires fields and checks bounds", () => {
    expect(lines(validateAgainstSchema({ spec: { replicas: -1 } }, compiled))).toEqual([
      "spec.image: Required value",
      "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
    ]);
  });

  it("refuses objects nested too deeply before validating them", () => {
    let deep: Record<string, unknown> = {};
    const root = { spec: { image: "x", extra: deep } };
    for (let i = 0; i < MAX_OBJECT_DEPTH + 5; i++) {
      const next = {};
      deep.a = next;
      deep = next;
    }
    const causes = validateAgainstSchema(root, compiled);
    expect(causes).toHaveLength(1);
    expect(causes[0].message).toContain(`nested deeper than ${MAX_OBJECT_DEPTH} levels`);
  });

  it("prunes unknown fields and reports their paths", () => {
    const obj = {
      apiVersion: "example.com/v1",
      kind: "WebApp",
      metadata: { name: "a", bogus: 1 },
      spec: { image: "x", unknown: 1, extra: { kept: true }, template: { tier: "a", junk: 2 } },
      other: 3,
    };
    expect(pruneUnknownFields(obj, webAppSchema).sort()).toEqual([
      "metadata.bogus",
      "other",
      "spec.template.junk",
      "spec.unknown",
    ]);
    expect(obj).toEqual({
      apiVersion: "example.com/v1",
      kind: "WebApp",
      metadata: { name: "a" },
      spec: { image: "x", extra: { kept: true }, template: { tier: "a" } },
    });
  });

  it("prunes fields named like Object.prototype members", () => {
    const obj = JSON.parse('{"spec":{"image":"x","constructor":1,"toString":"a","__proto__":{}}}');
    expect(pruneUnknownFields(obj, webAppSchema).sort()).toEqual([
      "spec.__proto__",
      "spec.constructor",
      "spec.toString",
    ]);
    expect(Object.keys(obj.spec)).toEqual(["image"]);
  });

  it("applies defaults, nested ones under a freshly defaulted parent too", () => {
    const obj: Record<string, unknown> = { spec: { image: "x", maxReplicas: null } };
    applyDefaults(obj, webAppSchema);
    expect(obj.spec).toEqual({
      image: "x",
      replicas: 1,
      maxReplicas: 10,
      template: { tier: "web" },
    });
  });

  const spec = webAppSchema.properties!.spec;
  const knownKeys = Object.keys(spec.properties!);
  const value = fc.oneof(fc.integer(), fc.string(), fc.boolean(), fc.constant(null));

  it("pruning keeps exactly the declared fields (property)", () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.oneof(fc.constantFrom(...knownKeys), fc.string({ minLength: 1 })), value),
        (fields) => {
          const obj = { spec: deepClone(fields) };
          const pruned = pruneUnknownFields(obj, webAppSchema);
          const kept = Object.keys(obj.spec);
          expect(kept.every((k) => knownKeys.includes(k))).toBe(true);
          const expectedKept = Object.keys(fields).filter((k) => knownKeys.includes(k));
          expect(kept.sort()).toEqual(expectedKept.sort());
          expect(pruned.length).toBe(Object.keys(fields).length - expectedKept.length);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("defaulting is idempotent (property)", () => {
    fc.assert(
      fc.property(
        fc.record(
          {
            replicas: fc.option(fc.integer()),
            template: fc.option(fc.record({ tier: fc.option(fc.string()) })),
          },
          { requiredKeys: [] },
        ),
        (fields) => {
          const once = { spec: deepClone(fields) };
          applyDefaults(once, webAppSchema);
          const twice = deepClone(once);
          applyDefaults(twice, webAppSchema);
          expect(twice).toEqual(once);
          expect((once.spec as Record<string, unknown>).maxReplicas).toBe(10);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe("defaults on read", () => {
  it("keep only the branches that lead to a default", () => {
    expect(defaultsSkeleton(webAppSchema)).toEqual({
      properties: {
        spec: {
          properties: {
            replicas: { default: 1 },
            maxReplicas: { default: 10 },
            template: { default: {}, properties: { tier: { default: "web" } } },
          },
        },
      },
    });
    expect(
      defaultsSkeleton({ type: "object", properties: { a: { type: "string" } } }),
    ).toBeUndefined();
  });

  it("fill what full defaulting fills (property)", () => {
    const skeleton = defaultsSkeleton(webAppSchema)!;
    const scalar = fc.oneof(fc.integer(), fc.string());
    fc.assert(
      fc.property(
        fc.record(
          {
            image: scalar,
            replicas: scalar,
            maxReplicas: scalar,
            template: fc.record({ tier: scalar, other: scalar }, { requiredKeys: [] }),
            labels: fc.dictionary(fc.string({ minLength: 1 }), fc.string()),
          },
          { requiredKeys: [] },
        ),
        (fields) => {
          const full = { spec: deepClone(fields) };
          applyDefaults(full, webAppSchema);
          const read = { spec: deepClone(fields) };
          fillReadDefaults(read, skeleton);
          expect(read).toEqual(full);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("walking the skeleton, default what walking the schema does, nulls included (property)", () => {
    const skeleton = defaultsSkeleton(webAppSchema)!;
    const scalar = fc.oneof(fc.integer(), fc.string(), fc.constant(null));
    fc.assert(
      fc.property(
        fc.record(
          {
            image: scalar,
            replicas: scalar,
            maxReplicas: scalar,
            template: fc.oneof(
              fc.constant(null),
              fc.record({ tier: scalar, other: scalar }, { requiredKeys: [] }),
            ),
            labels: fc.dictionary(
              fc.string({ minLength: 1 }),
              fc.oneof(fc.string(), fc.constant(null)),
            ),
          },
          { requiredKeys: [] },
        ),
        (fields) => {
          const full = { spec: deepClone(fields) };
          applyDefaults(full, webAppSchema);
          const fast = { spec: deepClone(fields) };
          applyDefaultsWith(fast, webAppSchema, skeleton);
          expect(fast).toEqual(full);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("fill what a walk over every member of the value fills (property)", () => {
    // Every member of each map is looked at, as defaulting was first written.
    const reference = (value: unknown, s: Schema | undefined): void => {
      if (!s) return;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) {
          if (value[i] === null && s.items && !s.items.nullable && s.items.default !== undefined) {
            value[i] = deepClone(s.items.default);
          }
          reference(value[i], s.items);
        }
        return;
      }
      if (typeof value !== "object" || value === null) return;
      const obj = value as Record<string, unknown>;
      for (const [k, p] of Object.entries(s.properties ?? {})) {
        if (p.default === undefined) continue;
        if (!Object.hasOwn(obj, k) || (obj[k] === null && !p.nullable))
          obj[k] = deepClone(p.default);
      }
      const extra = typeof s.additionalProperties === "object" ? s.additionalProperties : undefined;
      for (const k of Object.keys(obj)) {
        const p = s.properties && Object.hasOwn(s.properties, k) ? s.properties[k] : undefined;
        if (p) reference(obj[k], p);
        else if (extra) {
          if (obj[k] === null && !extra.nullable && extra.default !== undefined) {
            obj[k] = deepClone(extra.default);
          }
          reference(obj[k], extra);
        }
      }
    };
    const schema: Schema = {
      type: "object",
      properties: {
        spec: {
          type: "object",
          properties: {
            replicas: { type: "integer", default: 1 },
            template: {
              type: "object",
              default: {},
              properties: { tier: { type: "string", default: "web" }, size: { type: "integer" } },
            },
            ports: {
              type: "array",
              items: {
                type: "object",
                properties: { protocol: { type: "string", default: "TCP" } },
              },
            },
            limits: {
              type: "object",
              additionalProperties: {
                type: "object",
                properties: { unit: { type: "string", default: "m" } },
              },
            },
          },
        },
      },
    };
    const skeleton = defaultsSkeleton(schema)!;
    const scalar = fc.oneof(fc.integer(), fc.string(), fc.constant(null));
    const key = fc.constantFrom(
      "replicas",
      "template",
      "ports",
      "limits",
      "tier",
      "constructor",
      "x",
    );
    const value = fc.letrec((tie) => ({
      any: fc.oneof(
        { depthSize: "small" },
        scalar,
        fc.array(tie("any"), { maxLength: 3 }),
        fc.dictionary(key, tie("any"), { maxKeys: 4 }),
      ),
    })).any;
    fc.assert(
      fc.property(value, (spec) => {
        const expected = { spec: deepClone(spec) };
        reference(expected, schema);
        const full = { spec: deepClone(spec) };
        fillReadDefaults(full, schema);
        const read = { spec: deepClone(spec) };
        fillReadDefaults(read, skeleton);
        expect(full).toEqual(expected);
        expect(read).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });

  it("are one hook per set of defaults, and none without defaults", () => {
    const a = crdToDefinition(crd()).strategy.onRead;
    const b = crdToDefinition(crd({ metadata: { name: "webapps.example.com", generation: 7 } }))
      .strategy.onRead;
    expect(a).toBeTypeOf("function");
    expect(b).toBe(a);
    const changed = deepClone(webAppSchema);
    changed.properties!.spec.properties!.replicas.default = 2;
    expect(crdToDefinition(crd({}, changed)).strategy.onRead).not.toBe(a);
    const none: Schema = { type: "object", properties: { spec: { type: "object" } } };
    expect(crdToDefinition(crd({}, none)).strategy.onRead).toBeUndefined();
    const obj = { apiVersion: "example.com/v1", kind: "WebApp", metadata: {}, spec: {} };
    a!(obj);
    expect(obj.spec).toEqual({ replicas: 1, maxReplicas: 10, template: { tier: "web" } });
  });
});

describe("CEL rules", () => {
  const schema: Schema = {
    type: "object",
    properties: {
      spec: {
        type: "object",
        "x-kubernetes-validations": [
          {
            rule: "self.replicas <= self.maxReplicas",
            message: "replicas must be at most maxReplicas",
          },
          {
            rule: "self.replicas >= oldSelf.replicas",
            messageExpression: "'replicas may not drop from ' + string(oldSelf.replicas)",
          },
          {
            rule: "!has(self.name) || self.name.startsWith('web-')",
            fieldPath: ".name",
            reason: "FieldValueForbidden",
            message: "name must start with web-",
          },
          {
            rule: "self.tags.isSorted() && self.tags.all(t, t.size() <= 8)",
            message: "tags must be sorted and short",
          },
          {
            rule: "!oldSelf.hasValue() || oldSelf.value().mode == self.mode",
            optionalOldSelf: true,
            message: "mode is immutable",
          },
        ],
        properties: {
          replicas: { type: "integer" },
          maxReplicas: { type: "integer" },
          name: { type: "string", maxLength: 63 },
          mode: { type: "string", maxLength: 10 },
          tags: { type: "array", maxItems: 10, items: { type: "string", maxLength: 20 } },
          "max-surge": { type: "integer", "x-kubernetes-validations": [{ rule: "self >= 0" }] },
        },
      },
    },
  };
  const { root, issues } = compileSchemaRules(schema, "spec.validation.openAPIV3Schema");

  it("compiles", () => {
    expect(issues).toEqual([]);
  });

  it("reports failed rules with message, messageExpression, fieldPath and reason", () => {
    const obj = {
      spec: {
        replicas: 5,
        maxReplicas: 3,
        name: "api",
        mode: "a",
        tags: ["b", "a"],
        "max-surge": -1,
      },
    };
    expect(lines(validateRules(obj, undefined, root))).toEqual([
      'spec: Invalid value: "object": replicas must be at most maxReplicas',
      "spec.name: Forbidden: name must start with web-",
      'spec: Invalid value: "object": tags must be sorted and short',
      "spec.max-surge: Invalid value: -1: failed rule: self >= 0",
    ]);
  });

  it("runs transition rules only on update", () => {
    const obj = { spec: { replicas: 2, maxReplicas: 3, mode: "a", tags: [] } };
    expect(validateRules(obj, undefined, root)).toEqual([]);
    const old = { spec: { replicas: 3, maxReplicas: 3, mode: "b", tags: [] } };
    expect(lines(validateRules(obj, old, root))).toEqual([
      'spec: Invalid value: "object": replicas may not drop from 3',
      'spec: Invalid value: "object": mode is immutable',
    ]);
  });

  it("cuts off a rule that runs past its cost budget", () => {
    const loose: Schema = {
      type: "object",
      properties: {
        spec: {
          type: "object",
          properties: { l: { type: "array", maxItems: 5, items: { type: "integer" } } },
          "x-kubernetes-validations": [
            { rule: "self.l.all(x, self.l.all(y, self.l.all(z, x + y + z >= 0)))" },
          ],
        },
      },
    };
    const compiled = compileSchemaRules(loose);
    expect(compiled.issues).toEqual([]);
    // maxItems is not enforced here (schema validation does that): the meter still bounds the work.
    const big = { spec: { l: Array.from({ length: 500 }, (_, i) => i) } };
    const causes = validateRules(big, undefined, compiled.root);
    expect(causes).toHaveLength(1);
    expect(causes[0].field).toBe("spec");
    expect(causes[0].message).toContain("validation rule exceeded its cost budget");
  });

  it("evaluates the Kubernetes library functions", () => {
    const lib: Schema = {
      type: "object",
      "x-kubernetes-validations": [
        { rule: "url(self.endpoint).getHost() == 'example.com:8080'" },
        { rule: "sets.contains(self.allowed, ['a'])" },
        { rule: "self.version.find('[0-9]+') == '12'" },
        { rule: "self.allowed.indexOf('b') == 1 && self.allowed.sum() == 'ab' || true" },
        { rule: "self.endpoint.replace('http', 'https').startsWith('https://')" },
      ],
      properties: {
        endpoint: { type: "string", maxLength: 100 },
        allowed: { type: "array", maxItems: 5, items: { type: "string", maxLength: 5 } },
        version: { type: "string", maxLength: 10 },
      },
    };
    const c = compileSchemaRules(lib);
    expect(c.issues).toEqual([]);
    expect(
      validateRules(
        { endpoint: "http://example.com:8080/x", allowed: ["a", "b"], version: "v12" },
        undefined,
        c.root,
      ),
    ).toEqual([]);
    expect(
      validateRules(
        { endpoint: "http://other.org/x", allowed: ["b"], version: "v1" },
        undefined,
        c.root,
      ),
    ).toHaveLength(3);
  });
});

describe("CEL rules reading only some fields", () => {
  const schema: Schema = {
    type: "object",
    properties: {
      spec: {
        type: "object",
        "x-kubernetes-validations": [
          { rule: "self.min <= self.max", messageExpression: "'min ' + string(self.min)" },
          { rule: "!has(self.name) || self.name.startsWith('x')" },
          { rule: "!self.?mode.hasValue() || self.mode != 'off'" },
          { rule: "self.max >= oldSelf.max", message: "max may not drop" },
          { rule: "!has(self.dash__dash__ed) || self.dash__dash__ed != 7" },
        ],
        properties: {
          min: { type: "integer" },
          max: { type: "integer" },
          name: { type: "string", maxLength: 10 },
          mode: { type: "string", maxLength: 5 },
          "dash-ed": { type: "integer" },
          big: { type: "array", maxItems: 20, items: { type: "integer" } },
        },
      },
      whole: {
        type: "object",
        properties: { a: { type: "integer" } },
        "x-kubernetes-validations": [{ rule: "size(self) < 3 && self.a >= 0" }],
      },
    },
  };
  const compiled = compileSchemaRules(schema);
  const spec = compiled.root!.properties!.get("spec")!;
  const whole = compiled.root!.properties!.get("whole")!;

  it("know which fields of self and oldSelf the rules read", () => {
    expect(compiled.issues).toEqual([]);
    expect([...(spec.selfFields ?? [])].sort()).toEqual([
      "dash__dash__ed",
      "max",
      "min",
      "mode",
      "name",
    ]);
    expect([...(spec.oldSelfFields ?? [])]).toEqual(["max"]);
    // Known at compile time: which declared fields make up the views.
    expect(spec.selfPicks?.map((p) => p.key).sort()).toEqual([
      "dash-ed",
      "max",
      "min",
      "mode",
      "name",
    ]);
    expect(spec.oldSelfPicks?.map((p) => p.key)).toEqual(["max"]);
    // size(self) reads self as a whole.
    expect(whole.selfFields).toBeUndefined();
  });

  it("give the causes converting everything would (property)", () => {
    const full = compileSchemaRules(schema).root!;
    for (const n of [full.properties!.get("spec")!, full.properties!.get("whole")!]) {
      delete n.selfFields;
      delete n.oldSelfFields;
    }
    const opt = (a: fc.Arbitrary<unknown>) => fc.option(a, { nil: undefined });
    const specArb = fc.record({
      min: opt(fc.integer({ min: -3, max: 3 })),
      max: opt(fc.integer({ min: -3, max: 3 })),
      name: opt(fc.constantFrom("xa", "yb", "")),
      mode: opt(fc.constantFrom("on", "off")),
      "dash-ed": opt(fc.integer({ min: 6, max: 8 })),
      big: opt(fc.array(fc.integer(), { maxLength: 5 })),
    });
    const objArb = fc.record({
      spec: specArb,
      whole: opt(fc.dictionary(fc.constantFrom("a", "b", "c"), fc.integer({ min: -1, max: 1 }))),
    });
    // Views made from the fields read, but looked up member by member (no picks).
    const unpicked = compileSchemaRules(schema).root!;
    for (const n of [unpicked.properties!.get("spec")!, unpicked.properties!.get("whole")!]) {
      delete n.selfPicks;
      delete n.oldSelfPicks;
    }
    fc.assert(
      fc.property(objArb, fc.option(objArb, { nil: undefined }), (obj, old) => {
        const expected = validateRules(obj, old, full);
        expect(validateRules(obj, old, compiled.root)).toEqual(expected);
        expect(validateRules(obj, old, unpicked)).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });
});

describe("crdToDefinition", () => {
  it("serves the CRD's names, versions, subresources, columns and strategy", () => {
    const obj = crd();
    customResourceDefinitions.strategy.default?.(obj);
    const def = crdToDefinition(obj);
    expect(def).toMatchObject({
      group: "example.com",
      custom: true,
      typed: false,
      namespaced: true,
      names: {
        plural: "webapps",
        singular: "webapp",
        kind: "WebApp",
        listKind: "WebAppList",
        shortNames: ["wa"],
        categories: ["all"],
      },
      strategy: { allowUnconditionalUpdate: false, tracksGeneration: true },
    });
    const v = def.versions[0];
    expect(v).toMatchObject({ name: "v1", served: true, storage: true, statusSubresource: true });
    expect(v.scale).toEqual({
      specReplicasPath: ".spec.replicas",
      statusReplicasPath: ".status.readyReplicas",
    });
    expect(v.printerColumns.map((c) => [c.name, c.jsonPath])).toEqual([
      ["Image", ".spec.image"],
      ["Replicas", ".spec.replicas"],
    ]);
    expect(Object.keys(v.schema.properties ?? {})).toEqual(
      expect.arrayContaining(["apiVersion", "kind", "metadata", "spec"]),
    );

    const cr: KubeObject = {
      apiVersion: "example.com/v1",
      kind: "WebApp",
      metadata: { name: "w" },
      spec: { image: "nginx", replicas: 20 },
    };
    def.strategy.default?.(cr);
    expect(cr.spec).toMatchObject({ replicas: 20, maxReplicas: 10, template: { tier: "web" } });
    expect(lines(def.strategy.validate?.(cr, undefined) ?? [])).toEqual([
      'spec: Invalid value: "object": replicas must be at most maxReplicas',
    ]);
  });
});

describe("name acceptance", () => {
  it("accepts fresh names and refuses a clash in the same group, saying which", () => {
    const reg = createBuiltinRegistry();
    const first = crd();
    reg.add(crdToDefinition(first));
    expect(checkNames(reg, first)).toMatchObject({ accepted: true, reason: "NoConflicts" });

    const second = crd({ metadata: { name: "webapplications.example.com" } });
    (second.spec as Record<string, unknown>).names = {
      plural: "webapplications",
      singular: "webapplication",
      kind: "WebApp",
      listKind: "WebApplicationList",
      shortNames: ["wa"],
    };
    expect(checkNames(reg, second)).toEqual({
      accepted: false,
      reason: "KindConflict",
      message: '"WebApp" is already in use',
    });
    (second.spec as { names: Record<string, unknown> }).names.kind = "WebApplication";
    expect(checkNames(reg, second)).toEqual({
      accepted: false,
      reason: "ShortNamesConflict",
      message: '"wa" is already in use',
    });

    const otherGroup = crd({ metadata: { name: "webapps.other.com" } });
    (otherGroup.spec as Record<string, unknown>).group = "other.com";
    expect(checkNames(reg, otherGroup).accepted).toBe(true);
  });
});
