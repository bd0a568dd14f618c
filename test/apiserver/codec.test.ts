import type { KubeObject } from "@setpoint/api";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  decodeStored,
  encodeObject,
  MIN_SPLICED_FIELDS_JSON,
  metadataText,
  storedWithRevision,
} from "../../src/apiserver/wire/index.ts";

/** Objects with metadata (with or without a resourceVersion), in any key order. */
const objects = fc
  .tuple(
    fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 })),
    fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 })),
    fc.option(fc.string(), { nil: undefined }),
    fc.option(fc.constantFrom("v1", "example.com/v1"), { nil: undefined }),
    fc.option(fc.constantFrom("ConfigMap", "Widget"), { nil: undefined }),
    fc.boolean(),
  )
  .map(([meta, rest, rv, apiVersion, kind, typeFirst]) => {
    const { apiVersion: _a, kind: _k, metadata: _m, ...others } = rest;
    const metadata: Record<string, unknown> = { ...meta };
    delete metadata.resourceVersion;
    if (rv !== undefined) metadata.resourceVersion = rv;
    const typeMeta: Record<string, unknown> = {};
    if (apiVersion !== undefined) typeMeta.apiVersion = apiVersion;
    if (kind !== undefined) typeMeta.kind = kind;
    const obj = typeFirst
      ? { ...typeMeta, metadata, ...others }
      : { ...others, metadata, ...typeMeta };
    return obj as unknown as KubeObject;
  });

describe("encodeObject", () => {
  it("stores apiVersion, kind and metadata first, without a resourceVersion, and adds one exactly", () => {
    fc.assert(
      fc.property(objects, fc.nat(), (obj, revision) => {
        const { resourceVersion: _rv, ...metadata } = obj.metadata;
        // As JSON has it (-0 is 0).
        const expected = JSON.parse(JSON.stringify({ ...obj, metadata }));
        const encoded = encodeObject(obj);
        expect(JSON.parse(encoded.stored)).toEqual(expected);
        let head = "{";
        if (obj.apiVersion !== undefined) head += `"apiVersion":${JSON.stringify(obj.apiVersion)},`;
        if (obj.kind !== undefined) head += `"kind":${JSON.stringify(obj.kind)},`;
        expect(encoded.stored.startsWith(`${head}"metadata":`)).toBe(true);
        const json = encoded.withRevision(revision);
        expect(JSON.parse(json)).toEqual({
          ...expected,
          metadata: { ...expected.metadata, resourceVersion: String(revision) },
        });
        expect(encoded.withRevision(revision)).toBe(json);
      }),
      { numRuns: 500 },
    );
  });

  it("encodes an object without metadata fields", () => {
    const obj = { apiVersion: "v1", kind: "ConfigMap", metadata: {} } as KubeObject;
    const encoded = encodeObject(obj);
    expect(encoded.stored).toBe('{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}');
    expect(encoded.withRevision(7)).toBe(
      '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"resourceVersion":"7"}}',
    );
  });
});

/** JSON not in the layout the server writes (apiVersion, kind, metadata first, whole). */
const OTHER_LAYOUTS = [
  '{"spec":{},"metadata":{}}',
  '{"apiVersion":1,"metadata":{}}',
  '{"apiVersion":"v1","metadata":[]}',
  '{"apiVersion":"v1","metadata":{"name":"x"',
  '{"apiVersion":"v1"}',
  "",
];

describe("storedWithRevision", () => {
  it("gives what decoding the stored JSON gives, for anything encodeObject stores (property)", () => {
    fc.assert(
      fc.property(objects, fc.nat(), (obj, revision) => {
        const stored = encodeObject(obj).stored;
        const json = storedWithRevision(stored, revision);
        expect(json).toBeDefined();
        expect(JSON.parse(json as string)).toEqual(
          decodeStored({ value: stored, modRevision: revision }),
        );
      }),
      { numRuns: 500 },
    );
  });

  it("declines JSON of another layout, which the caller decodes instead", () => {
    for (const stored of [
      '{"metadata":{"resourceVersion":"3"}}',
      ...OTHER_LAYOUTS,
      '["metadata"]',
    ]) {
      expect(storedWithRevision(stored, 5), stored).toBeUndefined();
    }
    // A quote or brace inside a string does not end anything.
    expect(storedWithRevision('{"kind":"a\\"b}","metadata":{"name":"}{\\""},"x":1}', 5)).toBe(
      '{"kind":"a\\"b}","metadata":{"name":"}{\\"","resourceVersion":"5"},"x":1}',
    );
  });
});

describe("metadataText", () => {
  it("is the metadata's JSON, as serializing the decoded metadata gives it (property)", () => {
    fc.assert(
      fc.property(objects, fc.nat(), (obj, revision) => {
        const json = encodeObject(obj).withRevision(revision);
        const decoded = decodeStored({ value: encodeObject(obj).stored, modRevision: revision });
        expect(metadataText(json)).toBe(JSON.stringify(decoded.metadata));
      }),
      { numRuns: 500 },
    );
  });

  it("declines JSON of another layout", () => {
    for (const json of OTHER_LAYOUTS) {
      expect(metadataText(json), json).toBeUndefined();
    }
    expect(
      metadataText('{"kind":"a\\"b}","metadata":{"name":"}{\\"","resourceVersion":"5"},"x":1}'),
    ).toBe('{"name":"}{\\"","resourceVersion":"5"}');
  });
});

