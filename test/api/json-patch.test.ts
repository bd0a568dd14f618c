import { deepClone, deepFreeze, StatusError } from "@setpoint/api";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  applyJsonPatch,
  createJsonPatch,
  formatJsonPointer,
  MAX_JSON_PATCH_COPY_BYTES,
  MAX_JSON_PATCH_OPERATIONS,
  parseJsonPointer,
} from "../../packages/api/src/patch/json.ts";

function failure(fn: () => unknown): StatusError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(StatusError);
    return e as StatusError;
  }
  throw new Error("expected a StatusError");
}

describe("applyJsonPatch: RFC 6902 operations", () => {
  it("adds object members and array elements", () => {
    expect(applyJsonPatch({ foo: "bar" }, [{ op: "add", path: "/baz", value: "qux" }])).toEqual({
      foo: "bar",
      baz: "qux",
    });
    expect(
      applyJsonPatch({ foo: ["bar", "baz"] }, [{ op: "add", path: "/foo/1", value: "qux" }]),
    ).toEqual({ foo: ["bar", "qux", "baz"] });
    expect(applyJsonPatch({ foo: [1] }, [{ op: "add", path: "/foo/-", value: 2 }])).toEqual({
      foo: [1, 2],
    });
    expect(applyJsonPatch({ foo: [1] }, [{ op: "add", path: "/foo/1", value: 2 }])).toEqual({
      foo: [1, 2],
    });
    // add replaces an existing member
    expect(applyJsonPatch({ a: 1 }, [{ op: "add", path: "/a", value: [2] }])).toEqual({ a: [2] });
    expect(
      applyJsonPatch({ foo: "bar" }, [{ op: "add", path: "/child", value: { grandchild: {} } }]),
    ).toEqual({ foo: "bar", child: { grandchild: {} } });
  });

  it("removes, replaces, moves and copies", () => {
    expect(applyJsonPatch({ a: 1, b: 2 }, [{ op: "remove", path: "/a" }])).toEqual({ b: 2 });
    expect(applyJsonPatch({ a: [1, 2, 3] }, [{ op: "remove", path: "/a/1" }])).toEqual({
      a: [1, 3],
    });
    expect(applyJsonPatch({ a: 1 }, [{ op: "replace", path: "/a", value: { x: 1 } }])).toEqual({
      a: { x: 1 },
    });
    expect(
      applyJsonPatch({ foo: { bar: "baz", waldo: "fred" }, qux: { corge: "grault" } }, [
        { op: "move", from: "/foo/waldo", path: "/qux/thud" },
      ]),
    ).toEqual({ foo: { bar: "baz" }, qux: { corge: "grault", thud: "fred" } });
    expect(
      applyJsonPatch({ foo: ["all", "grass", "cows", "eat"] }, [
        { op: "move", from: "/foo/1", path: "/foo/3" },
      ]),
    ).toEqual({ foo: ["all", "cows", "eat", "grass"] });
    const copied = applyJsonPatch({ a: { b: [1] } }, [{ op: "copy", from: "/a", path: "/c" }]) as {
      a: unknown;
      c: unknown;
    };
    expect(copied).toEqual({ a: { b: [1] }, c: { b: [1] } });
    expect(copied.c).not.toBe(copied.a);
  });

  it("tests values", () => {
    const doc = { baz: "qux", foo: ["a", 2, "c"], n: { x: 1, y: [1] } };
    expect(
      applyJsonPatch(doc, [
        { op: "test", path: "/baz", value: "qux" },
        { op: "test", path: "/foo/1", value: 2 },
        { op: "test", path: "/n", value: { y: [1], x: 1 } },
        { op: "test", path: "", value: doc },
      ]),
    ).toEqual(doc);
  });

  it("escapes ~ and / in pointers", () => {
    const doc = { "a/b": 1, "m~n": 2 };
    expect(applyJsonPatch(doc, [{ op: "test", path: "/a~1b", value: 1 }])).toEqual(doc);
    expect(applyJsonPatch(doc, [{ op: "replace", path: "/m~0n", value: 3 }])).toEqual({
      "a/b": 1,
      "m~n": 3,
    });
    expect(parseJsonPointer("/a~1b/m~0n/~01")).toEqual(["a/b", "m~n", "~1"]);
    expect(formatJsonPointer(["a/b", "m~n", 0])).toBe("/a~1b/m~0n/0");
    expect(parseJsonPointer("")).toEqual([]);
    expect(parseJsonPointer("/")).toEqual([""]);
  });

  it("addresses labels with slashes, as kubectl patches do", () => {
    const obj = { metadata: { labels: { "app.kubernetes.io/name": "web" } } };
    expect(
      applyJsonPatch(obj, [
        { op: "replace", path: "/metadata/labels/app.kubernetes.io~1name", value: "db" },
      ]),
    ).toEqual({ metadata: { labels: { "app.kubernetes.io/name": "db" } } });
  });

  it("works on the whole document", () => {
    expect(applyJsonPatch({ a: 1 }, [{ op: "replace", path: "", value: { b: 2 } }])).toEqual({
      b: 2,
    });
    expect(applyJsonPatch({ a: 1 }, [{ op: "add", path: "", value: [1] }])).toEqual([1]);
  });

  it("counts negative indices from the end, as Kubernetes' library does", () => {
    expect(applyJsonPatch({ a: [1, 2, 3] }, [{ op: "remove", path: "/a/-1" }])).toEqual({
      a: [1, 2],
    });
    expect(applyJsonPatch({ a: [1, 2] }, [{ op: "replace", path: "/a/-2", value: 0 }])).toEqual({
      a: [0, 2],
    });
  });

  it("does not change its inputs", () => {
    const doc = deepFreeze({ a: { b: [1, 2] } });
    const value = deepFreeze({ deep: [1] });
    const ops = deepFreeze([
      { op: "add", path: "/a/b/-", value },
      { op: "remove", path: "/a/b/0" },
    ]);
    const out = applyJsonPatch(doc, ops) as { a: { b: unknown[] } };
    expect(out).toEqual({ a: { b: [2, { deep: [1] }] } });
    expect(out.a.b[1]).not.toBe(value);
    expect(doc).toEqual({ a: { b: [1, 2] } });
  });
});

