/**
 * The fields of a new object, built in one walk (addedFields), are exactly what
 * comparing the object with an empty one adds, for any object: keyed, set and
 * atomic lists (with duplicate and unidentifiable items), granular and atomic
 * maps, nulls and empty containers, undeclared fields.
 */

import { UNTRACKED_FIELDS } from "@setpoint/api/managedfields";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { addedFields, compareObjects } from "../../packages/api/src/managedfields/compare.ts";
import { createdFieldsV1 } from "../../packages/api/src/managedfields/created.ts";
import { API_VERSION, schema } from "./managedfields-helpers.ts";

const scalar = fc.oneof(
  fc.constantFrom(0, 1, 80, 443),
  fc.constantFrom("a", "b", "TCP"),
  fc.constant(null),
);
const leafy = fc.oneof(scalar, fc.constant({}), fc.constant([]));

const port = fc.record(
  {
    port: fc.oneof(fc.constantFrom(80, 443), fc.constant(null)),
    protocol: fc.constantFrom("TCP", "UDP"),
    name: fc.constantFrom("n1", "n2"),
  },
  { requiredKeys: [] },
);

const container = fc.record(
  {
    name: fc.constantFrom("a", "b", "c"),
    image: fc.oneof(fc.constantFrom("i1", "i2"), fc.constant(null)),
    env: fc.array(
      fc.record(
        { name: fc.constantFrom("E", "F"), value: fc.constantFrom("1", "2") },
        {
          requiredKeys: [],
        },
      ),
      { maxLength: 3 },
    ),
  },
  { requiredKeys: [] },
);

/** Specs that may break every rule the schema states (duplicates, missing keys, wrong shapes). */
const specArb = fc.record(
  {
    replicas: fc.oneof(scalar, fc.constant({ x: 1 })),
    paused: fc.boolean(),
    args: fc.array(fc.constantFrom("p", "q"), { maxLength: 3 }),
    selector: fc.oneof(
      fc.constant({}),
      fc.record({ matchLabels: fc.dictionary(fc.constantFrom("x", "y"), fc.constantFrom("1")) }),
    ),
    hosts: fc.array(fc.oneof(fc.constantFrom("h1", "h2"), fc.constant({ h: 1 })), { maxLength: 3 }),
    ports: fc.array(port, { maxLength: 3 }),
    containers: fc.oneof(fc.array(container, { maxLength: 3 }), fc.constant("not a list")),
    config: fc.dictionary(
      fc.constantFrom("k1", "k2"),
      fc.oneof(leafy, fc.dictionary(fc.constantFrom("x", "y"), leafy, { maxKeys: 2 })),
      { maxKeys: 2 },
    ),
    undeclared: fc.oneof(
      leafy,
      fc.dictionary(fc.constantFrom("u", "v"), leafy, { maxKeys: 2 }),
      fc.array(leafy, { maxLength: 2 }),
    ),
  },
  { requiredKeys: [] },
);

const objectArb = fc
  .record(
    {
      spec: specArb,
      labels: fc.dictionary(fc.constantFrom("l1", "l2"), fc.constantFrom("v1", "v2")),
      finalizers: fc.array(fc.constantFrom("f1", "f2"), { maxLength: 3 }),
    },
    { requiredKeys: [] },
  )
  .map(({ spec, labels, finalizers }) => ({
    apiVersion: API_VERSION,
    kind: "Deployment",
    metadata: {
      name: "x",
      ...(labels !== undefined ? { labels } : {}),
      ...(finalizers !== undefined ? { finalizers } : {}),
    },
    ...(spec !== undefined ? { spec } : {}),
  }));

/** Whether a FieldsV1 and everything in it is frozen. */
function deeplyFrozen(v: unknown): boolean {
  return (
    typeof v !== "object" ||
    v === null ||
    (Object.isFrozen(v) && Object.values(v).every((x) => deeplyFrozen(x)))
  );
}

/** Whether every frozen node of a FieldsV1 holds only frozen nodes (what may be shared is whole). */
function sharedOnlyFrozen(v: unknown): boolean {
  if (typeof v !== "object" || v === null) return true;
  if (Object.isFrozen(v)) return deeplyFrozen(v);
  return Object.values(v).every((x) => sharedOnlyFrozen(x));
}

