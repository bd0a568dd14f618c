import {
  evaluateJsonPath,
  executeJsonPathTemplate,
  formatJsonPathValue,
  JsonPathError,
  parseJsonPath,
} from "@setpoint/api";
import fc from "fast-check";
import { describe, expect, it } from "vitest";

const pod = {
  apiVersion: "v1",
  kind: "Pod",
  metadata: {
    name: "web-1",
    labels: { app: "web", "app.kubernetes.io/name": "shop" },
    annotations: { "example.com/note": "hi" },
  },
  spec: {
    replicas: 3,
    containers: [
      { name: "app", image: "web:1", ports: [{ containerPort: 80 }, { containerPort: 443 }] },
      { name: "sidecar", image: "proxy:2", ports: [{ containerPort: 15001 }] },
    ],
  },
  status: {
    ready: true,
    ratio: 0.5,
    conditions: [
      { type: "Initialized", status: "True", observedGeneration: 1 },
      { type: "Ready", status: "False", observedGeneration: 2 },
    ],
  },
};

const ev = (p: string) => evaluateJsonPath(pod, p);

describe("evaluateJsonPath", () => {
  it("follows fields, with or without braces and $", () => {
    expect(ev(".metadata.name")).toEqual(["web-1"]);
    expect(ev("{.metadata.name}")).toEqual(["web-1"]);
    expect(ev("$.metadata.name")).toEqual(["web-1"]);
    expect(ev("{ .spec.replicas }")).toEqual([3]);
    expect(ev(".status")).toEqual([pod.status]);
    expect(ev(".")).toEqual([pod]);
  });

  it("reads keys with dots through brackets or escapes", () => {
    expect(ev(".metadata.labels['app.kubernetes.io/name']")).toEqual(["shop"]);
    expect(ev('.metadata.labels["app.kubernetes.io/name"]')).toEqual(["shop"]);
    expect(ev(".metadata.labels.app\\.kubernetes\\.io/name")).toEqual(["shop"]);
    expect(ev(".metadata.labels['app\\.kubernetes\\.io/name']")).toEqual(["shop"]);
    expect(ev(".metadata.annotations.example\\.com/note")).toEqual(["hi"]);
  });

  it("indexes, slices, wildcards and unions", () => {
    expect(ev(".spec.containers[0].name")).toEqual(["app"]);
    expect(ev(".spec.containers[-1].name")).toEqual(["sidecar"]);
    expect(ev(".spec.containers[*].name")).toEqual(["app", "sidecar"]);
    expect(ev(".spec.containers[0:1].name")).toEqual(["app"]);
    expect(ev(".spec.containers[*].ports[*].containerPort")).toEqual([80, 443, 15001]);
    expect(ev(".spec.containers[0].ports[::2].containerPort")).toEqual([80]);
    expect(ev(".spec.containers[0,1].image")).toEqual(["web:1", "proxy:2"]);
    expect(ev(".metadata.labels['app','missing']")).toEqual(["web"]);
    expect(ev(".metadata.labels.*")).toEqual(["web", "shop"]);
    expect(ev(".spec.containers[5].name")).toEqual([]);
  });

  it("descends recursively", () => {
    expect(ev("..containerPort")).toEqual([80, 443, 15001]);
    expect(ev(".spec..name")).toEqual(["app", "sidecar"]);
  });

  it("filters", () => {
    expect(ev('.status.conditions[?(@.type=="Ready")].status')).toEqual(["False"]);
    expect(ev(".status.conditions[?(@.type == 'Ready')].status")).toEqual(["False"]);
    expect(ev('.status.conditions[?(@.type!="Ready")].type')).toEqual(["Initialized"]);
    expect(ev(".status.conditions[?(@.observedGeneration>1)].type")).toEqual(["Ready"]);
    expect(ev(".status.conditions[?(@.observedGeneration<=1)].type")).toEqual(["Initialized"]);
    expect(ev(".spec.containers[?(@.ports[1])].name")).toEqual(["app"]);
    expect(ev('.spec.containers[?(@.image=="no")].name')).toEqual([]);
    // A number never equals a string.
    expect(ev('.status.conditions[?(@.observedGeneration=="1")].type')).toEqual([]);
  });

  it("selects nothing for missing fields", () => {
    expect(ev(".spec.nothing.deeper")).toEqual([]);
    expect(ev(".metadata.name.length")).toEqual([]);
    expect(evaluateJsonPath(undefined, ".a")).toEqual([]);
  });

  it("rejects bad syntax", () => {
    for (const bad of [
      ".a[",
      ".a[x]",
      ".a[?(@.b==1)",
      "{.a",
      ".a{",
      "metadata.name",
      ".a..  ..b",
      "{.a}{.b}",
      "{range .a}",
      '.a["x',
      ".a[?(@.b=~1)]",
    ]) {
      expect(() => parseJsonPath(bad), bad).toThrow(JsonPathError);
    }
  });
});

