/**
 * Regular expressions run as Kubernetes runs them: RE2 for schema `pattern` and
 * CEL `matches()`/`find()`/`findAll()`, linear in the input (a backtracking
 * pattern on a value made to defeat it answers at once instead of running for
 * longer than the universe), and what RE2 cannot compile refused when the CRD is
 * written, with Kubernetes' messages.
 */
import { describe, expect, it } from "vitest";
import type { Schema } from "../../packages/api/src/schema.ts";
import { compileSchemaRules, validateRules } from "../../src/registry/crd/cel/index.ts";
import { regexError, regexFindAll, regexTest } from "../../src/registry/crd/regex.ts";
import { compileSchema, validateAgainstSchema } from "../../src/registry/crd/schema.ts";
import { structuralSchemaCauses } from "../../src/registry/crd/structural.ts";

/** A value that makes a backtracking engine try 2^60 ways to match `^(a+)+$`. */
const EVIL = `${"a".repeat(60)}!`;

describe("RE2 patterns", () => {
  it("match as Go's regexp does, and a backtracking pattern on a hostile value answers", () => {
    expect(regexTest("^(a+)+$", EVIL)).toBe(false);
    expect(regexTest("^(a+)+$", "a".repeat(60))).toBe(true);
    expect(regexTest("b+", "abbc")).toBe(true);
    expect(regexFindAll("[0-9]+", "a1b22c333", -1)).toEqual(["1", "22", "333"]);
    expect(regexFindAll("[0-9]+", "a1b22c333", 2)).toEqual(["1", "22"]);
  });

  it("refuse what RE2 cannot run, with Go's messages", () => {
    expect(regexError("(?=a)")).toBe(
      "error parsing regexp: invalid or unsupported Perl syntax: `(?=`",
    );
    expect(regexError("(?!a)")).toBe(
      "error parsing regexp: invalid or unsupported Perl syntax: `(?!`",
    );
    expect(regexError("(a)\\1")).toBe("error parsing regexp: invalid escape sequence: `\\1`");
    expect(regexError("+")).toBe(
      "error parsing regexp: missing argument to repetition operator: `+`",
    );
    expect(regexError("^[a-z]([-a-z0-9]*[a-z0-9])?$")).toBeUndefined();
  });
});

describe("schema pattern", () => {
  const schema: Schema = {
    type: "object",
    properties: { name: { type: "string", pattern: "^(a+)+$" } },
  };

  it("validates a hostile value against a backtracking pattern in RE2", () => {
    const causes = validateAgainstSchema({ name: EVIL }, compileSchema(schema));
    expect(causes).toEqual([
      {
        reason: "FieldValueInvalid",
        field: "name",
        message: `Invalid value: "${EVIL}": name in body should match '^(a+)+$'`,
      },
    ]);
    expect(validateAgainstSchema({ name: "aaaa" }, compileSchema(schema))).toEqual([]);
  });

  it("refuses a CRD whose pattern RE2 cannot compile, also under allOf, as Kubernetes does", () => {
    const bad: Schema = {
      type: "object",
      properties: {
        a: { type: "string", pattern: "^(?!admin).*$" },
        b: { type: "string", allOf: [{ pattern: "(x)\\1" }] },
        c: { type: "string", pattern: "^[a-z]+$" },
      },
    };
    const causes = structuralSchemaCauses(bad, "spec.versions[0].schema.openAPIV3Schema", false);
    expect(causes.map((c) => `${c.field}: ${c.message}`)).toEqual([
      'spec.versions[0].schema.openAPIV3Schema.properties[a].pattern: Invalid value: "^(?!admin).*$": must be a valid regular expression, but isn\'t: error parsing regexp: invalid or unsupported Perl syntax: `(?!`',
      'spec.versions[0].schema.openAPIV3Schema.properties[b].allOf[0].pattern: Invalid value: "(x)\\\\1": must be a valid regular expression, but isn\'t: error parsing regexp: invalid escape sequence: `\\1`',
    ]);
  });

  it("makes a stored pattern RE2 cannot compile match nothing, saying why", () => {
    const stored: Schema = {
      type: "object",
      properties: { a: { type: "string", pattern: "^(?=x)" } },
    };
    expect(validateAgainstSchema({ a: "x" }, compileSchema(stored))).toEqual([
      {
        reason: "FieldValueInvalid",
        field: "a",
        message:
          "Invalid value: \"x\": a in body should match '^(?=x), but pattern is invalid: error parsing regexp: invalid or unsupported Perl syntax: `(?=`'",
      },
    ]);
  });
});

describe("CEL regular expressions", () => {
  const withRule = (rule: string): Schema => ({
    type: "object",
    properties: {
      s: { type: "string", maxLength: 100 },
      l: { type: "array", maxItems: 10, items: { type: "string", maxLength: 100 } },
    },
    "x-kubernetes-validations": [{ rule }],
  });
  const run = (rule: string, obj: unknown) => {
    const c = compileSchemaRules(withRule(rule));
    expect(c.issues).toEqual([]);
    return validateRules(obj, undefined, c.root);
  };

  it("matches(), find() and findAll() run in RE2, in comprehensions too", () => {
    expect(run("!self.s.matches('^(a+)+$')", { s: EVIL })).toEqual([]);
    expect(run("self.l.all(x, !x.matches('^(a+)+$'))", { l: [EVIL, EVIL] })).toEqual([]);
    expect(run("self.s.find('(a+)+!') == self.s", { s: EVIL })).toEqual([]);
    expect(run("self.s.findAll('[0-9]+') == ['1', '22']", { s: "x1y22" })).toEqual([]);
    expect(run("self.s.matches('^[a-z]+$')", { s: "Abc" })).toHaveLength(1);
  });

  it("refuse a literal pattern RE2 cannot compile when the rule is compiled, as Kubernetes does", () => {
    const matches = compileSchemaRules(withRule("self.s.matches('(?=a)')"));
    expect(
      matches.issues.map((c) => (c.message ?? "").replace(/^Invalid value: \{.*?\}: /, "")),
    ).toEqual([
      "compilation failed: ERROR: <input>:1:16: invalid matches argument\n | self.s.matches('(?=a)')\n | ...............^",
    ]);
    const find = compileSchemaRules(withRule("self.s.find(')') == ''"));
    expect(
      find.issues.map((c) => (c.message ?? "").replace(/^Invalid value: \{.*?\}: /, "")),
    ).toEqual(["program instantiation failed: error parsing regexp: unexpected ): `)`"]);
  });

  it("fail the rule, not the server, on a pattern from the object that RE2 cannot compile", () => {
    const causes = run("self.l[0].matches(self.s)", { s: "(?=a)", l: ["a"] });
    expect(causes).toHaveLength(1);
    expect(causes[0].message).toContain("error parsing regexp: invalid or unsupported Perl syntax");
  });
});
