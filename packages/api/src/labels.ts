/**
 * Label selectors: the query-string syntax (`?labelSelector=app=web,tier in (a,b)`)
 * and metav1.LabelSelector (`matchLabels` / `matchExpressions`), parsed into one
 * form, matched against an object's labels, and formatted back. Semantics and error
 * messages follow Kubernetes' labels package.
 */
import { errors } from "./status.ts";
import { labelValueErrors, qualifiedNameErrors, renderBadValue } from "./validation.ts";

/** How a requirement relates a label to its values. */
export type LabelOperator =
  | "Equals" // key=value
  | "DoubleEquals" // key==value
  | "NotEquals" // key!=value (also matches when the label is absent)
  | "In" // key in (a,b)
  | "NotIn" // key notin (a,b) (also matches when the label is absent)
  | "Exists" // key
  | "DoesNotExist" // !key
  | "GreaterThan" // key>5 (integer comparison; absent or non-integer never matches)
  | "LessThan"; // key<5

/** One requirement of a selector; all requirements of a selector must hold. */
export interface LabelRequirement {
  readonly key: string;
  readonly operator: LabelOperator;
  /** One value for the equality and comparison operators, one or more for In/NotIn, none otherwise. */
  readonly values: readonly string[];
}

/**
 * A parsed label selector: requirements sorted by key. An empty list selects
 * everything. `nothing` marks the selector that selects no object at all (what a
 * missing metav1.LabelSelector means).
 */
export interface LabelSelector {
  readonly requirements: readonly LabelRequirement[];
  readonly nothing?: boolean | undefined;
}

/** The selector that matches every object. */
export const EVERYTHING: LabelSelector = Object.freeze({ requirements: Object.freeze([]) });
/** The selector that matches no object. */
export const NOTHING: LabelSelector = Object.freeze({
  requirements: Object.freeze([]),
  nothing: true,
});

/** True if the selector does not restrict anything (matches every object). */
export function isEverything(sel: LabelSelector): boolean {
  return !sel.nothing && sel.requirements.length === 0;
}

// ---------------------------------------------------------------------------
// Requirements and their validation.

class SelectorError extends Error {}

/**
 * Builds a requirement after checking it as Kubernetes' NewRequirement does
 * (key is a qualified name, values are label values, value counts fit the
 * operator). Throws StatusError 400 with Kubernetes' message otherwise.
 */
export function labelRequirement(
  key: string,
  operator: LabelOperator,
  values: readonly string[] = [],
): LabelRequirement {
  const msg = requirementError(key, operator, values);
  if (msg) throw errors.badRequest(msg);
  return { key, operator, values: [...values] };
}

function fieldInvalid(path: string, value: unknown, detail: string): string {
  return `${path}: Invalid value: ${renderBadValue(value)}: ${detail}`;
}

function keyError(key: string, path: string): string | undefined {
  const errs = qualifiedNameErrors(key);
  return errs.length ? fieldInvalid(path, key, errs.join("; ")) : undefined;
}

function requirementError(
  key: string,
  operator: LabelOperator,
  values: readonly string[],
): string | undefined {
  const errs: string[] = [];
  const k = keyError(key, "key");
  if (k) errs.push(k);
  switch (operator) {
    case "In":
    case "NotIn":
      if (values.length === 0) {
        errs.push(
          fieldInvalid("values", values, "for 'in', 'notin' operators, values set can't be empty"),
        );
      }
      break;
    case "Equals":
    case "DoubleEquals":
    case "NotEquals":
      if (values.length !== 1) {
        errs.push(
          fieldInvalid("values", values, "exact-match compatibility requires one single value"),
        );
      }
      break;
    case "Exists":
    case "DoesNotExist":
      if (values.length !== 0) {
        errs.push(
          fieldInvalid("values", values, "values set must be empty for exists and does not exist"),
        );
      }
      break;
    case "GreaterThan":
    case "LessThan":
      if (values.length !== 1) {
        errs.push(
          fieldInvalid("values", values, "for 'Gt', 'Lt' operators, exactly one value is required"),
        );
      }
      values.forEach((v, i) => {
        if (!isInt64(v)) {
          errs.push(
            fieldInvalid(
              `values[${i}]`,
              v,
              "for 'Gt', 'Lt' operators, the value must be an integer",
            ),
          );
        }
      });
      break;
    default:
      errs.push(`operator: Unsupported value: ${JSON.stringify(operator)}`);
  }
  values.forEach((v, i) => {
    const e = labelValueErrors(v);
    if (e.length) errs.push(fieldInvalid(`values[${i}][${key}]`, v, e.join("; ")));
  });
  if (errs.length === 0) return undefined;
  const unique = [...new Set(errs)];
  return unique.length === 1 ? unique[0] : `[${unique.join(", ")}]`;
}

