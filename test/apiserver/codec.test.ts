import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../src/api/meta.ts";
import { decodeStored, encodeObject, storedWithRevision } from "../../src/apiserver/codec.ts";

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
      '{"spec":{},"metadata":{}}',
      '{"apiVersion":1,"metadata":{}}',
      '{"apiVersion":"v1","metadata":[]}',
      '{"apiVersion":"v1","metadata":{"name":"x"',
      '{"apiVersion":"v1"}',
      '["metadata"]',
      "",
    ]) {
      expect(storedWithRevision(stored, 5), stored).toBeUndefined();
    }
    // A quote or brace inside a string does not end anything.
    expect(storedWithRevision('{"kind":"a\\"b}","metadata":{"name":"}{\\""},"x":1}', 5)).toBe(
      '{"kind":"a\\"b}","metadata":{"name":"}{\\"","resourceVersion":"5"},"x":1}',
    );
  });
});
