/**
 * A webhook's `matchConditions`, as Kubernetes defines them: CEL expressions over
 * `object`, `oldObject` and `request` (the AdmissionRequest the webhook would be
 * sent), each of which must hold for the webhook to be called. Checked when a
 * configuration is written (at most 64, names unique qualified names, each
 * expression compiles to a bool), and evaluated on every write the webhook's rules
 * match: any false skips the webhook; all true call it; an error (with none false)
 * is the webhook's failure, under its failurePolicy. Evaluation is metered with the
 * per-expression cost limit custom resources' rules have.
 */
import type { ParseResult } from "@marcbachmann/cel-js";
import { fieldErrors, type StatusCause } from "@setpoint/api";
import {
  type CostMeter,
  errorOffset,
  errorSummary,
  formatCompileError,
  meteredEnvironment,
  RULE_COST_LIMIT,
  toCel,
  withMeter,
} from "../../crd/cel/index.ts";
import { invalid, qualifiedNameErrors, required } from "../causes.ts";
import { CompileError, compilePolicyExpression } from "./policy-cel.ts";

export interface MatchCondition {
  name: string;
  expression: string;
}

/** Most conditions a webhook may have. */
export const MAX_MATCH_CONDITIONS = 64;

const VARIABLES = { object: "dyn", oldObject: "dyn", request: "dyn" };

/** Compiled programs by expression (configurations are read on every write). */
const compiled = new Map<string, ParseResult>();
const MAX_COMPILED = 1_000;

/** The program of `expression`; throws the compile error in cel-go's shape. */
function compile(expression: string): ParseResult {
  const hit = compiled.get(expression);
  if (hit) return hit;
  const env = meteredEnvironment(VARIABLES);
  let program: ParseResult;
  try {
    program = env.parse(expression);
    const checked = program.check();
    if (!checked.valid) throw checked.error;
    if (checked.type !== "bool" && checked.type !== "dyn") {
      throw new TypeError("must evaluate to bool");
    }
  } catch (err) {
    if (err instanceof TypeError && err.message === "must evaluate to bool") throw err;
    throw new Error(
      `compilation failed: ${formatCompileError(expression, errorSummary(err), errorOffset(err))}`,
    );
  }
  if (compiled.size >= MAX_COMPILED) compiled.clear();
  compiled.set(expression, program);
  return program;
}

/**
 * The causes of a webhook's matchConditions (at `at`, e.g. webhooks[0].matchConditions);
 * with `policyParams` set, of a ValidatingAdmissionPolicy's (compiled in its
 * environment, with `params` when it is true).
 */
export function validateMatchConditions(
  conditions: unknown,
  at: string,
  policyParams?: boolean,
): StatusCause[] {
  if (conditions === undefined || conditions === null) return [];
  const list = Array.isArray(conditions) ? (conditions as Record<string, unknown>[]) : [];
  const causes: StatusCause[] = [];
  if (list.length > MAX_MATCH_CONDITIONS) {
    causes.push(fieldErrors.tooMany(at, list.length, MAX_MATCH_CONDITIONS));
  }
  const seen = new Set<string>();
  list.forEach((c, i) => {
    const here = `${at}[${i}]`;
    const name = typeof c?.name === "string" ? c.name : "";
    const nameErrors = name ? qualifiedNameErrors(name) : [];
    if (!name) causes.push(required(`${here}.name`));
    else if (nameErrors.length > 0) {
      causes.push(invalid(`${here}.name`, name, nameErrors.join("; ")));
    } else if (seen.has(name)) causes.push(fieldErrors.duplicate(`${here}.name`, name));
    seen.add(name);
    const expression = typeof c?.expression === "string" ? c.expression : "";
    if (!expression.trim()) {
      causes.push(required(`${here}.expression`));
      return;
    }
    try {
      if (policyParams === undefined) compile(expression);
      else compilePolicyExpression(expression, policyParams, "bool");
    } catch (err) {
      if (policyParams !== undefined && !(err instanceof CompileError)) throw err;
      causes.push(invalid(`${here}.expression`, expression, (err as Error).message));
    }
  });
  return causes;
}

/** What a webhook's conditions say of a write. */
export type MatchVerdict = { call: true } | { call: false } | { error: string };

/** Evaluates the conditions on a write (see the module comment for the verdicts). */
export function evaluateMatchConditions(
  conditions: readonly MatchCondition[] | undefined,
  vars: { object: unknown; oldObject: unknown; request: unknown },
): MatchVerdict {
  if (!conditions?.length) return { call: true };
  const ctx = {
    object: toCel(vars.object, undefined),
    oldObject: toCel(vars.oldObject, undefined),
    request: toCel(vars.request, undefined),
  };
  const errors: string[] = [];
  for (const c of conditions) {
    const meter: CostMeter = { cost: 0, limit: RULE_COST_LIMIT };
    try {
      const result = withMeter(meter, compile(c.expression), ctx);
      if (result === false) return { call: false };
      if (result !== true) errors.push(`expression '${c.name}' resulted in a non-bool value`);
    } catch (err) {
      errors.push(`expression '${c.name}' resulted in error: ${errorSummary(err)}`);
    }
  }
  return errors.length > 0 ? { error: errors.join(", ") } : { call: true };
}