const INT64_RE = /^[+-]?\d+$/;
const INT64_MAX = 9223372036854775807n;
const INT64_MIN = -9223372036854775808n;

function isInt64(s: string): boolean {
  if (!INT64_RE.test(s)) return false;
  const n = BigInt(s);
  return n >= INT64_MIN && n <= INT64_MAX;
}

function byKey(a: LabelRequirement, b: LabelRequirement): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

// ---------------------------------------------------------------------------
// Matching.

/** Whether one requirement holds for `labels`. */
export function matchesRequirement(
  r: LabelRequirement,
  labels: Record<string, string> | undefined,
): boolean {
  const has = labels !== undefined && Object.hasOwn(labels, r.key);
  const value = has ? labels[r.key] : undefined;
  switch (r.operator) {
    case "In":
    case "Equals":
    case "DoubleEquals":
      return has && r.values.includes(value as string);
    case "NotIn":
    case "NotEquals":
      return !has || !r.values.includes(value as string);
    case "Exists":
      return has;
    case "DoesNotExist":
      return !has;
    case "GreaterThan":
    case "LessThan": {
      if (!has || r.values.length !== 1) return false;
      if (!isInt64(value as string) || !isInt64(r.values[0])) return false;
      const lv = BigInt(value as string);
      const rv = BigInt(r.values[0]);
      return r.operator === "GreaterThan" ? lv > rv : lv < rv;
    }
    default:
      return false;
  }
}

/** Whether an object with `labels` is selected by `sel`. */
export function matchesLabels(
  sel: LabelSelector,
  labels: Record<string, string> | undefined,
): boolean {
  if (sel.nothing) return false;
  for (const r of sel.requirements) if (!matchesRequirement(r, labels)) return false;
  return true;
}

/**
 * The value a selector requires `key` to have, if it pins it to exactly one value
 * (`key=v`, `key==v` or `key in (v)`); lets callers use an index.
 */
export function requiredLabelValue(sel: LabelSelector, key: string): string | undefined {
  for (const r of sel.requirements) {
    if (r.key !== key) continue;
    if (
      (r.operator === "Equals" || r.operator === "DoubleEquals" || r.operator === "In") &&
      r.values.length === 1
    ) {
      return r.values[0];
    }
    return undefined;
  }
  return undefined;
}

// ---------------------------------------------------------------------------
// Formatting.

function formatRequirement(r: LabelRequirement): string {
  const values = r.values.length > 1 ? [...r.values].sort() : r.values;
  switch (r.operator) {
    case "Exists":
      return r.key;
    case "DoesNotExist":
      return `!${r.key}`;
    case "Equals":
      return `${r.key}=${values[0] ?? ""}`;
    case "DoubleEquals":
      return `${r.key}==${values[0] ?? ""}`;
    case "NotEquals":
      return `${r.key}!=${values[0] ?? ""}`;
    case "GreaterThan":
      return `${r.key}>${values[0] ?? ""}`;
    case "LessThan":
      return `${r.key}<${values[0] ?? ""}`;
    case "In":
      return `${r.key} in (${values.join(",")})`;
    case "NotIn":
      return `${r.key} notin (${values.join(",")})`;
  }
}

/**
 * The query-string form of a selector, as Kubernetes prints it: requirements in
 * key order joined by ",", set values sorted. Parsing it gives back an equivalent
 * selector. The `nothing` selector has no string form and formats as "" (which
 * parses to everything), as in Kubernetes.
 */
export function formatLabelSelector(sel: LabelSelector): string {
  if (sel.nothing) return "";
  return sel.requirements.map(formatRequirement).join(",");
}

/** A selector requiring exactly the given labels (`matchLabels`); empty selects everything. */
export function labelSelectorFromSet(set: Record<string, string> | undefined): LabelSelector {
  if (!set) return EVERYTHING;
  const reqs = Object.entries(set).map(([k, v]) => labelRequirement(k, "Equals", [v]));
  return { requirements: reqs.sort(byKey) };
}

