import {
  checkFieldSelectorFields,
  escapeFieldValue,
  type FieldRequirement,
  fieldSelectorFields,
  formatFieldSelector,
  isEverythingFields,
  matchesFields,
  parseFieldSelector,
  requiredFieldValue,
  StatusError,
  unescapeFieldValue,
} from "@setpoint/api";
import fc from "fast-check";
import { describe, expect, it } from "vitest";

function badRequestMessage(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(StatusError);
    expect((e as StatusError).code).toBe(400);
    return (e as StatusError).message;
  }
  throw new Error("expected a StatusError");
}

describe("parseFieldSelector", () => {
  it("parses =, == and != terms, sorted", () => {
    expect(parseFieldSelector("status.phase!=Running,metadata.name==web").requirements).toEqual([
      { field: "metadata.name", operator: "Equals", value: "web" },
      { field: "status.phase", operator: "NotEquals", value: "Running" },
    ]);
    expect(parseFieldSelector("metadata.namespace=default").requirements).toEqual([
      { field: "metadata.namespace", operator: "Equals", value: "default" },
    ]);
  });

  it("unescapes values and splits only on unescaped commas", () => {
    const sel = parseFieldSelector("a=x\\,y\\=z\\\\,b=");
    expect(sel.requirements).toEqual([
      { field: "a", operator: "Equals", value: "x,y=z\\" },
      { field: "b", operator: "Equals", value: "" },
    ]);
    expect(formatFieldSelector(sel)).toBe("a=x\\,y\\=z\\\\,b=");
  });

  it("skips empty terms and selects everything for the empty string", () => {
    expect(isEverythingFields(parseFieldSelector(""))).toBe(true);
    expect(parseFieldSelector(",a=b,,").requirements).toHaveLength(1);
  });

  it("rejects malformed selectors with Kubernetes' messages", () => {
    expect(badRequestMessage(() => parseFieldSelector("a=b,c"))).toBe(
      "invalid selector: 'a=b,c'; can't understand 'c'",
    );
    expect(badRequestMessage(() => parseFieldSelector("a=b\\x"))).toBe(
      "invalid field selector: invalid escape sequence: \\x",
    );
    expect(badRequestMessage(() => parseFieldSelector("a=b\\"))).toBe(
      "invalid field selector: invalid escape sequence: \\",
    );
    expect(badRequestMessage(() => parseFieldSelector("a=b=c"))).toBe(
      "invalid field selector: unescaped character in value: 61",
    );
  });
});

describe("matching and fields", () => {
  const obj: Record<string, string> = { "metadata.name": "web", "status.phase": "Running" };
  const get = (f: string) => obj[f];

  it("matches through the getter; a missing field reads as empty", () => {
    expect(matchesFields(parseFieldSelector("metadata.name=web"), get)).toBe(true);
    expect(matchesFields(parseFieldSelector("metadata.name!=web"), get)).toBe(false);
    expect(matchesFields(parseFieldSelector("metadata.name=web,status.phase=Failed"), get)).toBe(
      false,
    );
    expect(matchesFields(parseFieldSelector("spec.nodeName="), get)).toBe(true);
    expect(matchesFields(parseFieldSelector("spec.nodeName!="), get)).toBe(false);
    expect(matchesFields(parseFieldSelector(""), get)).toBe(true);
  });

  it("lists fields and rejects unsupported ones as Kubernetes does", () => {
    const sel = parseFieldSelector("metadata.name=a,spec.x=1,metadata.name!=b");
    expect(fieldSelectorFields(sel)).toEqual(["metadata.name", "spec.x"]);
    expect(badRequestMessage(() => checkFieldSelectorFields(sel, ["metadata.name"]))).toBe(
      "field label not supported: spec.x",
    );
    expect(() => checkFieldSelectorFields(sel, new Set(["metadata.name", "spec.x"]))).not.toThrow();
  });

  it("finds the pinned value of a field", () => {
    const sel = parseFieldSelector("metadata.name=a,metadata.namespace!=b");
    expect(requiredFieldValue(sel, "metadata.name")).toBe("a");
    expect(requiredFieldValue(sel, "metadata.namespace")).toBeUndefined();
  });
});

const fieldArb = fc.constantFrom("metadata.name", "metadata.namespace", "status.phase", "spec.x");
const requirementArb: fc.Arbitrary<FieldRequirement> = fc.record({
  field: fieldArb,
  operator: fc.constantFrom<"Equals" | "NotEquals">("Equals", "NotEquals"),
  value: fc.string({
    maxLength: 12,
    unit: fc.constantFrom("a", "b", ",", "=", "\\", "!", " ", "é"),
  }),
});

const canonical = (rs: readonly FieldRequirement[]) => rs.map((r) => JSON.stringify(r)).sort();

describe("field selector properties", () => {
  it("escape and unescape are inverses", () => {
    fc.assert(
      fc.property(fc.string(), (s) => {
        expect(unescapeFieldValue(escapeFieldValue(s))).toBe(s);
      }),
    );
  });

  it("parse(format(sel)) keeps every requirement", () => {
    fc.assert(
      fc.property(fc.array(requirementArb, { maxLength: 5 }), (reqs) => {
        const parsed = parseFieldSelector(formatFieldSelector({ requirements: reqs }));
        expect(canonical(parsed.requirements)).toEqual(canonical(reqs));
      }),
      { numRuns: 500 },
    );
  });

  it("matching agrees with a direct evaluation", () => {
    const objArb = fc.dictionary(fieldArb, fc.constantFrom("", "a", "b", "a,b", "x=y"));
    fc.assert(
      fc.property(fc.array(requirementArb, { maxLength: 4 }), objArb, (reqs, o) => {
        const sel = parseFieldSelector(formatFieldSelector({ requirements: reqs }));
        const expected = reqs.every((r) =>
          r.operator === "Equals" ? (o[r.field] ?? "") === r.value : (o[r.field] ?? "") !== r.value,
        );
        expect(matchesFields(sel, (f) => o[f])).toBe(expected);
      }),
      { numRuns: 500 },
    );
  });
});
