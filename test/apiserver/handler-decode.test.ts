import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { requestUrl } from "../../src/apiserver/endpoints/request.ts";
import { parseRoute } from "../../src/apiserver/endpoints/routes.ts";
import {
  decodeBody,
  decodeBodyAsync,
  decodeJson,
  decodeJsonAsync,
  decodeYaml,
  findDuplicateJsonKeys,
  JSON_INLINE_BYTES,
  negotiateOutput,
  warningHeaders,
} from "../../src/apiserver/wire/index.ts";
import { parseAccept } from "../../src/apiserver/wire/media-type.ts";

const JSON_MEDIA = { type: "application/json", params: {} } as const;

describe("body decoding", () => {
  it("finds duplicate keys with their paths", () => {
    const cases: [string, string[]][] = [
      ['{"a":1,"a":2}', ["a"]],
      ['{"m":{"n":"x","n":"y"},"l":[{"k":1},{"k":1,"k":2}]}', ["m.n", "l[1].k"]],
      ['{"a\\"b":1,"a\\"b":2,"c":"\\\\","c":"x"}', ['a"b', "c"]],
      ['  { "x" : { } , "x" : [ ] }  ', ["x"]],
      ['[{"a":1},{"a":1}]', []],
      ['"str"', []],
      ['{"u":"\\u0041","u":"A"}', ["u"]],
    ];
    for (const [text, want] of cases) expect(findDuplicateJsonKeys(text), text).toEqual(want);
  });

  it("finds duplicates among many keys of one object, and keys that are prefixes of others", () => {
    const keys = Array.from({ length: 40 }, (_, i) => `k${i}`);
    const body = (extra: string[]) =>
      `{"o":{${[...keys, ...extra].map((k) => `"${k}":1`).join(",")}},"k1":{"k1":2,"k10":3}}`;
    expect(findDuplicateJsonKeys(body([]))).toEqual([]);
    expect(findDuplicateJsonKeys(body(["k3"]))).toEqual(["o.k3"]);
    expect(findDuplicateJsonKeys(body(["k39", "k0"]))).toEqual(["o.k39", "o.k0"]);
    expect(findDuplicateJsonKeys('{"ab":1,"a":2,"abc":3,"b":{"a":1},"a":[{"x":1,"x":2}]}')).toEqual(
      ["a", "a[0].x"],
    );
  });

  it("reports no duplicates for any JSON that JSON.stringify wrote", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), (v) => {
        expect(findDuplicateJsonKeys(JSON.stringify(v))).toEqual([]);
      }),
    );
  });

  it("reports a key written twice into any object", () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 }), { minKeys: 1 }),
        fc.jsonValue({ maxDepth: 2 }),
        (obj, extra) => {
          const key = Object.keys(obj)[0];
          const text = `{${JSON.stringify(key)}:${JSON.stringify(extra)},${JSON.stringify(obj).slice(1)}`;
          expect(findDuplicateJsonKeys(text)).toEqual([key]);
        },
      ),
    );
  });

  it("decodes with the duplicates the scan finds, however the text is spaced or escaped", () => {
    const blank = fc.constantFrom("", " ", "\n", "\t ");
    const text = fc
      .tuple(
        fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 }), { minKeys: 1 }),
        fc.boolean(),
        blank,
        fc.jsonValue({ maxDepth: 2 }),
      )
      .map(([obj, repeat, b, extra]) => {
        const key = Object.keys(obj)[0];
        const json = JSON.stringify(obj, null, b === "" ? undefined : b);
        return repeat
          ? `{${JSON.stringify(key)}${b}:${JSON.stringify(extra)},${json.slice(1)}`
          : json;
      });
    fc.assert(
      fc.property(text, (t) => {
        expect(decodeJson(t).duplicates).toEqual(findDuplicateJsonKeys(t));
        // A body (bytes, its quotes counted there) decodes the same as its text.
        const body = decodeBody(Buffer.from(t, "utf8"), JSON_MEDIA, false);
        expect(body.duplicates).toEqual(findDuplicateJsonKeys(t));
        expect(body.value).toEqual(decodeJson(t).value);
      }),
      { numRuns: 500 },
    );
    // A byte that starts a UTF-8 sequence right before a quote: the quote is still one.
    const stray = Buffer.concat([
      Buffer.from('{"a":"'),
      Buffer.from([0xc3]),
      Buffer.from('","a":1}'),
    ]);
    expect(decodeBody(stray, JSON_MEDIA, false)).toEqual({ value: { a: 1 }, duplicates: ["a"] });
    const single = Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xc3]), Buffer.from('"}')]);
    expect(decodeBody(single, JSON_MEDIA, false)).toEqual({
      value: { a: "\ufffd" },
      duplicates: [],
    });
    expect(decodeJson('{"a":"x\\"","a":1}').duplicates).toEqual(["a"]);
    expect(decodeJson('{"a" :1,"a":2}').duplicates).toEqual(["a"]);
    expect(decodeJson('{"__proto__":{"a":1,"a":2},"__proto__":3}').duplicates).toEqual([
      "__proto__.a",
      "__proto__",
    ]);
  });

  it("refuses malformed and hostile bodies with 400", () => {
    for (const text of ["{", "[".repeat(5000) + "]".repeat(5000), '{"a":}']) {
      expect(() => decodeJson(text)).toThrowError(expect.objectContaining({ code: 400 }));
    }
    const bomb = `a: &a [x,x,x,x,x,x,x,x,x]\n${Array.from(
      { length: 12 },
      (_, i) =>
        `b${i}: &b${i} [${Array(9)
          .fill(i === 0 ? "*a" : `*b${i - 1}`)
          .join(",")}]`,
    ).join("\n")}\n`;
    expect(() => decodeYaml(bomb)).toThrowError(expect.objectContaining({ code: 400 }));
    expect(decodeYaml("a: yes\nb: 1\n").value).toEqual({ a: true, b: 1 });
  });
});

