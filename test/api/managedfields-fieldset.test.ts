import {
  canonicalPathKey,
  comparePathKeys,
  FieldSet,
  FieldsV1Error,
  fieldKey,
  keyKey,
  PathElementError,
  parsePathElement,
  pathString,
  valueKey,
} from "@setpoint/api/managedfields";
import fc from "fast-check";
import { describe, expect, it } from "vitest";

const f = fieldKey;

describe("path elements", () => {
  it("serializes fields, keyed items, set values and indexes as FieldsV1 spells them", () => {
    expect(f("spec")).toBe("f:spec");
    expect(f("app.kubernetes.io/name")).toBe("f:app.kubernetes.io/name");
    expect(
      keyKey([
        ["protocol", "TCP"],
        ["port", 80],
      ]),
    ).toBe('k:{"port":80,"protocol":"TCP"}');
    expect(valueKey("example.com/finalizer")).toBe('v:"example.com/finalizer"');
    expect(valueKey(3)).toBe("v:3");
    expect(valueKey(true)).toBe("v:true");
  });

  it("escapes HTML-sensitive characters in JSON the way Go does", () => {
    expect(valueKey("a<b>&c")).toBe('v:"a\\u003cb\\u003e\\u0026c"');
    expect(keyKey([["name", "<x>"]])).toBe('k:{"name":"\\u003cx\\u003e"}');
  });

  it("parses and canonicalizes serialized elements", () => {
    expect(parsePathElement("f:a:b")).toEqual({ kind: "field", name: "a:b" });
    expect(parsePathElement('k:{"b":1,"a":"x"}')).toEqual({
      kind: "key",
      fields: [
        ["a", "x"],
        ["b", 1],
      ],
    });
    expect(parsePathElement('v:{"x":[1]}')).toEqual({ kind: "value", value: { x: [1] } });
    expect(parsePathElement("i:-2")).toEqual({ kind: "index", index: -2 });
    expect(parsePathElement("z:anything")).toBeUndefined();
    expect(canonicalPathKey('k:{"protocol":"TCP","port":80}')).toBe(
      'k:{"port":80,"protocol":"TCP"}',
    );
    expect(canonicalPathKey('v:"a\\u003cb"')).toBe('v:"a\\u003cb"');
    expect(canonicalPathKey('v:"a<b"')).toBe('v:"a\\u003cb"');
  });

  it("rejects malformed elements", () => {
    expect(() => parsePathElement("f")).toThrow(PathElementError);
    expect(() => parsePathElement("fx")).toThrow(/missing colon/);
    expect(() => parsePathElement("k:{")).toThrow(PathElementError);
    expect(() => parsePathElement("k:[1]")).toThrow(/not an object/);
    expect(() => parsePathElement('v:"a" 1')).toThrow(PathElementError);
    expect(() => parsePathElement("i:1.5")).toThrow(/invalid index/);
  });

  it("orders fields, then keys, then values, then indexes", () => {
    const keys = ["i:0", 'v:"a"', 'k:{"name":"b"}', "f:b", 'k:{"name":"a"}', "f:B", "v:2", "f:a"];
    expect([...keys].sort(comparePathKeys)).toEqual([
      "f:B",
      "f:a",
      "f:b",
      'k:{"name":"a"}',
      'k:{"name":"b"}',
      "v:2",
      'v:"a"',
      "i:0",
    ]);
  });

  it("orders values as structured-merge-diff does: numbers, strings, booleans, lists, maps, null", () => {
    const vals = [null, { a: 1 }, [1], true, "s", 10, 2];
    const sorted = vals.map(valueKey).sort(comparePathKeys);
    expect(sorted).toEqual(["v:2", "v:10", 'v:"s"', "v:true", "v:[1]", 'v:{"a":1}', "v:null"]);
  });

  it("orders strings by code point (UTF-8 byte order), not UTF-16 unit", () => {
    const astral = "f:\u{1F600}";
    const highBmp = "f:\uFF21";
    expect(comparePathKeys(highBmp, astral)).toBe(-1);
    expect(comparePathKeys(astral, highBmp)).toBe(1);
  });

  it("prints paths as conflict messages do", () => {
    expect(pathString([f("spec"), f("replicas")])).toBe(".spec.replicas");
    expect(
      pathString([
        f("spec"),
        f("ports"),
        keyKey([
          ["port", 80],
          ["protocol", "TCP"],
        ]),
        f("name"),
      ]),
    ).toBe('.spec.ports[port=80,protocol="TCP"].name');
    expect(pathString([f("metadata"), f("finalizers"), valueKey("x/y")])).toBe(
      '.metadata.finalizers[="x/y"]',
    );
    expect(pathString([f("a"), "i:3"])).toBe(".a[3]");
    // values are quoted as Go's %q quotes them
    expect(pathString([f("a"), keyKey([["name", 'x"y\n\u0001\\u0001']])])).toBe(
      '.a[name="x\\"y\\n\\x01\\\\u0001"]',
    );
  });
});

