/**
 * Running the compiled rules of a schema on an object (and its old version on
 * update), with the runtime cost meter: the causes of the rules that failed.
 */
import type { ParseResult } from "@marcbachmann/cel-js";
import { Optional } from "@marcbachmann/cel-js";
import type { Schema, StatusCause, ValidationRule } from "@setpoint/api";
import { CauseType, fieldErrors } from "@setpoint/api";
import { childPath, declaredProperty, indexPath, isObject, keyPath } from "../paths.ts";
import {
  COST_BUDGET_MESSAGE,
  MAX_MESSAGE_EXPRESSION_BYTES,
  OBJECT_COST_BUDGET,
  RULE_COST_LIMIT,
} from "./limits.ts";
import { errorSummary, ruleErrorString } from "./messages.ts";
import { type CostMeter, withMeter } from "./meter.ts";
import type { CelNode } from "./types.ts";
import { celView } from "./values.ts";

interface EvalState {
  causes: StatusCause[];
  remaining: number;
  stopped: boolean;
}

/**
 * Evaluates every rule of `root` on `obj` (and `old` on update): the causes of
 * the rules that failed, with Kubernetes' messages, field paths and reasons. The
 * evaluation stops with a cause saying COST_BUDGET_MESSAGE when one rule runs
 * past RULE_COST_LIMIT or all together past OBJECT_COST_BUDGET.
 */
export function validateRules(
  obj: unknown,
  old: unknown,
  root: CelNode | undefined,
  budget = OBJECT_COST_BUDGET,
): StatusCause[] {
  if (!root) return [];
  const state: EvalState = { causes: [], remaining: budget, stopped: false };
  walk(obj, old, root, "", state);
  return state.causes;
}

function walk(value: unknown, old: unknown, node: CelNode, path: string, state: EvalState): void {
  if (state.stopped || value === null || value === undefined) return;
  if (node.rules.length > 0) runRules(value, old, node, path, state);
  if (state.stopped) return;
  if (isObject(value)) {
    const oldObj = isObject(old) ? old : undefined;
    if (node.properties) {
      for (const [k, child] of node.properties) {
        if (Object.hasOwn(value, k)) walk(value[k], oldObj?.[k], child, childPath(path, k), state);
        if (state.stopped) return;
      }
    }
    if (node.additionalProperties) {
      for (const k of Object.keys(value)) {
        if (declaredProperty(node.schema, k)) continue;
        walk(value[k], oldObj?.[k], node.additionalProperties, keyPath(path, k), state);
        if (state.stopped) return;
      }
    }
  } else if (Array.isArray(value) && node.items) {
    const keys = node.schema["x-kubernetes-list-map-keys"];
    const oldList = Array.isArray(old) ? old : [];
    const mapList = node.schema["x-kubernetes-list-type"] === "map" && keys && keys.length > 0;
    for (let i = 0; i < value.length; i++) {
      let oldItem: unknown;
      if (mapList) {
        const item = value[i];
        oldItem = oldList.find(
          (o) =>
            isObject(o) &&
            isObject(item) &&
            keys.every((k) => JSON.stringify(o[k]) === JSON.stringify(item[k])),
        );
      }
      walk(value[i], oldItem, node.items, indexPath(path, i), state);
      if (state.stopped) return;
    }
  }
}

function rootView(value: unknown, s: Schema): unknown {
  // At the root, metadata shows only name and generateName, as in Kubernetes.
  if (!isObject(value)) return value;
  const meta = isObject(value.metadata) ? value.metadata : undefined;
  if (!meta) return value;
  const view: Record<string, unknown> = { ...value };
  const m: Record<string, unknown> = {};
  if (meta.name !== undefined) m.name = meta.name;
  if (meta.generateName !== undefined) m.generateName = meta.generateName;
  view.metadata = m;
  void s;
  return view;
}