/** The stored JSON as encodeObject wrote it with one JSON.stringify of the metadata. */
function storedByStringify(obj: KubeObject): string {
  const { resourceVersion: _rv, ...metadata } = obj.metadata;
  const { apiVersion, kind, metadata: _m, ...rest } = obj;
  let head = "{";
  if (apiVersion !== undefined) head += `"apiVersion":${JSON.stringify(apiVersion)},`;
  if (kind !== undefined) head += `"kind":${JSON.stringify(kind)},`;
  const restJson = JSON.stringify(rest);
  return `${head}"metadata":${JSON.stringify(metadata)}${restJson === "{}" ? "}" : `,${restJson.slice(1)}`}`;
}

function deepFreeze<T>(v: T): T {
  if (typeof v === "object" && v !== null) {
    for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
    Object.freeze(v);
  }
  return v;
}

/**
 * FieldsV1-like values: deeply frozen (shared; short, or long enough to be
 * spliced), frozen on top only, or not frozen.
 */
const fieldsValues = fc
  .tuple(
    fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 })),
    fc.constantFrom("deep", "deep-long", "top", "none"),
  )
  .map(([v, how]) => {
    if (how === "deep") return deepFreeze(v);
    if (how === "deep-long") {
      return deepFreeze({ ...v, [`f:"${"x".repeat(MIN_SPLICED_FIELDS_JSON)}"`]: { ".": {} } });
    }
    if (how === "top") return Object.freeze({ ...v, child: { "f:x": {} } });
    return v;
  });

/** What a managedFields list may hold: entries as written, and anything else a client sends. */
const entries = fc.oneof(
  fc
    .tuple(
      fc.dictionary(fc.constantFrom("manager", "operation", "time", "x"), fc.jsonValue()),
      fieldsValues,
      fc.boolean(),
    )
    .map(([e, fieldsV1, fieldsFirst]) => (fieldsFirst ? { fieldsV1, ...e } : { ...e, fieldsV1 })),
  fc.jsonValue({ maxDepth: 2 }),
  fc.constant(undefined),
  fc.constant({ toJSON: (key: string) => `entry ${key}` }),
  fc.constant(new Date(0)),
  fc.constant({ fieldsV1: Object.freeze({ toJSON: (key: string) => `fields ${key}` }) }),
);

/** Metadata with managed fields, a resourceVersion or not, and members of every sort, in any order. */
const withManagedFields = fc
  .tuple(
    fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 })),
    fc.array(entries, { maxLength: 4 }),
    fc.option(fc.string(), { nil: undefined }),
    fc.nat(5),
    fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 })),
    fc.boolean(),
  )
  .map(([meta, managedFields, rv, at, rest, withDate]) => {
    const metadata: Record<string, unknown> = {};
    const keys = Object.keys(meta);
    keys.splice(Math.min(at, keys.length), 0, "managedFields");
    for (const k of keys) metadata[k] = k === "managedFields" ? managedFields : meta[k];
    if (rv !== undefined) metadata.resourceVersion = rv;
    if (withDate) metadata.creationTimestamp = new Date(86_400_000);
    return { apiVersion: "v1", kind: "Widget", metadata, ...rest } as unknown as KubeObject;
  });

describe("encodeObject with managed fields", () => {
  it("stores what one JSON.stringify of the metadata gives, byte for byte (property)", () => {
    fc.assert(
      fc.property(withManagedFields, (obj) => {
        const first = encodeObject(obj).stored;
        expect(first).toBe(storedByStringify(obj));
        // Again, now that frozen FieldsV1 are remembered; a changed child of a
        // FieldsV1 frozen on top only shows.
        for (const e of obj.metadata.managedFields ?? []) {
          const child = (e?.fieldsV1 as { child?: Record<string, unknown> } | undefined)?.child;
          if (child !== undefined && !Object.isFrozen(child)) child["f:y"] = {};
        }
        expect(encodeObject(obj).stored).toBe(storedByStringify(obj));
      }),
      { numRuns: 1000 },
    );
  });

  it("writes a FieldsV1 shared between objects as it is in each", () => {
    const fieldsV1 = deepFreeze({
      "f:metadata": { "f:labels": { "f:a": {} } },
      'k:{"x":1}': {},
      [`f:${"y".repeat(MIN_SPLICED_FIELDS_JSON)}`]: {},
    });
    const make = (name: string) =>
      ({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: {
          name,
          managedFields: [{ manager: name, operation: "Update", fieldsType: "FieldsV1", fieldsV1 }],
        },
      }) as KubeObject;
    for (const name of ["a", 'b"c', "a"]) {
      const obj = make(name);
      expect(encodeObject(obj).stored).toBe(storedByStringify(obj));
      expect(JSON.parse(encodeObject(obj).stored).metadata.managedFields[0].fieldsV1).toEqual(
        fieldsV1,
      );
    }
  });
});