describe("large JSON bodies, parsed on the JSON thread", () => {
  const pad = "p".repeat(JSON_INLINE_BYTES);
  /** `text` (a JSON object's) with a member long enough to send it to the thread. */
  const padded = (text: string) => `{"pad":"${pad}",${text.slice(1)}`;
  /** What decoding `text` gives on the event loop: the value and duplicates, or the error. */
  const inline = (text: string) => {
    try {
      return decodeJson(text);
    } catch (err) {
      return err;
    }
  };
  const offThread = (body: string | Uint8Array) => decodeJsonAsync(body).catch((err) => err);

  it("gives the same value and duplicates as decoding on the event loop", async () => {
    const texts = [
      padded('{"a":1,"a":2}'),
      padded('{"m":{"n":"x","n":"y"},"l":[{"k":1},{"k":1,"k":2}]}'),
      padded('{"a\\"b":1,"a\\"b":2,"c":"\\\\","c":"x"}'),
      padded('{"__proto__":{"a":1,"a":2},"__proto__":3,"z":-0,"e":1e400,"u":"\\u00e9"}'),
      padded('{"1":1,"0":[null,true,false,-0.5],"é":{}}'),
      `"${pad}"`,
      `[${JSON.stringify(pad)},1,{"a":2,"a":3}]`,
    ];
    for (const text of texts) {
      expect(text.length).toBeGreaterThan(JSON_INLINE_BYTES);
      const want = decodeJson(text);
      for (const got of [await decodeJsonAsync(text), await decodeJsonAsync(Buffer.from(text))]) {
        expect(got.duplicates, text.slice(-60)).toEqual(want.duplicates);
        expect(got.value).toEqual(want.value);
        // Members in the same order, -0 and "__proto__" kept as they are.
        expect(JSON.stringify(got.value)).toBe(JSON.stringify(want.value));
        if (typeof got.value === "object" && got.value !== null) {
          expect(Object.keys(got.value)).toEqual(Object.keys(want.value as object));
          expect(Object.getPrototypeOf(got.value)).toBe(Object.getPrototypeOf(want.value));
        }
      }
    }
    // A byte that starts a UTF-8 sequence right before a quote: the quote is still one.
    const stray = Buffer.concat([
      Buffer.from(`{"pad":"${pad}","a":"`),
      Buffer.from([0xc3]),
      Buffer.from('","a":1}'),
    ]);
    const media = { type: "application/json", params: {} } as const;
    expect(await decodeBodyAsync(stray, media, false)).toEqual(decodeBody(stray, media, false));
    expect((await decodeBodyAsync(stray, media, false)).duplicates).toEqual(["a"]);
    const bare = { type: "", params: {} } as const;
    expect(await decodeBodyAsync(stray, bare, false)).toEqual(decodeBody(stray, bare, false));
  });

  it("gives the same value and duplicates for any padded JSON object", async () => {
    const text = fc
      .tuple(
        fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 }), { minKeys: 1 }),
        fc.boolean(),
        fc.jsonValue({ maxDepth: 2 }),
      )
      .map(([obj, repeat, extra]) => {
        const key = Object.keys(obj)[0];
        const json = JSON.stringify(obj);
        return padded(
          repeat ? `{${JSON.stringify(key)}:${JSON.stringify(extra)},${json.slice(1)}` : json,
        );
      });
    await fc.assert(
      fc.asyncProperty(text, async (t) => {
        expect(await decodeJsonAsync(Buffer.from(t))).toEqual(decodeJson(t));
      }),
      { numRuns: 50 },
    );
  });

  it("refuses malformed and too deeply nested bodies with the same errors", async () => {
    const texts = [
      `{"pad":"${pad}`,
      padded('{"a":}'),
      padded('{"a":1}x'),
      `${"[".repeat(JSON_INLINE_BYTES)}${"]".repeat(JSON_INLINE_BYTES)}`,
      padded(`{"deep":${"[".repeat(200)}${"]".repeat(200)}}`),
      padded(`{"a":${'{"a":'.repeat(101)}1${"}".repeat(101)}}`),
    ];
    for (const text of texts) {
      const want = inline(text);
      expect(want, text.slice(-40)).toEqual(expect.objectContaining({ code: 400 }));
      for (const got of [await offThread(text), await offThread(Buffer.from(text))]) {
        expect(got).toEqual(expect.objectContaining({ code: 400 }));
        expect((got as Error).message).toBe((want as Error).message);
      }
    }
    // Nested as deep as allowed is decoded.
    const deepest = padded(`{"a":${"[".repeat(99)}${"]".repeat(99)}}`);
    expect(await decodeJsonAsync(deepest)).toEqual(decodeJson(deepest));
  });
});