function runRules(
  value: unknown,
  old: unknown,
  node: CelNode,
  path: string,
  state: EvalState,
): void {
  const s = node.schema;
  const isRoot = path === "";
  let self: unknown;
  let oldSelf: unknown;
  try {
    self = celView(isRoot ? rootView(value, s) : value, s, node.selfFields, node.selfPicks);
    oldSelf =
      old === undefined || old === null
        ? undefined
        : celView(isRoot ? rootView(old, s) : old, s, node.oldSelfFields, node.oldSelfPicks);
  } catch (err) {
    state.causes.push(fieldErrors.invalid(path, s.type ?? "", String((err as Error).message)));
    return;
  }
  for (const cr of node.rules) {
    if (state.remaining <= 0) {
      state.causes.push(
        fieldErrors.invalid(
          path,
          s.type ?? "",
          `${COST_BUDGET_MESSAGE}: validation failed due to running out of cost budget, no further validation rules will be run`,
        ),
      );
      state.stopped = true;
      return;
    }
    if (cr.usesOldSelf && oldSelf === undefined && !cr.optionalOldSelf) continue;
    const ctx = {
      self,
      oldSelf: cr.optionalOldSelf
        ? oldSelf === undefined
          ? Optional.none()
          : Optional.of(oldSelf)
        : oldSelf,
    };
    const limit = Math.min(RULE_COST_LIMIT, state.remaining);
    const m: CostMeter = { cost: 0, limit };
    let result: unknown;
    let error: unknown;
    try {
      result = evaluate(cr.program, ctx, m);
    } catch (err) {
      error = err;
    }
    state.remaining -= m.cost;
    if (m.cost > limit) {
      const why =
        limit < RULE_COST_LIMIT
          ? "validation failed due to running out of cost budget, no further validation rules will be run"
          : `no further validation rules will be run due to call cost exceeds limit for rule: ${ruleErrorString(cr.rule)}`;
      state.causes.push(fieldErrors.invalid(path, s.type ?? "", `${COST_BUDGET_MESSAGE}: ${why}`));
      state.stopped = true;
      return;
    }
    if (error !== undefined) {
      const text = errorSummary(error);
      if (/no (matching|such) overload/.test(text)) {
        state.causes.push(
          fieldErrors.invalid(
            path,
            s.type ?? "",
            `'${text}': call arguments did not match a supported operator, function or macro signature for rule: ${ruleErrorString(cr.rule)}`,
          ),
        );
      } else {
        state.causes.push(
          fieldErrors.invalid(
            path,
            s.type ?? "",
            `${text} evaluating rule: ${ruleErrorString(cr.rule)}`,
          ),
        );
      }
      continue;
    }
    if (result === true) continue;
    if (result !== false) {
      state.causes.push(
        fieldErrors.invalid(
          path,
          s.type ?? "",
          `rule did not evaluate to a bool: ${ruleErrorString(cr.rule)}`,
        ),
      );
      continue;
    }
    let detail: string | undefined;
    if (cr.messageProgram) detail = messageFrom(cr.messageProgram, ctx, state);
    if (detail === undefined)
      detail = cr.rule.message?.trim() || `failed rule: ${ruleErrorString(cr.rule)}`;
    const at = cr.fieldPath ? childPath(path, cr.fieldPath) : path;
    state.causes.push(failureCause(at, value, s, detail, cr.rule.reason));
  }
}

function evaluate(program: ParseResult, ctx: Record<string, unknown>, m: CostMeter): unknown {
  return withMeter(m, program, ctx);
}

function messageFrom(
  program: ParseResult,
  ctx: Record<string, unknown>,
  state: EvalState,
): string | undefined {
  const m: CostMeter = { cost: 0, limit: Math.min(RULE_COST_LIMIT, state.remaining) };
  try {
    const out = evaluate(program, ctx, m);
    state.remaining -= m.cost;
    if (typeof out !== "string") return undefined;
    const text = out.trim();
    if (text === "" || /\n/.test(text) || Buffer.byteLength(text) > MAX_MESSAGE_EXPRESSION_BYTES)
      return undefined;
    return text;
  } catch {
    state.remaining -= m.cost;
    return undefined;
  }
}

function failureCause(
  path: string,
  value: unknown,
  s: Schema,
  detail: string,
  reason: ValidationRule["reason"],
): StatusCause {
  const shown = isObject(value) ? "object" : Array.isArray(value) ? "array" : value;
  switch (reason) {
    case "FieldValueForbidden":
      return fieldErrors.forbidden(path, detail);
    case "FieldValueRequired":
      return fieldErrors.required(path, detail);
    case "FieldValueDuplicate":
      return fieldErrors.duplicate(path, shown);
    default:
      void s;
      return { ...fieldErrors.invalid(path, shown, detail), reason: CauseType.Invalid };
  }
}
