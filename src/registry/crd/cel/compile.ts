/**
 * Compiling the CEL rules of a schema: each rule parsed and type-checked in the
 * environment of its node's type, its static cost checked against Kubernetes'
 * limits, with causes naming the schema path of each bad rule.
 */
import type { ParseResult } from "@marcbachmann/cel-js";
import type { Schema, StatusCause, ValidationRule } from "@setpoint/api";
import { fieldErrors } from "@setpoint/api";
import { declaredProperty, isObject } from "../paths.ts";
import { CompileIssue, costMessage, estimate, maxSize } from "./cost.ts";
import { celType, environmentFor } from "./environment.ts";
import { literalPatternIssue, useRe2Matches } from "./library.ts";
import { STATIC_RULE_COST_LIMIT, STATIC_SCHEMA_COST_LIMIT } from "./limits.ts";
import { errorOffset, errorSummary, formatCompileError, ruleValue } from "./messages.ts";
import {
  type AstNode,
  type CelCompilation,
  type CelNode,
  type CompiledRule,
  isAst,
} from "./types.ts";
import { picksOf } from "./values.ts";

/**
 * The fields of variable `name` that expressions read (`name.f`, `name.?f`,
 * `has(name.f)`), or undefined when one uses the variable in any other way (as a
 * whole, or binds the name itself).
 */
function fieldsRead(asts: unknown[], name: string): Set<string> | undefined {
  const into = new Set<string>();
  const visit = (v: unknown, parent: AstNode | undefined): boolean => {
    if (Array.isArray(v)) {
      for (const x of v) if (!visit(x, parent)) return false;
      return true;
    }
    if (!isAst(v)) return true;
    if (v.op === "id") {
      if (v.args !== name) return true;
      const pa = parent?.args;
      if ((parent?.op === "." || parent?.op === ".?") && Array.isArray(pa) && pa[0] === v) {
        into.add(String(pa[1]));
        return true;
      }
      return false;
    }
    if (v.op === "value") return true;
    const args = v.args;
    return typeof args === "object" && args !== null ? visit(args, v) : true;
  };
  for (const ast of asts) if (!visit(ast, undefined)) return undefined;
  return into;
}

function usesName(n: unknown, name: string): boolean {
  if (Array.isArray(n)) return n.some((x) => usesName(x, name));
  if (!isAst(n)) return false;
  if (n.op === "id") return n.args === name;
  return usesName(n.args, name);
}

/** Parses a rule's `fieldPath` (`.a.b`, `['a.b']`) against the node's schema. */
export function parseRuleFieldPath(path: string, s: Schema): string | undefined {
  let i = 0;
  const parts: string[] = [];
  let cur: Schema | undefined = s;
  while (i < path.length) {
    let name: string;
    if (path[i] === ".") {
      const m = /^\.([a-zA-Z_][a-zA-Z0-9_-]*)/.exec(path.slice(i));
      if (!m) return undefined;
      name = m[1];
      i += m[0].length;
    } else if (path.startsWith("['", i)) {
      const end = path.indexOf("']", i + 2);
      if (end < 0) return undefined;
      name = path.slice(i + 2, end);
      i = end + 2;
    } else {
      return undefined;
    }
    if (!cur) return undefined;
    const next: Schema | undefined =
      declaredProperty(cur, name) ??
      (isObject(cur.additionalProperties) ? (cur.additionalProperties as Schema) : undefined);
    if (!next) return undefined;
    cur = next;
    parts.push(name);
  }
  return parts.length > 0 ? parts.join(".") : undefined;
}

function join(base: string, part: string): string {
  return base === "" ? part : `${base}.${part}`;
}

interface WalkState {
  issues: StatusCause[];
  total: number;
  expensive: { path: string; cost: number }[];
}

/**
 * Compiles every rule of a structural schema. `basePath` is where the schema sits
 * in the CRD (e.g. `spec.versions[0].schema.openAPIV3Schema`), for the causes.
 */
export function compileSchemaRules(schema: Schema, basePath = ""): CelCompilation {
  const state: WalkState = { issues: [], total: 0, expensive: [] };
  const root = compileNode(schema, basePath, true, 1, undefined, state);
  if (state.total > STATIC_SCHEMA_COST_LIMIT) {
    for (const e of state.expensive) {
      state.issues.push(
        fieldErrors.forbidden(
          e.path,
          "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
        ),
      );
    }
    state.issues.push(
      fieldErrors.forbidden(
        basePath,
        costMessage(
          "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
          state.total,
          STATIC_SCHEMA_COST_LIMIT,
        ),
      ),
    );
  }
  return { root, issues: state.issues, totalCost: state.total };
}