describe("formatJsonPathValue", () => {
  it("prints as printer columns do", () => {
    expect(formatJsonPathValue("web")).toBe("web");
    expect(formatJsonPathValue(3)).toBe("3");
    expect(formatJsonPathValue(0.5)).toBe("0.5");
    expect(formatJsonPathValue(1e21)).toBe("1e+21");
    expect(formatJsonPathValue(0.00001)).toBe("1e-05");
    expect(formatJsonPathValue(true)).toBe("true");
    expect(formatJsonPathValue({ a: [1, "x"] })).toBe('{"a":[1,"x"]}');
    expect(formatJsonPathValue([1, 2])).toBe("[1,2]");
    expect(formatJsonPathValue(null)).toBe("null");
  });
});

describe("executeJsonPathTemplate", () => {
  it("renders text, actions and ranges like kubectl -o jsonpath", () => {
    const list = { items: [pod, { ...pod, metadata: { ...pod.metadata, name: "web-2" } }] };
    expect(executeJsonPathTemplate(list, '{range .items[*]}{.metadata.name}{"\\n"}{end}')).toBe(
      "web-1\nweb-2\n",
    );
    expect(executeJsonPathTemplate(pod, "name={.metadata.name} ports={..containerPort}")).toBe(
      "name=web-1 ports=80 443 15001",
    );
    expect(
      executeJsonPathTemplate(
        pod,
        "{range .spec.containers[*]}{.name}:{range .ports[*]}{.containerPort},{end};{end}",
      ),
    ).toBe("app:80,443,;sidecar:15001,;");
    expect(() => executeJsonPathTemplate(pod, "{end}")).toThrow(JsonPathError);
    expect(() => executeJsonPathTemplate(pod, "{range .a}")).toThrow(JsonPathError);
  });
});

describe("properties", () => {
  it("a field path built from any object's keys finds the value", () => {
    const key = fc.string({
      minLength: 1,
      maxLength: 6,
      unit: fc.constantFrom("a", "b", ".", "/", "-", "'", " ", "]"),
    });
    fc.assert(
      fc.property(fc.array(key, { minLength: 1, maxLength: 4 }), fc.jsonValue(), (keys, leaf) => {
        let obj: unknown = leaf;
        for (const k of [...keys].reverse()) obj = { [k]: obj };
        const bracket = keys
          .map((k) => `['${k.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}']`)
          .join("");
        const dotted = keys
          .map((k) => `.${k.replace(/[\\ .,[\]$@{}']/g, (c) => `\\${c}`)}`)
          .join("");
        expect(evaluateJsonPath(obj, bracket)).toEqual([leaf]);
        expect(evaluateJsonPath(obj, dotted)).toEqual([leaf]);
      }),
      { numRuns: 500 },
    );
  });

  it("[*] then [i] agree with direct indexing", () => {
    fc.assert(
      fc.property(
        fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 6 }),
        fc.integer({ min: -8, max: 8 }),
        (arr, i) => {
          expect(evaluateJsonPath({ a: arr }, ".a[*]")).toEqual(arr);
          const idx = i < 0 ? arr.length + i : i;
          const expected = idx >= 0 && idx < arr.length ? [arr[idx]] : [];
          expect(evaluateJsonPath({ a: arr }, `.a[${i}]`)).toEqual(expected);
        },
      ),
    );
  });

  it("parsing never fails with anything but JsonPathError", () => {
    fc.assert(
      fc.property(
        fc.string({
          maxLength: 20,
          unit: fc.constantFrom(
            ".",
            "[",
            "]",
            "?",
            "(",
            ")",
            "@",
            "=",
            "'",
            "a",
            "1",
            "*",
            ":",
            ",",
            "{",
            "}",
            "\\",
          ),
        }),
        (s) => {
          try {
            evaluateJsonPath({ a: [{ b: 1 }] }, s);
          } catch (e) {
            expect(e).toBeInstanceOf(JsonPathError);
          }
        },
      ),
      { numRuns: 2000 },
    );
  });
});
