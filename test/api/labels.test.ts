import {
  EVERYTHING,
  formatLabelSelector,
  isEverything,
  type LabelOperator,
  type LabelRequirement,
  type LabelSelector,
  labelSelectorFromMetav1,
  labelSelectorFromSet,
  matchesLabels,
  parseLabelSelector,
  requiredLabelValue,
  StatusError,
} from "@setpoint/api";
import fc from "fast-check";
import { describe, expect, it } from "vitest";

function badRequest(fn: () => unknown): StatusError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(StatusError);
    const se = e as StatusError;
    expect(se.code).toBe(400);
    expect(se.reason).toBe("BadRequest");
    return se;
  }
  throw new Error("expected a StatusError");
}

const req = (key: string, operator: LabelOperator, values: string[] = []): LabelRequirement => ({
  key,
  operator,
  values,
});

describe("parseLabelSelector", () => {
  it("parses every operator", () => {
    expect(parseLabelSelector("a=b").requirements).toEqual([req("a", "Equals", ["b"])]);
    expect(parseLabelSelector("a==b").requirements).toEqual([req("a", "DoubleEquals", ["b"])]);
    expect(parseLabelSelector("a!=b").requirements).toEqual([req("a", "NotEquals", ["b"])]);
    expect(parseLabelSelector("a in (y,x)").requirements).toEqual([req("a", "In", ["x", "y"])]);
    expect(parseLabelSelector("a notin (x)").requirements).toEqual([req("a", "NotIn", ["x"])]);
    expect(parseLabelSelector("a").requirements).toEqual([req("a", "Exists")]);
    expect(parseLabelSelector("!a").requirements).toEqual([req("a", "DoesNotExist")]);
    expect(parseLabelSelector("a>5").requirements).toEqual([req("a", "GreaterThan", ["5"])]);
    expect(parseLabelSelector("a<5").requirements).toEqual([req("a", "LessThan", ["5"])]);
    // Comparison values are label values too, so negative numbers are refused.
    expect(() => parseLabelSelector("a<-5")).toThrow(/Invalid value: "-5"/);
  });

  it("sorts requirements by key and tolerates blanks", () => {
    const sel = parseLabelSelector("  tier in ( web , db ) ,\tapp = shop ,  !canary ");
    expect(sel.requirements).toEqual([
      req("app", "Equals", ["shop"]),
      req("canary", "DoesNotExist"),
      req("tier", "In", ["db", "web"]),
    ]);
    expect(formatLabelSelector(sel)).toBe("app=shop,!canary,tier in (db,web)");
  });

  it("reads empty values and set entries as in Kubernetes' grammar example", () => {
    const sel = parseLabelSelector("x in (foo,,baz),y,z notin ()");
    expect(sel.requirements).toEqual([
      req("x", "In", ["", "baz", "foo"]),
      req("y", "Exists"),
      req("z", "NotIn", [""]),
    ]);
    expect(parseLabelSelector("a=").requirements).toEqual([req("a", "Equals", [""])]);
    expect(parseLabelSelector("a in (x,)").requirements).toEqual([req("a", "In", ["", "x"])]);
  });

  it("treats in/notin as values where a value is expected", () => {
    expect(parseLabelSelector("a=in").requirements).toEqual([req("a", "Equals", ["in"])]);
    expect(parseLabelSelector("a in (in,notin)").requirements).toEqual([
      req("a", "In", ["in", "notin"]),
    ]);
    expect(parseLabelSelector("in").requirements).toEqual([req("in", "Exists")]);
  });

  it("accepts prefixed keys", () => {
    expect(parseLabelSelector("app.kubernetes.io/name=web").requirements).toEqual([
      req("app.kubernetes.io/name", "Equals", ["web"]),
    ]);
  });

  it("selects everything for the empty string", () => {
    expect(isEverything(parseLabelSelector(""))).toBe(true);
    expect(isEverything(parseLabelSelector("   "))).toBe(true);
    expect(isEverything(parseLabelSelector("a"))).toBe(false);
  });

  it("rejects bad syntax with Kubernetes' messages", () => {
    expect(badRequest(() => parseLabelSelector("a=b,")).message).toBe(
      "found '', expected: identifier after ','",
    );
    expect(badRequest(() => parseLabelSelector("a b")).message).toBe(
      "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
    );
    expect(badRequest(() => parseLabelSelector("a=b c")).message).toBe(
      "found 'c', expected: ',' or 'end of string'",
    );
    expect(badRequest(() => parseLabelSelector("a in (x")).message).toBe(
      "unable to parse requirement: found '', expected: ',' or ')'",
    );
    expect(badRequest(() => parseLabelSelector("a in x")).message).toBe(
      "unable to parse requirement: found 'x' expected: '('",
    );
    expect(badRequest(() => parseLabelSelector("!a=b")).message).toBe(
      "found '=', expected: ',' or 'end of string'",
    );
    expect(badRequest(() => parseLabelSelector(",a")).message).toBe(
      "found ',', expected: !, identifier, or 'end of string'",
    );
    expect(badRequest(() => parseLabelSelector("a>x")).message).toContain(
      "for 'Gt', 'Lt' operators, the value must be an integer",
    );
  });

  it("rejects invalid keys and values", () => {
    expect(badRequest(() => parseLabelSelector("-a=b")).message).toBe(
      "unable to parse requirement: <nil>: Invalid value: \"-a\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    );
    expect(badRequest(() => parseLabelSelector("a=-b")).message).toBe(
      "unable to parse requirement: values[0][a]: Invalid value: \"-b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    );
    expect(badRequest(() => parseLabelSelector(`a=${"x".repeat(64)}`)).message).toContain(
      "must be no more than 63 characters",
    );
  });
});

describe("matchesLabels", () => {
  const labels = { app: "web", tier: "front", n: "10" };
  const m = (s: string) => matchesLabels(parseLabelSelector(s), labels);

  it("applies Kubernetes' semantics", () => {
    expect(m("app=web")).toBe(true);
    expect(m("app==db")).toBe(false);
    expect(m("app!=db")).toBe(true);
    expect(m("missing!=x")).toBe(true); // absent label: != holds
    expect(m("missing notin (x)")).toBe(true); // absent label: notin holds
    expect(m("missing in (x)")).toBe(false);
    expect(m("tier in (back,front)")).toBe(true);
    expect(m("tier notin (back,front)")).toBe(false);
    expect(m("app")).toBe(true);
    expect(m("!app")).toBe(false);
    expect(m("!missing")).toBe(true);
    expect(m("n>9")).toBe(true);
    expect(m("n>10")).toBe(false);
    expect(m("n<11")).toBe(true);
    expect(m("app>1")).toBe(false); // not an integer: never matches
    expect(m("app=web,tier=back")).toBe(false);
    expect(m("")).toBe(true);
    expect(matchesLabels(parseLabelSelector("app"), undefined)).toBe(false);
    expect(matchesLabels(parseLabelSelector("!app"), undefined)).toBe(true);
    expect(matchesLabels(parseLabelSelector("app!=x"), undefined)).toBe(true);
  });

  it("never matches with the nothing selector", () => {
    expect(matchesLabels(labelSelectorFromMetav1(null), labels)).toBe(false);
    expect(matchesLabels(labelSelectorFromMetav1(undefined), {})).toBe(false);
  });
});

describe("labelSelectorFromMetav1", () => {
  it("converts matchLabels and matchExpressions", () => {
    const sel = labelSelectorFromMetav1({
      matchLabels: { app: "web" },
      matchExpressions: [
        { key: "tier", operator: "In", values: ["front", "back"] },
        { key: "canary", operator: "DoesNotExist" },
        { key: "env", operator: "Exists" },
        { key: "zone", operator: "NotIn", values: ["a"] },
      ],
    });
    expect(formatLabelSelector(sel)).toBe(
      "app=web,!canary,env,tier in (back,front),zone notin (a)",
    );
    expect(matchesLabels(sel, { app: "web", tier: "back", env: "x" })).toBe(true);
    expect(matchesLabels(sel, { app: "web", tier: "back", env: "x", zone: "a" })).toBe(false);
  });

  it("selects everything when empty", () => {
    expect(isEverything(labelSelectorFromMetav1({}))).toBe(true);
    expect(isEverything(labelSelectorFromMetav1({ matchLabels: {}, matchExpressions: [] }))).toBe(
      true,
    );
  });

  it("validates", () => {
    expect(
      badRequest(() =>
        labelSelectorFromMetav1({
          matchExpressions: [{ key: "a", operator: "Foo" as "In", values: ["x"] }],
        }),
      ).message,
    ).toBe('"Foo" is not a valid label selector operator');
    expect(
      badRequest(() =>
        labelSelectorFromMetav1({ matchExpressions: [{ key: "a", operator: "In", values: [] }] }),
      ).message,
    ).toBe("values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty");
    expect(
      badRequest(() =>
        labelSelectorFromMetav1({
          matchExpressions: [{ key: "a", operator: "Exists", values: ["x"] }],
        }),
      ).message,
    ).toContain("values set must be empty for exists and does not exist");
    expect(
      badRequest(() => labelSelectorFromMetav1({ matchLabels: { "a b": "x" } })).message,
    ).toContain('key: Invalid value: "a b"');
  });
});

describe("helpers", () => {
  it("labelSelectorFromSet requires every label", () => {
    const sel = labelSelectorFromSet({ b: "2", a: "1" });
    expect(formatLabelSelector(sel)).toBe("a=1,b=2");
    expect(matchesLabels(sel, { a: "1", b: "2", c: "3" })).toBe(true);
    expect(matchesLabels(sel, { a: "1" })).toBe(false);
    expect(isEverything(labelSelectorFromSet({}))).toBe(true);
    expect(labelSelectorFromSet(undefined)).toBe(EVERYTHING);
  });

  it("requiredLabelValue finds pinned values", () => {
    const sel = parseLabelSelector("a=1,b in (2),c in (3,4),d!=5");
    expect(requiredLabelValue(sel, "a")).toBe("1");
    expect(requiredLabelValue(sel, "b")).toBe("2");
    expect(requiredLabelValue(sel, "c")).toBeUndefined();
    expect(requiredLabelValue(sel, "d")).toBeUndefined();
    expect(requiredLabelValue(sel, "e")).toBeUndefined();
  });
});

// --- properties -------------------------------------------------------------

const KEYS = ["app", "tier", "example.com/role", "x_y.z", "in", "a-1"];
const VALUES = ["", "web", "db", "in", "notin", "v1.2", "A_b-c"];

const keyArb = fc.constantFrom(...KEYS);
const valueArb = fc.constantFrom(...VALUES);
const labelsArb = fc.dictionary(keyArb, valueArb, { maxKeys: 4 });

const requirementArb: fc.Arbitrary<LabelRequirement> = fc.oneof(
  fc.record({
    key: keyArb,
    operator: fc.constantFrom<LabelOperator>("Equals", "DoubleEquals", "NotEquals"),
    values: valueArb.map((v) => [v]),
  }),
  fc.record({
    key: keyArb,
    operator: fc.constantFrom<LabelOperator>("In", "NotIn"),
    values: fc.uniqueArray(valueArb, { minLength: 1, maxLength: 3 }).map((vs) => vs.sort()),
  }),
  fc.record({
    key: keyArb,
    operator: fc.constantFrom<LabelOperator>("Exists", "DoesNotExist"),
    values: fc.constant([]),
  }),
  fc.record({
    key: keyArb,
    operator: fc.constantFrom<LabelOperator>("GreaterThan", "LessThan"),
    values: fc.integer({ min: 0, max: 20 }).map((n) => [String(n)]),
  }),
);

const selectorArb: fc.Arbitrary<LabelSelector> = fc
  .array(requirementArb, { maxLength: 5 })
  .map((reqs) => ({
    requirements: [...reqs].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)),
  }));

