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
import type { Environment, ParseResult } from "@marcbachmann/cel-js";
import { Optional } from "@marcbachmann/cel-js";
import type { Schema, ValidationRule } from "@setpoint/api";
import { CauseType, fieldErrors, type StatusCause } from "@setpoint/api";
import { COST_EXCEEDED, type CostMeter, kubernetesEnvironment, withMeter } from "./celib.ts";
import { childPath, declaredProperty, indexPath, isObject, keyPath } from "./paths.ts";

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
/** Deepest value converted to CEL (deeper values are refused by the size limits first). */
const MAX_CONVERT_DEPTH = 128;

/** The message every runtime cost cut-off carries. */
export const COST_BUDGET_MESSAGE = "validation rule exceeded its cost budget";

const CEL_KEYWORDS = new Set([
  "true",
  "false",
  "null",
  "in",
  "as",
  "break",
  "const",
  "continue",
  "else",
  "for",
  "function",
  "if",
  "import",
  "let",
  "loop",
  "package",
  "namespace",
  "return",
  "var",
  "void",
  "while",
]);

/**
 * A property name as CEL rules refer to it, or undefined when it cannot be
 * referred to (Kubernetes' escaping).
 */
export function escapeCelName(name: string): string | undefined {
  if (escaped.has(name)) return escaped.get(name);
  const out = escapeUncached(name);
  if (escaped.size >= ESCAPED_NAMES_CACHE_SIZE) escaped.clear();
  escaped.set(name, out);
  return out;
}

/** Property names whose CEL spelling is remembered at most (the memory is emptied when full). */
export const ESCAPED_NAMES_CACHE_SIZE = 10_000;
const escaped = new Map<string, string | undefined>();