function compileNode(
  s: Schema,
  path: string,
  root: boolean,
  cardinality: number,
  uncorrelatable: string | undefined,
  state: WalkState,
): CelNode | undefined {
  const node: CelNode = { schema: s, rules: [] };
  const rules = s["x-kubernetes-validations"] ?? [];
  rules.forEach((rule, i) => {
    const rulePath = join(path, `x-kubernetes-validations[${i}]`);
    const compiled = compileRule(rule, s, root, rulePath, uncorrelatable, state);
    if (!compiled) return;
    const total = Math.min(Number.MAX_SAFE_INTEGER, compiled.cost * cardinality);
    if (total > STATIC_RULE_COST_LIMIT) {
      state.issues.push(
        fieldErrors.forbidden(
          `${rulePath}.rule`,
          costMessage("estimated rule cost", total, STATIC_RULE_COST_LIMIT),
        ),
      );
    }
    state.total = Math.min(Number.MAX_SAFE_INTEGER, state.total + total);
    state.expensive.push({ path: `${rulePath}.rule`, cost: total });
    state.expensive.sort((x, y) => y.cost - x.cost);
    state.expensive.length = Math.min(state.expensive.length, 4);
    node.rules.push(compiled);
  });
  if (node.rules.length > 0) {
    const asts = node.rules.flatMap((r) =>
      r.messageProgram ? [r.program.ast, r.messageProgram.ast] : [r.program.ast],
    );
    const selfFields = fieldsRead(asts, "self");
    const oldSelfFields = fieldsRead(asts, "oldSelf");
    if (selfFields) node.selfFields = selfFields;
    if (oldSelfFields) node.oldSelfFields = oldSelfFields;
    const selfPicks = picksOf(s, selfFields);
    const oldSelfPicks = picksOf(s, oldSelfFields);
    if (selfPicks) node.selfPicks = selfPicks;
    if (oldSelfPicks) node.oldSelfPicks = oldSelfPicks;
  }
  let any = node.rules.length > 0;
  if (s.properties) {
    const correlatable = uncorrelatable;
    for (const [k, p] of Object.entries(s.properties)) {
      const child = compileNode(
        p,
        join(path, `properties[${k}]`),
        false,
        cardinality,
        correlatable,
        state,
      );
      if (child) {
        node.properties ??= new Map();
        node.properties.set(k, child);
        any = true;
      }
    }
  }
  if (isObject(s.additionalProperties)) {
    const ap = s.additionalProperties as Schema;
    const child = compileNode(
      ap,
      join(path, "additionalProperties"),
      false,
      cardinality * maxSize(s),
      uncorrelatable,
      state,
    );
    if (child) {
      node.additionalProperties = child;
      any = true;
    }
  }
  if (s.items) {
    const mapList = s["x-kubernetes-list-type"] === "map";
    const child = compileNode(
      s.items,
      join(path, "items"),
      false,
      cardinality * maxSize(s),
      uncorrelatable ?? (mapList ? undefined : path),
      state,
    );
    if (child) {
      node.items = child;
      any = true;
    }
  }
  return any ? node : undefined;
}