describe("FieldSet and FieldsV1", () => {
  const portKey = keyKey([
    ["port", 80],
    ["protocol", "TCP"],
  ]);

  it("encodes exactly as Kubernetes writes FieldsV1, with the . marker for owned nodes", () => {
    const s = FieldSet.of(
      [f("metadata"), f("labels"), f("app")],
      [f("spec"), f("ports"), portKey],
      [f("spec"), f("ports"), portKey, f("port")],
    );
    expect(JSON.stringify(s.toFieldsV1())).toBe(
      '{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:ports":{"k:{\\"port\\":80,\\"protocol\\":\\"TCP\\"}":{".":{},"f:port":{}}}}}',
    );
  });

  it("decodes and re-encodes a Kubernetes-written FieldsV1 byte for byte", () => {
    const written =
      '{"f:metadata":{"f:annotations":{".":{},"f:deployment.kubernetes.io/revision":{}},"f:finalizers":{".":{},"v:\\"example.com/f\\"":{}},"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:progressDeadlineSeconds":{},"f:replicas":{},"f:selector":{},"f:strategy":{"f:rollingUpdate":{".":{},"f:maxSurge":{},"f:maxUnavailable":{}},"f:type":{}},"f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\\"name\\":\\"nginx\\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:ports":{".":{},"k:{\\"containerPort\\":80,\\"protocol\\":\\"TCP\\"}":{".":{},"f:containerPort":{},"f:protocol":{}}}}}}}}}';
    const s = FieldSet.fromFieldsV1(JSON.parse(written));
    expect(JSON.stringify(s.toFieldsV1())).toBe(written);
    expect(s.has([f("spec"), f("selector")])).toBe(true);
    expect(s.has([f("spec"), f("strategy"), f("rollingUpdate")])).toBe(true);
    expect(s.has([f("spec"), f("strategy")])).toBe(false);
    expect(s.size).toBe(23);
  });

  it("sorts and canonicalizes what a client wrote in another order", () => {
    const s = FieldSet.fromFieldsV1({
      "f:spec": { "f:z": {}, 'k:{"protocol":"TCP","port":80}': { "f:a": {}, ".": {} }, "f:a": {} },
    });
    expect(JSON.stringify(s.toFieldsV1())).toBe(
      '{"f:spec":{"f:a":{},"f:z":{},"k:{\\"port\\":80,\\"protocol\\":\\"TCP\\"}":{".":{},"f:a":{}}}}',
    );
  });

  it("ignores unknown element types and rejects malformed documents", () => {
    const s = FieldSet.fromFieldsV1({ "f:a": {}, "x:future": { "f:b": {} } });
    expect(s.paths()).toEqual([[f("a")]]);
    expect(() => FieldSet.fromFieldsV1({ "k:{": {} })).toThrow(FieldsV1Error);
    expect(() => FieldSet.fromFieldsV1({ "f:a": 1 })).toThrow(FieldsV1Error);
    expect(() => FieldSet.fromFieldsV1([])).toThrow(FieldsV1Error);
  });

  it("treats a node with only a . marker or nothing below it as a member", () => {
    const s = FieldSet.fromFieldsV1({ "f:a": { ".": {} }, "f:b": {} });
    expect(s.has([f("a")])).toBe(true);
    expect(s.has([f("b")])).toBe(true);
    expect(JSON.stringify(s.toFieldsV1())).toBe('{"f:a":{},"f:b":{}}');
  });

  it("has set operations with structured-merge-diff's meaning", () => {
    const a = FieldSet.of([f("x")], [f("x"), f("y")], [f("z")]);
    const b = FieldSet.of([f("x")], [f("w")]);
    expect(a.union(b).paths()).toEqual([[f("w")], [f("x")], [f("x"), f("y")], [f("z")]]);
    expect(a.intersection(b).paths()).toEqual([[f("x")]]);
    // difference removes members only; recursiveDifference also what lies below them
    expect(a.difference(b).paths()).toEqual([[f("x"), f("y")], [f("z")]]);
    expect(a.recursiveDifference(b).paths()).toEqual([[f("z")]]);
    expect(a.difference(a).empty).toBe(true);
    expect(a.equals(a.clone())).toBe(true);
    expect(a.equals(b)).toBe(false);
    // results do not share state with their inputs
    const u = a.union(b);
    u.insert([f("x"), f("new")]);
    expect(a.has([f("x"), f("new")])).toBe(false);
  });

  it("never tracks the empty path", () => {
    const s = new FieldSet();
    s.insert([]);
    expect(s.empty).toBe(true);
    expect(s.toFieldsV1()).toEqual({});
  });

  const keyArb = fc.oneof(
    fc.string({ maxLength: 6 }).map(f),
    fc
      .record({ name: fc.string({ maxLength: 4 }), port: fc.integer({ min: 0, max: 99 }) })
      .map((k) =>
        keyKey([
          ["name", k.name],
          ["port", k.port],
        ]),
      ),
    fc
      .oneof(fc.string({ maxLength: 4 }), fc.integer(), fc.boolean(), fc.constant(null))
      .map(valueKey),
    fc.nat(20).map((i) => `i:${i}`),
  );
  const setArb = fc
    .array(fc.array(keyArb, { minLength: 1, maxLength: 4 }), { maxLength: 25 })
    .map((paths) => FieldSet.of(...paths));

  it("round-trips through FieldsV1 (property)", () => {
    fc.assert(
      fc.property(setArb, (s) => {
        const text = JSON.stringify(s.toFieldsV1());
        const back = FieldSet.fromFieldsV1(JSON.parse(text));
        expect(back.equals(s)).toBe(true);
        expect(JSON.stringify(back.toFieldsV1())).toBe(text);
      }),
    );
  });

  it("encodes the same whatever order the document's keys came in (property)", () => {
    fc.assert(
      fc.property(setArb, fc.integer(), (s, seed) => {
        const shuffle = (o: Record<string, unknown>): Record<string, unknown> => {
          const keys = Object.keys(o);
          let r = seed;
          for (let i = keys.length - 1; i > 0; i--) {
            r = (r * 1103515245 + 12345) & 0x7fffffff;
            const j = r % (i + 1);
            [keys[i], keys[j]] = [keys[j], keys[i]];
          }
          const out: Record<string, unknown> = {};
          for (const k of keys) out[k] = shuffle(o[k] as Record<string, unknown>);
          return out;
        };
        const shuffled = shuffle(s.toFieldsV1());
        expect(JSON.stringify(FieldSet.fromFieldsV1(shuffled).toFieldsV1())).toBe(
          JSON.stringify(s.toFieldsV1()),
        );
      }),
    );
  });

  it("union, intersection and difference agree with their path-set definitions (property)", () => {
    fc.assert(
      fc.property(setArb, setArb, (a, b) => {
        const key = (p: string[]) => JSON.stringify(p);
        const pa = new Set(a.paths().map(key));
        const pb = new Set(b.paths().map(key));
        expect(new Set(a.union(b).paths().map(key))).toEqual(new Set([...pa, ...pb]));
        expect(new Set(a.intersection(b).paths().map(key))).toEqual(
          new Set([...pa].filter((p) => pb.has(p))),
        );
        expect(new Set(a.difference(b).paths().map(key))).toEqual(
          new Set([...pa].filter((p) => !pb.has(p))),
        );
      }),
    );
  });
});
