/** The bounds CEL validation rules run within, as Kubernetes sets them. */

/** Largest estimated cost of one rule (Kubernetes' StaticEstimatedCostLimit). */
export const STATIC_RULE_COST_LIMIT = 10_000_000;
/** Largest estimated cost of all rules of one schema (StaticEstimatedCRDCostLimit). */
export const STATIC_SCHEMA_COST_LIMIT = 100_000_000;
/** Largest actual cost of one rule evaluation (Kubernetes' PerCallLimit). */
export const RULE_COST_LIMIT = 1_000_000;
/** Largest actual cost of all rule evaluations for one object (RuntimeCELCostBudget). */
export const OBJECT_COST_BUDGET = 10_000_000;
/** Request size the estimate assumes for values without maxItems/maxLength/maxProperties. */
export const MAX_REQUEST_BYTES = 3 * 1024 * 1024;
/** Longest message a messageExpression may produce. */
export const MAX_MESSAGE_EXPRESSION_BYTES = 5 * 1024;

/** The message every runtime cost cut-off carries. */
export const COST_BUDGET_MESSAGE = "validation rule exceeded its cost budget";