function compileRule(
  rule: ValidationRule,
  s: Schema,
  root: boolean,
  rulePath: string,
  uncorrelatable: string | undefined,
  state: WalkState,
): CompiledRule | undefined {
  const src = rule.rule ?? "";
  const trimmed = src.trim();
  const msg = rule.message ?? "";
  if (trimmed === "") {
    state.issues.push(fieldErrors.required(`${rulePath}.rule`, "rule is not specified"));
    return undefined;
  }
  if (msg.length > 0 && msg.trim() === "") {
    state.issues.push(
      fieldErrors.invalid(`${rulePath}.message`, msg, "must be non-empty if specified"),
    );
    return undefined;
  }
  if (/[\n\r]/.test(msg.trim())) {
    state.issues.push(
      fieldErrors.invalid(`${rulePath}.message`, msg, "must not contain line breaks"),
    );
    return undefined;
  }
  if (/[\n\r]/.test(trimmed) && msg.trim() === "") {
    state.issues.push(
      fieldErrors.required(
        `${rulePath}.message`,
        "message must be specified if rule contains line breaks",
      ),
    );
    return undefined;
  }
  if (rule.messageExpression !== undefined && rule.messageExpression.trim() === "") {
    state.issues.push(
      fieldErrors.required(
        `${rulePath}.messageExpression`,
        "messageExpression must be non-empty if specified",
      ),
    );
    return undefined;
  }
  const reasons = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
  ];
  if (rule.reason !== undefined && !reasons.includes(rule.reason)) {
    state.issues.push(fieldErrors.notSupported(`${rulePath}.reason`, rule.reason, reasons));
    return undefined;
  }
  let fieldPath: string | undefined;
  if (rule.fieldPath !== undefined && rule.fieldPath !== "") {
    fieldPath = parseRuleFieldPath(rule.fieldPath.trim(), s);
    if (!fieldPath) {
      state.issues.push(
        fieldErrors.invalid(`${rulePath}.fieldPath`, rule.fieldPath, "must be a valid path"),
      );
      return undefined;
    }
  }
  const selfType = celType(s);
  const optional = rule.optionalOldSelf === true;
  const env = environmentFor(selfType, optional ? `optional<${selfType}>` : selfType);
  let program: ParseResult;
  let cost: number;
  try {
    program = env.parse(src);
    const checked = program.check();
    if (!checked.valid) throw checked.error;
    const pattern = literalPatternIssue(program.ast);
    if (pattern?.kind === "compile") throw new CompileIssue(pattern.message, pattern.offset);
    if (checked.type !== "bool" && checked.type !== "dyn") {
      state.issues.push(
        fieldErrors.invalid(
          `${rulePath}.rule`,
          ruleValue(rule),
          "cel expression must evaluate to a bool",
        ),
      );
      return undefined;
    }
    if (pattern?.kind === "program") {
      state.issues.push(
        fieldErrors.invalid(
          `${rulePath}.rule`,
          ruleValue(rule),
          `program instantiation failed: ${pattern.message}`,
        ),
      );
      return undefined;
    }
    useRe2Matches(program.ast);
    cost = estimate(program.ast, s, root, new Map()).cost;
  } catch (err) {
    const detail =
      err instanceof CompileIssue
        ? formatCompileError(src, err.message, err.offset)
        : formatCompileError(src, errorSummary(err), errorOffset(err));
    state.issues.push(
      fieldErrors.invalid(`${rulePath}.rule`, ruleValue(rule), `compilation failed: ${detail}`),
    );
    return undefined;
  }
  const usesOldSelf = usesName(program.ast, "oldSelf");
  if (usesOldSelf && uncorrelatable !== undefined) {
    state.issues.push(
      fieldErrors.invalid(
        `${rulePath}.rule`,
        src,
        `oldSelf cannot be used on the uncorrelatable portion of the schema within ${uncorrelatable}`,
      ),
    );
    return undefined;
  }
  if (!usesOldSelf && rule.optionalOldSelf !== undefined) {
    state.issues.push(
      fieldErrors.invalid(
        `${rulePath}.optionalOldSelf`,
        rule.optionalOldSelf,
        "may not be set if oldSelf is not used in rule",
      ),
    );
    return undefined;
  }
  let messageProgram: ParseResult | undefined;
  if (rule.messageExpression) {
    const mexpr = rule.messageExpression;
    try {
      messageProgram = env.parse(mexpr);
      const checked = messageProgram.check();
      if (!checked.valid) throw checked.error;
      const pattern = literalPatternIssue(messageProgram.ast);
      if (pattern?.kind === "compile") throw new CompileIssue(pattern.message, pattern.offset);
      if (pattern?.kind === "program")
        throw new Error(`program instantiation failed: ${pattern.message}`);
      useRe2Matches(messageProgram.ast);
      if (checked.type !== "string" && checked.type !== "dyn") {
        state.issues.push(
          fieldErrors.invalid(
            `${rulePath}.messageExpression`,
            ruleValue(rule),
            "messageExpression must evaluate to a string",
          ),
        );
        return undefined;
      }
      const mcost = estimate(messageProgram.ast, s, root, new Map()).cost;
      if (mcost > STATIC_RULE_COST_LIMIT) {
        state.issues.push(
          fieldErrors.forbidden(
            `${rulePath}.messageExpression`,
            costMessage("estimated messageExpression cost", mcost, STATIC_RULE_COST_LIMIT),
          ),
        );
      }
    } catch (err) {
      const detail =
        err instanceof CompileIssue
          ? formatCompileError(mexpr, err.message, err.offset)
          : formatCompileError(mexpr, errorSummary(err), errorOffset(err));
      state.issues.push(
        fieldErrors.invalid(
          `${rulePath}.messageExpression`,
          ruleValue(rule),
          `messageExpression compilation failed: ${detail}`,
        ),
      );
      return undefined;
    }
  }
  return { rule, program, usesOldSelf, optionalOldSelf: optional, messageProgram, fieldPath, cost };
}