describe("applyJsonPatch: errors as Kubernetes answers them", () => {
  it("422 with Kubernetes' sentence for a failed test", () => {
    const e = failure(() => applyJsonPatch({ a: 1 }, [{ op: "test", path: "/a", value: 2 }]));
    expect(e.code).toBe(422);
    expect(e.reason).toBe("Invalid");
    expect(e.message).toBe(
      "the server rejected our request due to an error in our request: testing value /a failed: test failed",
    );
    expect(e.status.details?.causes).toEqual([
      {
        reason: "FieldValueInvalid",
        field: "patch",
        message: "testing value /a failed: test failed",
      },
    ]);
  });

  it("422 for paths that do not apply", () => {
    const cases: [unknown, unknown[], string][] = [
      [
        {},
        [{ op: "add", path: "/a/b", value: 1 }],
        'add operation does not apply: doc is missing path: "/a/b": missing value',
      ],
      [
        {},
        [{ op: "remove", path: "/a" }],
        "error in remove for path: '/a': Unable to remove nonexistent key: a: missing value",
      ],
      [
        {},
        [{ op: "remove", path: "/a/b" }],
        'remove operation does not apply: doc is missing path: "/a/b": missing value',
      ],
      [
        {},
        [{ op: "replace", path: "/a", value: 1 }],
        "replace operation does not apply: doc is missing key: /a: missing value",
      ],
      [
        { a: [1] },
        [{ op: "add", path: "/a/5", value: 1 }],
        "error in add for path: '/a/5': Unable to access invalid index: 5: invalid index referenced",
      ],
      [
        { a: [1] },
        [{ op: "add", path: "/a/x", value: 1 }],
        "error in add for path: '/a/x': value was not a proper array index: 'x'",
      ],
      [
        {},
        [{ op: "move", from: "/x", path: "/y" }],
        "move operation does not apply: doc is missing from path: /x: missing value",
      ],
      [
        {},
        [{ op: "copy", from: "/x", path: "/y" }],
        "copy operation does not apply: doc is missing from path: /x: missing value",
      ],
      [
        {},
        [{ op: "test", path: "/x", value: null }],
        "test operation does not apply: is missing path: /x: missing value",
      ],
      [{}, [{ op: "frob", path: "/x" }], "Unexpected kind: frob"],
      [{}, [{ op: "add", value: 1 }], "add operation failed to decode path: missing value"],
      [{}, [{ op: "add", path: "/a" }], "add operation, missing value field: missing value"],
      [
        { a: { b: 1 } },
        [{ op: "move", from: "/a", path: "/a/b/c" }],
        "move operation does not apply: from /a is a prefix of path /a/b/c",
      ],
    ];
    for (const [doc, ops, detail] of cases) {
      const e = failure(() => applyJsonPatch(doc, ops));
      expect(e.code, detail).toBe(422);
      expect(e.status.details?.causes?.[0]?.message).toBe(detail);
    }
  });

  it("400 for documents that are not a list of operations", () => {
    expect(failure(() => applyJsonPatch({}, { op: "add" })).code).toBe(400);
    expect(failure(() => applyJsonPatch({}, [1])).code).toBe(400);
    expect(failure(() => applyJsonPatch({}, null)).code).toBe(400);
  });

  it("413 past the operation limit", () => {
    const ops = Array.from({ length: MAX_JSON_PATCH_OPERATIONS + 1 }, () => ({
      op: "test",
      path: "",
      value: {},
    }));
    const e = failure(() => applyJsonPatch({}, ops));
    expect(e.code).toBe(413);
    expect(e.message).toBe("The allowed maximum operations in a JSON patch is 10000, got 10001");
  });

  it("422 once copies together add more than the copy limit, before the copy that passes it", () => {
    // Each copy of /data into itself doubles it: 28 of them would make 2^28 copies.
    const doc = { data: { a: "x".repeat(50) } };
    const ops = Array.from({ length: 28 }, (_, i) => ({
      op: "copy",
      from: "/data",
      path: `/data/c${i}`,
    }));
    const e = failure(() => applyJsonPatch(doc, ops));
    expect(e.code).toBe(422);
    expect(e.status.reason).toBe("Invalid");
    const detail = e.status.details?.causes?.[0]?.message ?? "";
    const m =
      /^Unable to complete the copy, the accumulated size increase of copy is (\d+), exceeding the limit (\d+)$/.exec(
        detail,
      );
    expect(m).not.toBeNull();
    expect(Number(m?.[2])).toBe(MAX_JSON_PATCH_COPY_BYTES);
    expect(Number(m?.[1])).toBeGreaterThan(MAX_JSON_PATCH_COPY_BYTES);
    // The size charged is the JSON of what is copied, counted up to the copy that passes the limit.
    let data: Record<string, unknown> = { a: "x".repeat(50) };
    let used = 0;
    for (let i = 0; used <= MAX_JSON_PATCH_COPY_BYTES; i++) {
      const json = JSON.stringify(data);
      used += Buffer.byteLength(json);
      data = { ...data, [`c${i}`]: JSON.parse(json) };
    }
    expect(Number(m?.[1])).toBe(used);
    expect(doc).toEqual({ data: { a: "x".repeat(50) } });
  });

  it("charges every copy, scalars too, against a given copy limit", () => {
    const doc = { s: "abcd", n: 12345 };
    // "abcd" is 6 bytes of JSON, 12345 five.
    const ops = [
      { op: "copy", from: "/s", path: "/t" },
      { op: "copy", from: "/n", path: "/m" },
    ];
    expect(applyJsonPatch(doc, ops, { maxCopyBytes: 11 })).toEqual({ ...doc, t: "abcd", m: 12345 });
    const e = failure(() => applyJsonPatch(doc, ops, { maxCopyBytes: 10 }));
    expect(e.status.details?.causes?.[0]?.message).toBe(
      "Unable to complete the copy, the accumulated size increase of copy is 11, exceeding the limit 10",
    );
  });

  it("copies share nothing with their source", () => {
    const out = applyJsonPatch({ a: { b: [1] } }, [
      { op: "copy", from: "/a", path: "/c" },
      { op: "add", path: "/c/b/-", value: 2 },
    ]) as Record<string, { b: number[] }>;
    expect(out.a.b).toEqual([1]);
    expect(out.c.b).toEqual([1, 2]);
  });

  it("applies all or nothing", () => {
    const doc = { a: 1 };
    failure(() =>
      applyJsonPatch(doc, [
        { op: "replace", path: "/a", value: 2 },
        { op: "test", path: "/a", value: 3 },
      ]),
    );
    expect(doc).toEqual({ a: 1 });
  });
});

