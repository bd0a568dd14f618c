/**
 * `x-kubernetes-validations`: CEL rules of a CRD schema, compiled once per schema
 * node, with a static cost estimate checked when the CRD is written and a cost
 * meter that cuts off a rule running too long at run time.
 *
 * At run time `self` is the value at the rule's node (converted to CEL values by
 * the schema: integers are CEL ints, `date-time` strings timestamps, `duration`
 * strings durations, `byte` strings bytes; property names that are not CEL
 * identifiers are escaped as Kubernetes escapes them: `__dash__`, `__dot__`,
 * `__slash__`, `__underscores__`, `__{keyword}__`). `oldSelf` is the stored value
 * at the same node on update, reached through objects and `map` lists only;
 * a rule using `oldSelf` runs only when there is an old value, unless it sets
 * `optionalOldSelf` (then `oldSelf` is an optional).
 *
 * Costs: the static estimate multiplies each node's cost by the largest sizes its
 * inputs can have (maxItems, maxLength, maxProperties, or what fits in a request),
 * and by how many times the rule can run (the sizes of the lists and maps above
 * it). At run time every evaluated expression node counts one, and functions
 * whose work grows with their input count their input size.
 */
export { AUTHORIZER_TYPE, CelAuthorizer, type Decide } from "./authz.ts";
export { compileSchemaRules, parseRuleFieldPath } from "./compile.ts";
export { celType, meteredEnvironment } from "./environment.ts";
export { validateRules } from "./evaluate.ts";
export {
  COST_BUDGET_MESSAGE,
  MAX_MESSAGE_EXPRESSION_BYTES,
  MAX_REQUEST_BYTES,
  OBJECT_COST_BUDGET,
  RULE_COST_LIMIT,
  STATIC_RULE_COST_LIMIT,
  STATIC_SCHEMA_COST_LIMIT,
} from "./limits.ts";
export { errorOffset, errorSummary, formatCompileError, ruleValue } from "./messages.ts";
export { type CostMeter, withMeter } from "./meter.ts";
export { CEL_KEYWORDS, ESCAPED_NAMES_CACHE_SIZE, escapeCelName } from "./names.ts";
export type { CelCompilation, CelNode, CelPick, CompiledRule } from "./types.ts";
export { toCel } from "./values.ts";