/** metav1.LabelSelector as it appears in objects (Deployment spec.selector and the like). */
export interface MetaV1LabelSelector {
  matchLabels?: Record<string, string> | undefined;
  matchExpressions?:
    | {
        key: string;
        operator: "In" | "NotIn" | "Exists" | "DoesNotExist";
        values?: string[] | undefined;
      }[]
    | undefined;
}

/**
 * Converts a metav1.LabelSelector into a selector, validating it as Kubernetes'
 * LabelSelectorAsSelector does: `null`/`undefined` selects nothing, an empty
 * selector selects everything. Throws StatusError 400 on an unknown operator,
 * an invalid key or value, or a value count that does not fit the operator.
 */
export function labelSelectorFromMetav1(
  sel: MetaV1LabelSelector | null | undefined,
): LabelSelector {
  if (sel === null || sel === undefined) return NOTHING;
  const matchLabels = sel.matchLabels ?? {};
  const exprs = sel.matchExpressions ?? [];
  const reqs: LabelRequirement[] = [];
  for (const [k, v] of Object.entries(matchLabels)) {
    reqs.push(labelRequirement(k, "Equals", [v]));
  }
  for (const e of exprs) {
    const op = e.operator as string;
    if (op !== "In" && op !== "NotIn" && op !== "Exists" && op !== "DoesNotExist") {
      throw errors.badRequest(`${JSON.stringify(op)} is not a valid label selector operator`);
    }
    reqs.push(labelRequirement(e.key, op, e.values ?? []));
  }
  return { requirements: reqs.sort(byKey) };
}

// ---------------------------------------------------------------------------
// Parsing: a lexer and a recursive-descent parser for Kubernetes' grammar
//
//   selector    ::= requirement ("," requirement)*
//   requirement ::= ["!"] KEY [ ("in"|"notin") "(" values ")" | ("="|"=="|"!="|">"|"<") VALUE ]
//
// "in" and "notin" are keywords only where an operator is expected; as values
// they are ordinary identifiers. Blanks (space, tab, CR, LF) separate tokens.

type Tok =
  | "end"
  | "error"
  | "ident"
  | "("
  | ")"
  | ","
  | "!"
  | "="
  | "=="
  | "!="
  | ">"
  | "<"
  | "in"
  | "notin";

interface Token {
  tok: Tok;
  lit: string;
}

const SPECIAL = new Set(["=", "!", "(", ")", ",", ">", "<"]);
const SYMBOLS = new Set(["=", "==", "!=", "!", "(", ")", ",", ">", "<"]);
const BLANK = new Set([" ", "\t", "\r", "\n"]);

function lex(s: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  for (;;) {
    while (i < s.length && BLANK.has(s[i])) i++;
    if (i >= s.length) {
      out.push({ tok: "end", lit: "" });
      return out;
    }
    if (SPECIAL.has(s[i])) {
      // Longest run of special characters that is still a known symbol.
      let buf = "";
      let last = "";
      let j = i;
      while (j < s.length && SPECIAL.has(s[j])) {
        buf += s[j];
        if (SYMBOLS.has(buf)) {
          last = buf;
          j++;
        } else if (last) {
          break;
        } else {
          j++;
        }
      }
      if (!last) {
        out.push({ tok: "error", lit: `error expected: keyword found '${buf}'` });
        i = j;
        continue;
      }
      out.push({ tok: last as Tok, lit: last });
      i += last.length;
      continue;
    }
    let j = i;
    while (j < s.length && !SPECIAL.has(s[j]) && !BLANK.has(s[j])) j++;
    const word = s.slice(i, j);
    out.push({ tok: word === "in" || word === "notin" ? word : "ident", lit: word });
    i = j;
  }
}

class Parser {
  private pos = 0;
  constructor(private readonly toks: Token[]) {}

  /** The current token; in value position "in"/"notin" are identifiers. */
  private peek(values = true): Token {
    const t = this.toks[this.pos];
    return values && (t.tok === "in" || t.tok === "notin") ? { tok: "ident", lit: t.lit } : t;
  }

  private next(values = true): Token {
    const t = this.peek(values);
    this.pos++;
    return t;
  }