// --- properties -------------------------------------------------------------

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const doc = fc.jsonValue({ maxDepth: 4 }) as fc.Arbitrary<Json>;

/** Every pointer to an existing value inside `v` (not the root). */
function pointers(v: Json, prefix: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [];
  if (Array.isArray(v)) {
    v.forEach((x, i) => {
      out.push([...prefix, i]);
      out.push(...pointers(x, [...prefix, i]));
    });
  } else if (v && typeof v === "object") {
    for (const [k, x] of Object.entries(v)) {
      out.push([...prefix, k]);
      out.push(...pointers(x, [...prefix, k]));
    }
  }
  return out;
}

function at(v: Json, path: (string | number)[]): Json {
  let cur: Json = v;
  for (const t of path) cur = (cur as Record<string, Json>)[t as string];
  return cur;
}

const docWithPath = doc
  .filter((d) => pointers(d).length > 0)
  .chain((d) => fc.record({ d: fc.constant(d), path: fc.constantFrom(...pointers(d)) }));

describe("JSON patch properties", () => {
  it("replace then replace back restores the document", () => {
    fc.assert(
      fc.property(docWithPath, fc.jsonValue({ maxDepth: 2 }), ({ d, path }, v) => {
        const p = formatJsonPointer(path);
        const old = at(d, path);
        const changed = applyJsonPatch(d, [{ op: "replace", path: p, value: v }]);
        expect(applyJsonPatch(changed, [{ op: "test", path: p, value: v }])).toEqual(changed);
        expect(applyJsonPatch(changed, [{ op: "replace", path: p, value: old }])).toEqual(d);
      }),
      { numRuns: 500 },
    );
  });

  it("remove then add back restores the document", () => {
    fc.assert(
      fc.property(docWithPath, ({ d, path }) => {
        const p = formatJsonPointer(path);
        const old = at(d, path);
        const removed = applyJsonPatch(d, [{ op: "remove", path: p }]);
        expect(applyJsonPatch(removed, [{ op: "add", path: p, value: old }])).toEqual(d);
        // And in one patch, with a test in between.
        expect(
          applyJsonPatch(d, [
            { op: "remove", path: p },
            { op: "add", path: p, value: old },
            { op: "test", path: p, value: old },
          ]),
        ).toEqual(d);
      }),
      { numRuns: 500 },
    );
  });

  it("copy then remove the copy restores the document", () => {
    fc.assert(
      fc.property(docWithPath, ({ d, path }) => {
        const container = d as Record<string, Json>;
        if (Array.isArray(d) || typeof d !== "object" || d === null) return;
        const fresh = "fresh~/key";
        if (Object.hasOwn(container, fresh)) return;
        const to = formatJsonPointer([fresh]);
        const copied = applyJsonPatch(d, [{ op: "copy", from: formatJsonPointer(path), path: to }]);
        expect((copied as Record<string, Json>)[fresh]).toEqual(at(d, path));
        expect(applyJsonPatch(copied, [{ op: "remove", path: to }])).toEqual(d);
      }),
      { numRuns: 300 },
    );
  });

  it("move there and back restores the document", () => {
    fc.assert(
      fc.property(docWithPath, ({ d, path }) => {
        if (Array.isArray(d) || typeof d !== "object" || d === null) return;
        if (Object.hasOwn(d, "moved")) return;
        const from = formatJsonPointer(path);
        const moved = applyJsonPatch(d, [{ op: "move", from, path: "/moved" }]);
        // Moving a member of an object back to where it was restores it; array
        // indices shift, so compare only when the path's parent is an object.
        const parent = path.length > 1 ? at(d, path.slice(0, -1)) : d;
        if (Array.isArray(parent)) return;
        expect(applyJsonPatch(moved, [{ op: "move", from: "/moved", path: from }])).toEqual(d);
      }),
      { numRuns: 300 },
    );
  });

  it("fails only with StatusErrors on arbitrary operations, never changing the input", () => {
    const op = fc.record(
      {
        op: fc.constantFrom("add", "remove", "replace", "move", "copy", "test", "bogus"),
        path: fc.constantFrom("", "/a", "/a/0", "/a/-", "/b/c", "/x~1y", "/a/9"),
        from: fc.constantFrom("/a", "/a/0", "/b", ""),
        value: fc.jsonValue({ maxDepth: 2 }),
      },
      { requiredKeys: ["op"] },
    );
    fc.assert(
      fc.property(doc, fc.array(op, { maxLength: 5 }), (d, ops) => {
        const before = deepClone(d);
        try {
          applyJsonPatch(d, ops);
        } catch (e) {
          expect(e).toBeInstanceOf(StatusError);
          expect([400, 422]).toContain((e as StatusError).code);
        }
        expect(d).toEqual(before);
      }),
      { numRuns: 500 },
    );
  });
});