function escapeUncached(name: string): string | undefined {
  if (CEL_KEYWORDS.has(name)) return `__${name}__`;
  if (!/^[a-zA-Z_.\-/][a-zA-Z0-9_.\-/]*$/.test(name)) return undefined;
  return name
    .replace(/__/g, "__underscores__")
    .replace(/\./g, "__dot__")
    .replace(/-/g, "__dash__")
    .replace(/\//g, "__slash__");
}

// ---------------------------------------------------------------------------
// Environments: one per pair of declared types of self and oldSelf.

interface Evaluator {
  run(ast: unknown, ctx: unknown): unknown;
}

let base: Environment | undefined;
let probed: Evaluator | undefined;
const environments = new Map<string, Environment>();
let meter: CostMeter | undefined;

function baseEnvironment(): Environment {
  if (!base) {
    base = kubernetesEnvironment();
    base.registerFunction("__setpointMeterProbe(): bool", function (this: Evaluator) {
      probed = this;
      return true;
    });
  }
  return base;
}

/**
 * An environment with `self` and `oldSelf` declared. Its evaluator is metered:
 * every expression node it evaluates counts one against the running meter.
 */
function environmentFor(selfType: string, oldType: string): Environment {
  const key = `${selfType}|${oldType}`;
  const hit = environments.get(key);
  if (hit) return hit;
  const env = baseEnvironment()
    .clone()
    .registerVariable("self", selfType)
    .registerVariable("oldSelf", oldType);
  probed = undefined;
  env.evaluate("__setpointMeterProbe()", {});
  const ev = probed as Evaluator | undefined;
  if (!ev || typeof ev.run !== "function") throw new Error("CEL evaluator cannot be metered");
  const run = ev.run;
  ev.run = function metered(this: Evaluator, ast: unknown, ctx: unknown) {
    const m = meter;
    if (m !== undefined && ++m.cost > m.limit) throw COST_EXCEEDED;
    return run.call(this, ast, ctx);
  };
  environments.set(key, env);
  return env;
}

/** The CEL type a schema node's values have. */
export function celType(s: Schema | undefined): string {
  if (!s || s["x-kubernetes-int-or-string"] || s["x-kubernetes-embedded-resource"]) return "dyn";
  switch (s.type) {
    case "string":
      if (s.format === "byte") return "bytes";
      if (s.format === "duration") return "google.protobuf.Duration";
      if (s.format === "date" || s.format === "date-time") return "google.protobuf.Timestamp";
      return "string";
    case "integer":
      return "int";
    case "number":
      return "double";
    case "boolean":
      return "bool";
    case "array":
      return s.items && !s.items.nullable ? `list<${celType(s.items)}>` : "list<dyn>";
    case "object":
      if (isObject(s.additionalProperties) && !s.properties) {
        const v = s.additionalProperties as Schema;
        return `map<string, ${v.nullable ? "dyn" : celType(v)}>`;
      }
      return s.properties ? "map<string, dyn>" : "dyn";
    default:
      return "dyn";
  }
}

// ---------------------------------------------------------------------------
// Values: JSON to CEL.

const durationParser = (() => {
  let p: ParseResult | undefined;
  return () => {
    if (!p) p = baseEnvironment().clone().registerVariable("s", "string").parse("duration(s)");
    return p;
  };
})();

function plainObject(): Record<string, unknown> {
  return Object.create(null) as Record<string, unknown>;
}

/** Converts a JSON value to the CEL value a rule sees, guided by its schema. */
export function toCel(v: unknown, s: Schema | undefined, depth = 0): unknown {
  if (v === null || v === undefined) return null;
  if (depth > MAX_CONVERT_DEPTH) throw new Error("value nested too deeply");
  if (typeof v === "number") {
    if (s?.type === "number") return v;
    return Number.isInteger(v) ? BigInt(v) : v;
  }
  if (typeof v === "string") {
    if (s?.type === "string") {
      if ((s.format === "date-time" || s.format === "date") && !Number.isNaN(Date.parse(v))) {
        return new Date(v);
      }
      if (s.format === "byte") return Uint8Array.from(Buffer.from(v, "base64"));
      if (s.format === "duration") {
        try {
          return durationParser()({ s: v });
        } catch {
          return v;
        }
      }
    }
    return v;
  }
  if (typeof v !== "object") return v;
  if (Array.isArray(v)) return v.map((x) => toCel(x, s?.items, depth + 1));
  return celObject(v as Record<string, unknown>, s, depth, undefined);
}

/**
 * The CEL map of an object; with `only`, just the fields of those (CEL) names, for
 * rules that read nothing else of it.
 */
function celObject(
  obj: Record<string, unknown>,
  s: Schema | undefined,
  depth: number,
  only: ReadonlySet<string> | undefined,
): Record<string, unknown> {
  const out = plainObject();
  const extra = isObject(s?.additionalProperties) ? (s?.additionalProperties as Schema) : undefined;
  for (const k of Object.keys(obj)) {
    const prop = declaredProperty(s, k);
    let name: string | undefined;
    let schema: Schema | undefined;
    if (prop) {
      name = escapeCelName(k);
      schema = prop;
    } else if (extra) {
      name = k;
      schema = extra;
    } else if (!s?.properties || s["x-kubernetes-preserve-unknown-fields"]) {
      name = k;
    }
    if (name === undefined || (only !== undefined && !only.has(name))) continue;
    out[name] = toCel(obj[k], schema, depth + 1);
  }
  return out;
}

/** A declared field a node's rules read: its JSON name, its CEL name and its schema. */
export interface CelPick {
  key: string;
  name: string;
  schema: Schema;
}

/**
 * The declared fields of `s` whose CEL names are in `only`, when those are all of
 * an object's members celObject(obj, s, 0, only) can keep (the schema declares
 * properties, no additionalProperties and keeps no unknown fields, and no two
 * fields share a CEL name); undefined otherwise.
 */
function picksOf(s: Schema, only: ReadonlySet<string> | undefined): CelPick[] | undefined {
  if (only === undefined || !s.properties || s["x-kubernetes-preserve-unknown-fields"]) {
    return undefined;
  }
  if (isObject(s.additionalProperties)) return undefined;
  const picks: CelPick[] = [];
  const names = new Set<string>();
  for (const [key, schema] of Object.entries(s.properties)) {
    const name = escapeCelName(key);
    if (name === undefined) continue;
    if (names.has(name)) return undefined;
    names.add(name);
    if (only.has(name)) picks.push({ key, name, schema });
  }
  return picks;
}

/**
 * `v` as a rule sees it, converting only the fields `only` names when it is an
 * object (just the `picks`, when given: picksOf(s, only)).
 */
function celView(
  v: unknown,
  s: Schema,
  only: ReadonlySet<string> | undefined,
  picks: readonly CelPick[] | undefined,
): unknown {
  if (only === undefined || !isObject(v)) return toCel(v, s);
  if (picks === undefined) return celObject(v, s, 0, only);
  const out = plainObject();
  for (const p of picks) if (Object.hasOwn(v, p.key)) out[p.name] = toCel(v[p.key], p.schema, 1);
  return out;
}

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

// ---------------------------------------------------------------------------
// Compilation and static cost.

/** A compiled rule of a schema node. */
export interface CompiledRule {
  rule: ValidationRule;
  program: ParseResult;
  usesOldSelf: boolean;
  optionalOldSelf: boolean;
  messageProgram?: ParseResult;
  /** Normalized `fieldPath` (e.g. "replicas" or "spec.replicas"), if given. */
  fieldPath?: string;
  /** Estimated cost of one evaluation. */
  cost: number;
}

/** The rules of a schema node and of the nodes below it that have rules. */
export interface CelNode {
  schema: Schema;
  rules: CompiledRule[];
  /** The fields of self the rules read, when that is all they read of it. */
  selfFields?: ReadonlySet<string>;
  /** The same for oldSelf. */
  oldSelfFields?: ReadonlySet<string>;
  /** The declared fields self's view is made of, when known at compile time (picksOf). */
  selfPicks?: CelPick[];
  /** The same for oldSelf. */
  oldSelfPicks?: CelPick[];
  properties?: Map<string, CelNode>;
  additionalProperties?: CelNode;
  items?: CelNode;
}

/** The compiled rules of a whole schema, with the problems found compiling them. */
export interface CelCompilation {
  root?: CelNode;
  /** Causes naming the schema path of each bad rule (e.g. `<base>.x-kubernetes-validations[0].rule`). */
  issues: StatusCause[];
  /** Sum of every rule's estimated cost times how often it can run. */
  totalCost: number;
}

class CompileIssue extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

interface Est {
  cost: number;
  size: number;
  schema?: Schema;
}

function minSize(s: Schema | undefined): number {
  if (!s) return 2;
  switch (s.type) {
    case "string":
      return 3;
    case "object":
    case "array":
      return 3;
    case "boolean":
      return 5;
    default:
      return 2;
  }
}

/** The largest number of elements (lists, maps) or characters (strings) a value can have. */
function maxSize(s: Schema | undefined): number {
  if (!s) return Math.floor(MAX_REQUEST_BYTES / 2);
  if (s.type === "array") return s.maxItems ?? Math.floor(MAX_REQUEST_BYTES / minSize(s.items));
  if (s.type === "string") return s.maxLength ?? MAX_REQUEST_BYTES;
  if (s.type === "object") {
    if (isObject(s.additionalProperties)) {
      return (
        s.maxProperties ??
        Math.floor(MAX_REQUEST_BYTES / (minSize(s.additionalProperties as Schema) + 3))
      );
    }
    if (s.properties && !s["x-kubernetes-preserve-unknown-fields"]) {
      return Object.keys(s.properties).length;
    }
    return s.maxProperties ?? Math.floor(MAX_REQUEST_BYTES / 5);
  }
  return 1;
}

const ROOT_META = new Set(["apiVersion", "kind", "metadata"]);
const COMPREHENSIONS = new Set(["all", "exists", "exists_one", "map", "filter"]);
const STRING_FUNCTIONS = new Set([
  "matches",
  "contains",
  "startsWith",
  "endsWith",
  "find",
  "findAll",
  "replace",
  "split",
  "lowerAscii",
  "upperAscii",
  "trim",
  "reverse",
  "indexOf",
  "lastIndexOf",
  "substring",
]);
const LIST_FUNCTIONS = new Set(["isSorted", "sum", "min", "max", "join", "indexOf", "lastIndexOf"]);

interface AstNode {
  op: string;
  args: unknown;
  start?: number;
  pos?: number;
}

function isAst(v: unknown): v is AstNode {
  return typeof v === "object" && v !== null && "op" in v;
}

function fieldOf(s: Schema | undefined, name: string, root: boolean): Schema | undefined | null {
  if (!s) return undefined;
  if (s.properties) {
    for (const [k, p] of Object.entries(s.properties)) if (escapeCelName(k) === name) return p;
  }
  if (isObject(s.additionalProperties)) return s.additionalProperties as Schema;
  if (root && ROOT_META.has(name)) return undefined;
  if (s["x-kubernetes-preserve-unknown-fields"] || s["x-kubernetes-embedded-resource"]) {
    return undefined;
  }
  if (s.type === "object" && s.properties) return null;
  return undefined;
}

/** Static cost of an expression, and the schema/size of its result where known. */
function estimate(
  n: unknown,
  selfSchema: Schema,
  root: boolean,
  scope: Map<string, Schema | undefined>,
): Est {
  if (!isAst(n)) return { cost: 0, size: 1 };
  const a = n.args as unknown[];
  const sumOf = (xs: unknown[]) =>
    xs.reduce((t: number, x) => t + estimate(x, selfSchema, root, scope).cost, 0);
  switch (n.op) {
    case "value": {
      const v = n.args;
      return { cost: 0, size: typeof v === "string" ? v.length : 1 };
    }
    case "id": {
      const name = String(n.args);
      if (scope.has(name)) {
        const s = scope.get(name);
        return { cost: 1, size: maxSize(s), schema: s };
      }
      if (name === "self" || name === "oldSelf") {
        return { cost: 1, size: maxSize(selfSchema), schema: selfSchema };
      }
      return { cost: 1, size: 1 };
    }
    case ".":
    case ".?": {
      const obj = estimate(a[0], selfSchema, root, scope);
      const name = String(a[1]);
      const isRootSelf =
        isAst(a[0]) && a[0].op === "id" && (a[0].args === "self" || a[0].args === "oldSelf");
      const child = fieldOf(obj.schema, name, root && isRootSelf);
      if (child === null) {
        const end = (n as { end?: number }).end;
        const at = typeof end === "number" ? end - name.length - 1 : (n.start ?? 0);
        throw new CompileIssue(`undefined field '${name}'`, at);
      }
      return { cost: obj.cost + 1, size: maxSize(child), schema: child };
    }
    case "[]":
    case "[?]": {
      const obj = estimate(a[0], selfSchema, root, scope);
      const idx = estimate(a[1], selfSchema, root, scope);
      const s = obj.schema;
      const child =
        s?.type === "array"
          ? s.items
          : isObject(s?.additionalProperties)
            ? (s?.additionalProperties as Schema)
            : undefined;
      return { cost: obj.cost + idx.cost + 1, size: maxSize(child), schema: child };
    }
    case "rcall": {
      const name = String(a[0]);
      const recv = estimate(a[1], selfSchema, root, scope);
      const args = a[2] as unknown[];
      if (COMPREHENSIONS.has(name) && isAst(args[0]) && args[0].op === "id") {
        const s = recv.schema;
        const elem =
          s?.type === "array"
            ? s.items
            : s?.type === "object"
              ? ({ type: "string" } as Schema)
              : undefined;
        const inner = new Map(scope);
        inner.set(String(args[0].args), elem);
        const body = args
          .slice(1)
          .reduce((t: number, x) => t + estimate(x, selfSchema, root, inner).cost, 0);
        return { cost: recv.cost + recv.size * (body + 1) + 1, size: recv.size };
      }
      let extra = 0;
      if (STRING_FUNCTIONS.has(name) && recv.schema?.type !== "array")
        extra = Math.ceil(recv.size / 10);
      else if (LIST_FUNCTIONS.has(name)) extra = recv.size;
      const sameSchema = name === "value" || name === "orValue";
      return {
        cost: recv.cost + sumOf(args) + extra + 1,
        size: sameSchema ? recv.size : name === "split" || name === "findAll" ? recv.size : 1,
        schema: sameSchema ? recv.schema : undefined,
      };
    }
    case "call": {
      const name = String(a[0]);
      const args = a[1] as unknown[];
      if (name === "has") return { cost: sumOf(args) + 1, size: 1 };
      if (name.endsWith("contains") || name.endsWith("equivalent") || name.endsWith("intersects")) {
        const sizes = args.map((x) => estimate(x, selfSchema, root, scope).size);
        return { cost: sumOf(args) + sizes.reduce((t, x) => t * x, 1) + 1, size: 1 };
      }
      return { cost: sumOf(args) + 1, size: 1 };
    }
    case "list":
      return { cost: sumOf(a) + 1, size: a.length };
    case "map":
      return { cost: a.reduce((t: number, e) => t + sumOf(e as unknown[]), 0) + 1, size: a.length };
    case "?:": {
      const c = estimate(a[0], selfSchema, root, scope);
      const l = estimate(a[1], selfSchema, root, scope);
      const r = estimate(a[2], selfSchema, root, scope);
      return { cost: c.cost + Math.max(l.cost, r.cost) + 1, size: Math.max(l.size, r.size) };
    }
    case "+": {
      const l = estimate(a[0], selfSchema, root, scope);
      const r = estimate(a[1], selfSchema, root, scope);
      return {
        cost: l.cost + r.cost + Math.ceil((l.size + r.size) / 10) + 1,
        size: l.size + r.size,
      };
    }
    case "==":
    case "!=": {
      const l = estimate(a[0], selfSchema, root, scope);
      const r = estimate(a[1], selfSchema, root, scope);
      return { cost: l.cost + r.cost + Math.ceil(Math.min(l.size, r.size) / 10) + 1, size: 1 };
    }
    case "in": {
      const l = estimate(a[0], selfSchema, root, scope);
      const r = estimate(a[1], selfSchema, root, scope);
      return { cost: l.cost + r.cost + r.size + 1, size: 1 };
    }
    default: {
      const parts = Array.isArray(a) ? a : [n.args];
      return { cost: sumOf(parts) + 1, size: 1 };
    }
  }
}

function usesName(n: unknown, name: string): boolean {
  if (Array.isArray(n)) return n.some((x) => usesName(x, name));
  if (!isAst(n)) return false;
  if (n.op === "id") return n.args === name;
  return usesName(n.args, name);
}

function lineCol(src: string, offset: number): { line: number; col: number; text: string } {
  const before = src.slice(0, offset);
  const line = before.split("\n").length;
  const lineStart = before.lastIndexOf("\n") + 1;
  const lineEnd = src.indexOf("\n", lineStart);
  return {
    line,
    col: offset - lineStart + 1,
    text: src.slice(lineStart, lineEnd < 0 ? undefined : lineEnd),
  };
}

/** A compile error in cel-go's shape: `ERROR: <input>:1:6: <what>` and the marked source. */
function formatCompileError(src: string, what: string, offset: number): string {
  const { line, col, text } = lineCol(src, Math.max(0, Math.min(offset, src.length)));
  return `ERROR: <input>:${line}:${col}: ${what}\n | ${text}\n | ${".".repeat(col - 1)}^`;
}

function errorOffset(err: unknown): number {
  const r = (err as { range?: { start?: number } }).range;
  return typeof r?.start === "number" ? r.start : 0;
}

function errorSummary(err: unknown): string {
  const e = err as { summary?: string; message?: string };
  return e.summary ?? (e.message ?? String(err)).split("\n")[0];
}

/** How a rule is shown in a field error value (Kubernetes prints its ValidationRule). */
export function ruleValue(rule: ValidationRule): Record<string, unknown> {
  return {
    Rule: rule.rule,
    Message: rule.message ?? "",
    MessageExpression: rule.messageExpression ?? "",
    Reason: rule.reason ?? null,
    FieldPath: rule.fieldPath ?? "",
    OptionalOldSelf: rule.optionalOldSelf ?? null,
  };
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

function costMessage(what: string, cost: number, limit: number): string {
  const factor = cost / limit;
  const shown =
    factor > 100
      ? "more than 100x"
      : factor < 1.5
        ? `${factor.toFixed(6)}x`
        : `${factor.toFixed(1)}x`;
  return `${what} exceeds budget by factor of ${shown} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)`;
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

// ---------------------------------------------------------------------------
// Evaluation.

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
  const previous = meter;
  meter = m;
  try {
    return withMeter(m, program, ctx);
  } finally {
    meter = previous;
  }
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

function ruleErrorString(rule: ValidationRule): string {
  return rule.message?.trim() || rule.rule.trim();
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