  parse(): LabelRequirement[] {
    const reqs: LabelRequirement[] = [];
    for (;;) {
      const t = this.peek();
      if (t.tok === "end") return reqs;
      if (t.tok !== "ident" && t.tok !== "!") {
        throw new SelectorError(`found '${t.lit}', expected: !, identifier, or 'end of string'`);
      }
      try {
        reqs.push(this.requirement());
      } catch (e) {
        if (e instanceof SelectorError) {
          throw new SelectorError(`unable to parse requirement: ${e.message}`);
        }
        throw e;
      }
      const after = this.next();
      if (after.tok === "end") return reqs;
      if (after.tok !== ",") {
        throw new SelectorError(`found '${after.lit}', expected: ',' or 'end of string'`);
      }
      const t2 = this.peek();
      if (t2.tok !== "ident" && t2.tok !== "!") {
        throw new SelectorError(`found '${t2.lit}', expected: identifier after ','`);
      }
    }
  }

  private requirement(): LabelRequirement {
    let t = this.next();
    let negated = false;
    if (t.tok === "!") {
      negated = true;
      t = this.next();
    }
    if (t.tok !== "ident") throw new SelectorError(`found '${t.lit}', expected: identifier`);
    const key = t.lit;
    const ke = keyError(key, "<nil>");
    if (ke) throw new SelectorError(ke);
    const la = this.peek().tok;
    if (negated || la === "end" || la === ",") {
      // "!key" is complete; Kubernetes then expects "," or the end.
      return this.checked(key, negated ? "DoesNotExist" : "Exists", []);
    }
    const opTok = this.next(false);
    let op: LabelOperator;
    switch (opTok.tok) {
      case "in":
        op = "In";
        break;
      case "notin":
        op = "NotIn";
        break;
      case "=":
        op = "Equals";
        break;
      case "==":
        op = "DoubleEquals";
        break;
      case "!=":
        op = "NotEquals";
        break;
      case ">":
        op = "GreaterThan";
        break;
      case "<":
        op = "LessThan";
        break;
      default:
        throw new SelectorError(`found '${opTok.lit}', expected: in, notin, =, ==, !=, gt, lt`);
    }
    const values = op === "In" || op === "NotIn" ? this.valueSet() : this.exactValue();
    return this.checked(key, op, values);
  }

  private checked(key: string, op: LabelOperator, values: string[]): LabelRequirement {
    const msg = requirementError(key, op, values);
    if (msg) throw new SelectorError(msg);
    return { key, operator: op, values };
  }

  /** "(" values ")": a set, sorted and without duplicates; empty entries are "". */
  private valueSet(): string[] {
    const open = this.next();
    if (open.tok !== "(") throw new SelectorError(`found '${open.lit}' expected: '('`);
    const first = this.peek();
    if (first.tok === ")") {
      this.next();
      return [""];
    }
    if (first.tok !== "ident" && first.tok !== ",") {
      throw new SelectorError(`found '${first.lit}', expected: ',', ')' or identifier`);
    }
    const set = new Set<string>();
    for (;;) {
      const t = this.next();
      if (t.tok === "ident") {
        set.add(t.lit);
        const n = this.peek();
        if (n.tok === ",") continue;
        if (n.tok === ")") break;
        throw new SelectorError(`found '${n.lit}', expected: ',' or ')'`);
      }
      if (t.tok === ",") {
        // An empty entry before or between commas, or a trailing one, is "".
        if (set.size === 0) set.add("");
        const n = this.peek();
        if (n.tok === ")") {
          set.add("");
          break;
        }
        if (n.tok === ",") set.add("");
        continue;
      }
      throw new SelectorError(`found '${t.lit}', expected: ',', or identifier`);
    }
    const close = this.next();
    if (close.tok !== ")") throw new SelectorError(`found '${close.lit}', expected: ')'`);
    return [...set].sort();
  }

  private exactValue(): string[] {
    const t = this.peek();
    if (t.tok === "end" || t.tok === ",") return [""];
    this.next();
    if (t.tok === "ident") return [t.lit];
    throw new SelectorError(`found '${t.lit}', expected: identifier`);
  }
}

/**
 * Parses the query-string form of a label selector (`a=b`, `a==b`, `a!=b`,
 * `a in (x,y)`, `a notin (x)`, `a`, `!a`, `a>1`, `a<1`, comma-separated; blanks
 * are allowed between tokens). "" selects everything. Throws StatusError 400
 * with Kubernetes' message on bad syntax, an invalid key or an invalid value.
 */
export function parseLabelSelector(s: string): LabelSelector {
  let reqs: LabelRequirement[];
  try {
    reqs = new Parser(lex(s)).parse();
  } catch (e) {
    if (e instanceof SelectorError) throw errors.badRequest(e.message);
    throw e;
  }
  return { requirements: reqs.sort(byKey) };
}