describe("routes", () => {
  it("parses resource paths, namespace subresources and discovery", () => {
    expect(parseRoute("/api/v1/namespaces/ns/configmaps/x")).toMatchObject({
      kind: "resource",
      group: "",
      version: "v1",
      namespace: "ns",
      plural: "configmaps",
      name: "x",
    });
    expect(parseRoute("/api/v1/namespaces/ns/finalize")).toMatchObject({
      plural: "namespaces",
      name: "ns",
      subresource: "finalize",
    });
    expect(parseRoute("/apis/example.com/v1/watch/namespaces/a/widgets")).toMatchObject({
      group: "example.com",
      namespace: "a",
      plural: "widgets",
      watchPrefix: true,
    });
    expect(parseRoute("/apis/g")).toEqual({ kind: "group", group: "g" });
    expect(parseRoute("/openapi/v3/apis/g/v1")).toEqual({
      kind: "openapiDocument",
      group: "g",
      version: "v1",
    });
    expect(parseRoute("/healthz")).toBeNull();
    expect(parseRoute("/api/v1/a/b/c/d/e")).toEqual({ kind: "notFound" });
    expect(parseRoute("/api/v1/namespaces/%zz/configmaps")).toEqual({ kind: "notFound" });
  });
});

describe("negotiation and warnings", () => {
  it("picks JSON, YAML, Table or PartialObjectMetadata, and refuses protobuf-only", () => {
    expect(negotiateOutput(undefined, false).kind).toBe("object");
    expect(negotiateOutput("application/yaml", false).mediaType).toBe("application/yaml");
    expect(
      negotiateOutput("application/json;as=Table;v=v1;g=meta.k8s.io, application/json", true).kind,
    ).toBe("table");
    expect(
      negotiateOutput("application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", true)
        .kind,
    ).toBe("partial");
    expect(() => negotiateOutput("application/vnd.kubernetes.protobuf", false)).toThrowError(
      expect.objectContaining({ code: 406 }),
    );
    expect(parseAccept("a/b;q=0.5, c/d").map((m) => m.type)).toEqual(["a/b", "c/d"]);
  });

  it("quotes warnings as 299 header values", () => {
    expect(warningHeaders(['unknown field "spec.foo"', "é"])).toEqual([
      '299 - "unknown field \\"spec.foo\\""',
      '299 - "\\u00e9"',
    ]);
  });
});

describe("request targets", () => {
  it("reads path and query as WHATWG URL parsing does", () => {
    const chars = [
      "a",
      "z",
      "0",
      "-",
      "_",
      ".",
      "~",
      "/",
      ":",
      "@",
      "%2F",
      "%",
      " ",
      "\\",
      "#",
      "?",
      "&",
      "=",
      "+",
      "é",
      "..",
    ];
    const target = fc
      .array(fc.constantFrom(...chars), { maxLength: 16 })
      .map((parts) => `/${parts.join("")}`);
    fc.assert(
      fc.property(target, (t) => {
        const got = requestUrl(t);
        let want: URL | null = null;
        try {
          want = new URL(t, "http://localhost");
        } catch {
          want = null;
        }
        // Dot segments are never resolved (see requestUrl): the path stays as sent.
        if (/\/(?:\.|%2e){1,2}(?:[/\\]|$)/i.test(t.split("?")[0])) {
          expect(got?.pathname ?? t.split("?")[0]).toBe(t.split("?")[0]);
          return;
        }
        expect(got === null).toBe(want === null);
        if (got && want) {
          expect(got.pathname).toBe(want.pathname);
          expect([...got.searchParams]).toEqual([...want.searchParams]);
        }
      }),
      { numRuns: 2000 },
    );
    for (const t of [
      "/api/v1/namespaces/x/configmaps?watch=1&labelSelector=a%3Db",
      "/apis/a.b/v1/x",
    ]) {
      expect(requestUrl(t)?.pathname).toBe(new URL(t, "http://localhost").pathname);
    }
  });
});
