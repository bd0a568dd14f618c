/**
 * The CEL of ValidatingAdmissionPolicies: one environment (the one custom
 * resources' rules use, with its Kubernetes library and cost meter) declaring
 * `object`, `oldObject`, `request`, `namespaceObject`, `variables`, `authorizer`
 * (Kubernetes' authorizer library, crd/cel/authz.ts, backed by the server's
 * authorizers) and, when the policy has a paramKind, `params`. Expressions are
 * compiled once per text and environment; each evaluation is metered with the
 * per-expression cost limit of custom resources' rules. Webhooks' matchConditions
 * do not have `authorizer` yet.
 */
import type { ParseResult } from "@marcbachmann/cel-js";
import {
  AUTHORIZER_TYPE,
  type CostMeter,
  errorOffset,
  errorSummary,
  formatCompileError,
  meteredEnvironment,
  RULE_COST_LIMIT,
  withMeter,
} from "../../crd/cel/index.ts";

/** What an expression must evaluate to. */
export type Expected = "bool" | "string" | "any";

const BASE = {
  object: "dyn",
  oldObject: "dyn",
  request: "dyn",
  namespaceObject: "dyn",
  variables: "dyn",
  authorizer: AUTHORIZER_TYPE,
};
const WITH_PARAMS = { ...BASE, params: "dyn" };

const compiled = new Map<string, ParseResult>();
const MAX_COMPILED = 2_000;

/** A compile error: its message is cel-go's (`compilation failed: ERROR: <input>:1:2: ...`). */
export class CompileError extends Error {}

/** The program of `expression`; throws a CompileError. */
export function compilePolicyExpression(
  expression: string,
  hasParams: boolean,
  expected: Expected,
): ParseResult {
  const key = `${hasParams ? "p" : "-"}${expected[0]}${expression}`;
  const hit = compiled.get(key);
  if (hit) return hit;
  const env = meteredEnvironment(hasParams ? WITH_PARAMS : BASE);
  let program: ParseResult;
  try {
    program = env.parse(expression);
    const checked = program.check();
    if (!checked.valid) throw checked.error;
    if (expected !== "any" && checked.type !== expected && checked.type !== "dyn") {
      throw new CompileError(`must evaluate to ${expected}`);
    }
  } catch (err) {
    if (err instanceof CompileError) throw err;
    throw new CompileError(
      `compilation failed: ${formatCompileError(expression, errorSummary(err), errorOffset(err))}`,
    );
  }
  if (compiled.size >= MAX_COMPILED) compiled.clear();
  compiled.set(key, program);
  return program;
}

/** The activation of one evaluation (values already CEL values, `variables` lazy). */
export type Activation = Record<string, unknown>;

/** Runs `program` under a fresh meter with the per-expression limit; throws its error. */
export function runMetered(program: ParseResult, activation: Activation): unknown {
  const meter: CostMeter = { cost: 0, limit: RULE_COST_LIMIT };
  return withMeter(meter, program, activation);
}

/** The one-line text of an evaluation error. */
export function evaluationError(err: unknown): string {
  return errorSummary(err);
}

/**
 * The `variables` of an activation: each computed on first use (in the
 * activation it belongs to, so later variables can read earlier ones) and kept;
 * a variable whose expression fails fails every expression that reads it.
 */
export function lazyVariables(
  defs: readonly { name: string; program: ParseResult | Error }[],
  activation: Activation,
): Record<string, unknown> {
  const vars = Object.create(null) as Record<string, unknown>;
  for (const d of defs) {
    let done = false;
    let value: unknown;
    let failure: Error | undefined;
    Object.defineProperty(vars, d.name, {
      enumerable: true,
      get() {
        if (!done) {
          done = true;
          try {
            if (d.program instanceof Error) throw d.program;
            value = runMetered(d.program, activation);
          } catch (err) {
            failure = new Error(
              `composited variable "${d.name}" fails to compile or evaluate: ${evaluationError(err)}`,
            );
          }
        }
        if (failure) throw failure;
        return value;
      },
    });
  }
  return vars;
}

/** The parsed form (AST) of an expression, for the type checker; throws a CompileError. */
export function policyExpressionAst(expression: string, hasParams: boolean): unknown {
  return (compilePolicyExpression(expression, hasParams, "any") as { ast?: unknown }).ast;
}