describe("JSON patch copies (shared until written)", () => {
  const op = fc.record(
    {
      op: fc.constantFrom("add", "remove", "replace", "move", "copy", "copy", "test"),
      path: fc.constantFrom("/a", "/a/0", "/a/-", "/b", "/b/c", "/b/c/0", "/a/0/c", "/d"),
      from: fc.constantFrom("/a", "/a/0", "/b", "/b/c", ""),
      value: fc.jsonValue({ maxDepth: 2 }),
    },
    { requiredKeys: ["op", "path"] },
  );
  const start = fc.record({
    a: fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 3 }),
    b: fc.dictionary(fc.constantFrom("c", "e"), fc.jsonValue({ maxDepth: 2 })),
  });
  const outcome = (f: () => unknown) => {
    try {
      return { ok: f() };
    } catch (e) {
      return { error: (e as StatusError).message };
    }
  };

  it("a patch gives what its operations give applied one at a time", () => {
    fc.assert(
      fc.property(start, fc.array(op, { maxLength: 8 }), (d, ops) => {
        const whole = outcome(() => applyJsonPatch(d, ops));
        const oneByOne = outcome(() =>
          ops.reduce((acc, o) => applyJsonPatch(acc, [o]), d as unknown),
        );
        expect(whole).toEqual(oneByOne);
      }),
      { numRuns: 1000 },
    );
  });

  it("a result shares nothing between the places a copy put a value", () => {
    const out = applyJsonPatch({ a: { b: [1] } }, [
      { op: "copy", from: "/a", path: "/c" },
      { op: "copy", from: "/a", path: "/a/self" },
      { op: "add", path: "/c/b/-", value: 2 },
    ]) as { a: { b: number[]; self: { b: number[] } }; c: { b: number[] } };
    expect(out).toEqual({ a: { b: [1], self: { b: [1] } }, c: { b: [1, 2] } });
    out.a.b.push(3);
    expect(out.a.self.b).toEqual([1]);
    expect(out.c.b).toEqual([1, 2]);
  });

  it("charges each copy the bytes of its value's JSON", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 3 }), (v) => {
        const size = Buffer.byteLength(JSON.stringify(v));
        const ops = [{ op: "copy", from: "/v", path: "/w" }];
        expect(() => applyJsonPatch({ v }, ops, { maxCopyBytes: size })).not.toThrow();
        expect(() => applyJsonPatch({ v }, ops, { maxCopyBytes: size - 1 })).toThrow(
          `the accumulated size increase of copy is ${size}, exceeding the limit ${size - 1}`,
        );
      }),
      { numRuns: 500 },
    );
  });
});

describe("createJsonPatch", () => {
  it("gives a patch that turns the original into the modified value", () => {
    fc.assert(
      fc.property(doc, doc, (a, b) => {
        const patched = applyJsonPatch(a, createJsonPatch(a, b));
        expect(patched).toEqual(b);
      }),
    );
  });

  it("names only what changed, by path", () => {
    const ops = createJsonPatch(
      { metadata: { name: "x", labels: { a: "1", "b/c": "2" } }, data: [1, 2] },
      { metadata: { name: "x", labels: { a: "1", d: "4" } }, data: [1, 3] },
    );
    expect(ops).toEqual([
      { op: "remove", path: "/metadata/labels/b~1c" },
      { op: "add", path: "/metadata/labels/d", value: "4" },
      { op: "replace", path: "/data/1", value: 3 },
    ]);
  });
});