// A direct reading of the Kubernetes documentation, independent of the parser.
function oracle(r: LabelRequirement, labels: Record<string, string>): boolean {
  const present = Object.hasOwn(labels, r.key);
  const v = labels[r.key];
  switch (r.operator) {
    case "Equals":
    case "DoubleEquals":
      return present && v === r.values[0];
    case "NotEquals":
      return !present || v !== r.values[0];
    case "In":
      return present && r.values.includes(v);
    case "NotIn":
      return !present || !r.values.includes(v);
    case "Exists":
      return present;
    case "DoesNotExist":
      return !present;
    case "GreaterThan":
      return present && /^-?\d+$/.test(v) && Number(v) > Number(r.values[0]);
    case "LessThan":
      return present && /^-?\d+$/.test(v) && Number(v) < Number(r.values[0]);
  }
}

describe("label selector properties", () => {
  it("parse(format(sel)) gives back the selector", () => {
    fc.assert(
      fc.property(selectorArb, (sel) => {
        const text = formatLabelSelector(sel);
        expect(parseLabelSelector(text)).toEqual(sel);
        expect(formatLabelSelector(parseLabelSelector(text))).toBe(text);
      }),
      { numRuns: 500 },
    );
  });

  it("matching agrees with a direct evaluation of each requirement", () => {
    const numericLabels = fc.dictionary(
      keyArb,
      fc.oneof(valueArb, fc.integer({ min: 0, max: 20 }).map(String)),
      {
        maxKeys: 5,
      },
    );
    fc.assert(
      fc.property(selectorArb, fc.oneof(labelsArb, numericLabels), (sel, labels) => {
        const parsed = parseLabelSelector(formatLabelSelector(sel));
        const expected = sel.requirements.every((r) => oracle(r, labels));
        expect(matchesLabels(parsed, labels)).toBe(expected);
      }),
      { numRuns: 1000 },
    );
  });

  it("never throws anything but a 400 on arbitrary input", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (s) => {
        try {
          const sel = parseLabelSelector(s);
          // Whatever parses formats to something that parses to the same selector.
          expect(parseLabelSelector(formatLabelSelector(sel))).toEqual(sel);
        } catch (e) {
          expect(e).toBeInstanceOf(StatusError);
          expect((e as StatusError).code).toBe(400);
        }
      }),
      { numRuns: 1000 },
    );
  });
});