describe("addedFields", () => {
  it("equals what a comparison with an empty object adds (property)", () => {
    fc.assert(
      fc.property(objectArb, (obj) => {
        const direct = addedFields(obj, schema);
        const compared = compareObjects({}, obj, schema);
        expect(direct.toFieldsV1()).toEqual(compared.added.toFieldsV1());
        expect(direct.equals(compared.added)).toBe(true);
        expect(compared.modified.empty && compared.removed.empty).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it("written directly as FieldsV1, equals the field set's encoding without untracked fields (property)", () => {
    fc.assert(
      fc.property(objectArb, (obj) => {
        const set = compareObjects({}, obj, schema).added.difference(UNTRACKED_FIELDS);
        const direct = createdFieldsV1(obj, schema, UNTRACKED_FIELDS);
        if (set.empty) expect(direct).toBeUndefined();
        else expect(JSON.stringify(direct)).toBe(JSON.stringify(set.toFieldsV1()));
      }),
      { numRuns: 500 },
    );
  });

  it("reuses remembered FieldsV1 only for objects of the same fields, and only frozen (property)", () => {
    const expected = (obj: unknown) => {
      const set = compareObjects({}, obj, schema).added.difference(UNTRACKED_FIELDS);
      return set.empty ? undefined : JSON.stringify(set.toFieldsV1());
    };
    fc.assert(
      fc.property(objectArb, objectArb, (a, b) => {
        // a, then b (which may share some of a's nodes), then a again: each as computed alone.
        const results = [a, b, a, structuredClone(a)].map((obj) => {
          const direct = createdFieldsV1(obj, schema, UNTRACKED_FIELDS);
          expect(direct === undefined ? undefined : JSON.stringify(direct)).toBe(expected(obj));
          return direct;
        });
        for (const r of results) expect(sharedOnlyFrozen(r)).toBe(true);
        if (results[2] === results[3] && results[2] !== undefined) {
          expect(deeplyFrozen(results[2])).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("gives objects with the same fields the same frozen FieldsV1, whatever their values", () => {
    // The ports' key fields (port, protocol) keep their values: they name the items.
    const obj = (name: string, image: string, replicas: number) => ({
      apiVersion: API_VERSION,
      kind: "Deployment",
      metadata: { name, labels: { app: name } },
      spec: {
        replicas,
        ports: [{ name, port: 80, protocol: "TCP" }],
        containers: [{ name: "main", image, env: [{ name: "E", value: image }] }],
      },
    });
    const first = createdFieldsV1(obj("a", "i1", 1), schema, UNTRACKED_FIELDS);
    const second = createdFieldsV1(obj("b", "i2", 3), schema, UNTRACKED_FIELDS);
    expect(second).toBe(first);
    expect(deeplyFrozen(first)).toBe(true);
    // Another label name: metadata differs, the spec's FieldsV1 is still the same object.
    const other = createdFieldsV1(
      { ...obj("c", "i3", 5), metadata: { name: "c", labels: { tier: "c" } } },
      schema,
      UNTRACKED_FIELDS,
    );
    expect(other).not.toBe(first);
    expect(other?.["f:spec"]).toBe(first?.["f:spec"]);
    expect(other?.["f:metadata"]).toEqual({ "f:labels": { ".": {}, "f:tier": {} } });
  });

  it("is what compareObjects answers for a new object", () => {
    const obj = {
      apiVersion: API_VERSION,
      kind: "Deployment",
      metadata: { name: "x", labels: { a: "1" } },
      spec: { replicas: 1, ports: [{ port: 80, protocol: "TCP" }] },
    };
    expect(compareObjects(undefined, obj, schema).added.toFieldsV1()).toEqual(
      compareObjects({}, obj, schema).added.toFieldsV1(),
    );
    expect(addedFields(obj, schema).toFieldsV1()).toMatchObject({
      "f:spec": { ".": {}, "f:replicas": {}, "f:ports": { ".": {} } },
    });
  });
});
