/**
 * The JSONPath dialect of Kubernetes (client-go's util/jsonpath), as CRD
 * additionalPrinterColumns, `kubectl -o jsonpath` and `kubectl wait
 * --for=jsonpath` use it:
 *
 * - `.a.b` fields (a `\` escapes the next character: `.labels.app\.kubernetes\.io/name`),
 *   `['a.b']` / `["a.b"]` keys taken literally, `.` alone for the current value;
 * - `[0]`, `[-1]`, `[1:3]`, `[::2]` indices and slices, `[*]` and `.*` wildcards,
 *   `[0,2]` / `['a','b']` unions, `..name` recursive descent;
 * - filters `[?(@.type=="Ready")]` with == != < > <= >=, and `[?(@.x)]` for existence;
 * - `$` and `@` for the current value; in templates, literal text, `{"text"}`, and
 *   `{range .items[*]}...{end}`.
 *
 * A path that finds nothing yields no values (as with AllowMissingKeys); only syntax
 * errors throw.
 */
import { deepFreeze, isJsonObject } from "./deep-copy.ts";

/** A syntax error in a JSONPath expression or template. */
export class JsonPathError extends Error {
  override name = "JsonPathError";
}

/** Comparison operators of filters. */
export type FilterOperator = "==" | "!=" | "<" | ">" | "<=" | ">=";

/** One step of a parsed JSONPath expression. */
export type JsonPathNode =
  | { type: "field"; name: string }
  | { type: "wildcard" }
  | { type: "recursive" }
  | {
      type: "slice";
      start?: number | undefined;
      end?: number | undefined;
      step?: number | undefined;
      single: boolean;
    }
  | { type: "union"; branches: JsonPathNode[][] }
  | {
      type: "filter";
      left: JsonPathNode[];
      operator: FilterOperator | "exists";
      right: JsonPathNode[];
    }
  | { type: "literal"; value: string | number | boolean }
  | { type: "keyword"; name: "range" | "end" };

/** A parsed template: literal text and actions, with ranges holding their bodies. */
export type JsonPathTemplatePart =
  | { type: "text"; text: string }
  | { type: "action"; nodes: JsonPathNode[] }
  | { type: "range"; nodes: JsonPathNode[]; body: JsonPathTemplatePart[] };

/** How many parsed expressions are kept for reuse (printer columns evaluate one path per row). */
export const JSONPATH_CACHE_SIZE = 512;

// ---------------------------------------------------------------------------
// Parsing of one action (what goes between braces).

const FIELD_TERMINATORS = new Set([" ", "\t", "\r", "\n", ".", ",", "[", "]", "$", "@", "{", "}"]);

function isAlnum(c: string | undefined): boolean {
  return c !== undefined && /^[\p{L}\p{N}_]$/u.test(c);
}

function unquote(body: string, quote: string): string {
  let out = "";
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c !== "\\") {
      out += c;
      continue;
    }
    const n = body[++i];
    switch (n) {
      case "n":
        out += "\n";
        break;
      case "t":
        out += "\t";
        break;
      case "r":
        out += "\r";
        break;
      case "u": {
        const hex = body.slice(i + 1, i + 5);
        if (!/^[0-9a-fA-F]{4}$/.test(hex))
          throw new JsonPathError(`invalid escape in ${quote}${body}${quote}`);
        out += String.fromCharCode(Number.parseInt(hex, 16));
        i += 4;
        break;
      }
      case undefined:
        throw new JsonPathError(`invalid escape in ${quote}${body}${quote}`);
      default:
        out += n;
    }
  }
  return out;
}

// Index of the closing quote matching the one at `start`.
function closingQuote(s: string, start: number): number {
  const q = s[start];
  for (let i = start + 1; i < s.length; i++) {
    if (s[i] === "\\") i++;
    else if (s[i] === q) return i;
  }
  throw new JsonPathError("unterminated quoted string");
}

const SLICE_RE = /^(-?\d*)(:-?\d*)?(:-?\d*)?$/;
const FILTER_RE = /^([^!<>=]+)([!<>=~]+)(.+?)$/s;

class ActionParser {
  private i = 0;
  private readonly nodes: JsonPathNode[] = [];
  constructor(private readonly s: string) {}

  parse(): JsonPathNode[] {
    const s = this.s;
    while (this.i < s.length) {
      if (s.startsWith("[?(", this.i)) {
        this.filter();
        continue;
      }
      if (s.startsWith("..", this.i)) {
        if (this.nodes.at(-1)?.type === "recursive") {
          throw new JsonPathError("invalid multiple recursive descent");
        }
        this.nodes.push({ type: "recursive" });
        this.i += 2;
        if (isAlnum(s[this.i])) this.field();
        continue;
      }
      const c = s[this.i];
      if (c === " " || c === "\t" || c === "$" || c === "@") {
        this.i++;
      } else if (c === "\r" || c === "\n") {
        throw new JsonPathError("unclosed action");
      } else if (c === "[") {
        this.array();
      } else if (c === '"' || c === "'") {
        const end = closingQuote(s, this.i);
        this.nodes.push({ type: "literal", value: unquote(s.slice(this.i + 1, end), c) });
        this.i = end + 1;
      } else if (c === ".") {
        this.i++;
        this.field();
      } else if (c === "+" || c === "-" || /\d/.test(c)) {
        this.number();
      } else if (isAlnum(c)) {
        this.identifier();
      } else {
        throw new JsonPathError(`unrecognized character in action: ${JSON.stringify(c)}`);
      }
    }
    return this.nodes;
  }

  private field(): void {
    const s = this.s;
    let name = "";
    while (this.i < s.length && !FIELD_TERMINATORS.has(s[this.i])) {
      if (s[this.i] === "\\" && this.i + 1 < s.length) this.i++;
      name += s[this.i++];
    }
    this.nodes.push(name === "*" ? { type: "wildcard" } : { type: "field", name });
  }

  private number(): void {
    const m = /^[+-]?[\d.]*/.exec(this.s.slice(this.i));
    const text = m ? m[0] : "";
    const n = Number(text);
    if (text === "" || text === "+" || text === "-" || Number.isNaN(n)) {
      throw new JsonPathError(`cannot parse number ${text}`);
    }
    this.nodes.push({ type: "literal", value: n });
    this.i += text.length;
  }

  private identifier(): void {
    const s = this.s;
    const start = this.i;
    while (this.i < s.length && !FIELD_TERMINATORS.has(s[this.i])) this.i++;
    const word = s.slice(start, this.i);
    if (word === "true" || word === "false")
      this.nodes.push({ type: "literal", value: word === "true" });
    else if (word === "range" || word === "end") this.nodes.push({ type: "keyword", name: word });
    else throw new JsonPathError(`unrecognized identifier ${word}`);
  }

  private array(): void {
    const s = this.s;
    let j = this.i + 1;
    while (j < s.length && s[j] !== "]") {
      if (s[j] === "'" || s[j] === '"') j = closingQuote(s, j);
      else if (s[j] === "\n") break;
      j++;
    }
    if (j >= s.length || s[j] !== "]") throw new JsonPathError("unterminated array");
    const text = s.slice(this.i + 1, j).trim();
    this.i = j + 1;
    this.nodes.push(parseSubscript(text));
  }

  private filter(): void {
    const s = this.s;
    let j = this.i + 3;
    const start = j;
    for (;;) {
      if (j >= s.length || s[j] === "\n") throw new JsonPathError("unterminated filter");
      if (s[j] === "'" || s[j] === '"') j = closingQuote(s, j);
      else if (s[j] === ")") break;
      j++;
    }
    const text = s.slice(start, j);
    if (s[j + 1] !== "]") throw new JsonPathError("unclosed array expect ]");
    this.i = j + 2;
    const m = FILTER_RE.exec(text);
    if (!m) {
      this.nodes.push({ type: "filter", left: parseAction(text), operator: "exists", right: [] });
      return;
    }
    const op = m[2];
    if (!["==", "!=", "<", ">", "<=", ">="].includes(op)) {
      throw new JsonPathError(`unrecognized filter operator ${op}`);
    }
    this.nodes.push({
      type: "filter",
      left: parseAction(m[1]),
      operator: op as FilterOperator,
      right: parseAction(m[3]),
    });
  }
}

// Splits on commas outside quotes.
function splitUnion(text: string): string[] {
  const parts: string[] = [];
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "'" || text[i] === '"') i = closingQuote(text, i);
    else if (text[i] === ",") {
      parts.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(text.slice(start).trim());
  return parts;
}

function parseSubscript(text: string): JsonPathNode {
  if (text === "*") return { type: "wildcard" };
  const parts = splitUnion(text);
  if (parts.length > 1) {
    return { type: "union", branches: parts.map((p) => [parseSubscript(p)]) };
  }
  const q = text[0];
  if ((q === "'" || q === '"') && text.length >= 2 && text.at(-1) === q) {
    if (closingQuote(text, 0) !== text.length - 1)
      throw new JsonPathError(`invalid array index ${text}`);
    return { type: "field", name: unquote(text.slice(1, -1), q) };
  }
  const m = SLICE_RE.exec(text);
  if (!m || text === "") throw new JsonPathError(`invalid array index ${text}`);
  const num = (g: string | undefined): number | undefined => {
    const v = g?.replace(/^:/, "");
    return v === undefined || v === "" ? undefined : Number(v);
  };
  const start = num(m[1]);
  if (m[2] === undefined) {
    if (start === undefined) throw new JsonPathError(`invalid array index ${text}`);
    return { type: "slice", start, single: true };
  }
  return { type: "slice", start, end: num(m[2]), step: num(m[3]), single: false };
}

/** Parses one JSONPath expression (the inside of one pair of braces). */
function parseAction(body: string): JsonPathNode[] {
  return new ActionParser(body).parse();
}

// ---------------------------------------------------------------------------
// Templates: text with {actions}.

function splitTemplate(
  template: string,
): { text?: string | undefined; action?: string | undefined }[] {
  const out: { text?: string | undefined; action?: string | undefined }[] = [];
  let i = 0;
  let textStart = 0;
  while (i < template.length) {
    if (template[i] !== "{") {
      i++;
      continue;
    }
    if (i > textStart) out.push({ text: template.slice(textStart, i) });
    let j = i + 1;
    for (;;) {
      if (j >= template.length) throw new JsonPathError("unclosed action");
      const c = template[j];
      if (c === "'" || c === '"') j = closingQuote(template, j);
      else if (c === "}") break;
      j++;
    }
    out.push({ action: template.slice(i + 1, j) });
    i = j + 1;
    textStart = i;
  }
  if (textStart < template.length) out.push({ text: template.slice(textStart) });
  return out;
}

/**
 * Parses a template such as `{range .items[*]}{.metadata.name}{"\n"}{end}`.
 * Throws JsonPathError on a syntax error or an unbalanced range/end.
 */
export function parseJsonPathTemplate(template: string): JsonPathTemplatePart[] {
  const root: JsonPathTemplatePart[] = [];
  const stack: JsonPathTemplatePart[][] = [root];
  for (const seg of splitTemplate(template)) {
    const into = stack[stack.length - 1];
    if (seg.text !== undefined) {
      into.push({ type: "text", text: seg.text });
      continue;
    }
    const nodes = parseAction(seg.action ?? "");
    const first = nodes[0];
    if (first?.type === "keyword" && first.name === "range") {
      const range: JsonPathTemplatePart = { type: "range", nodes: nodes.slice(1), body: [] };
      into.push(range);
      stack.push(range.body);
    } else if (first?.type === "keyword" && first.name === "end") {
      if (nodes.length > 1 || stack.length === 1)
        throw new JsonPathError("not in range, nothing to end");
      stack.pop();
    } else {
      if (nodes.some((n) => n.type === "keyword"))
        throw new JsonPathError("unexpected range or end");
      into.push({ type: "action", nodes });
    }
  }
  if (stack.length > 1) throw new JsonPathError("range without end");
  return root;
}

const cache = new Map<string, JsonPathNode[]>();

/**
 * Parses a JSONPath expression, with or without surrounding braces (`.a.b` or
 * `{.a.b}`). Throws JsonPathError on a syntax error. Results are cached.
 */
export function parseJsonPath(path: string): JsonPathNode[] {
  const hit = cache.get(path);
  if (hit) return hit;
  const trimmed = path.trim();
  let nodes: JsonPathNode[];
  if (trimmed.startsWith("{")) {
    const parts = parseJsonPathTemplate(trimmed);
    if (parts.length !== 1 || parts[0].type !== "action") {
      throw new JsonPathError(`${JSON.stringify(path)} is not a single JSONPath expression`);
    }
    nodes = parts[0].nodes;
  } else {
    nodes = parseAction(path);
  }
  if (nodes.some((n) => n.type === "keyword")) {
    throw new JsonPathError(`${JSON.stringify(path)} is not a single JSONPath expression`);
  }
  if (cache.size >= JSONPATH_CACHE_SIZE) cache.clear();
  cache.set(path, deepFreeze(nodes) as JsonPathNode[]);
  return nodes;
}

// ---------------------------------------------------------------------------
// Evaluation.

function children(v: unknown): unknown[] {
  if (Array.isArray(v)) return v;
  if (isJsonObject(v)) return Object.values(v);
  return [];
}

function collectContainers(v: unknown, out: unknown[]): void {
  const kids = children(v);
  if (kids.length === 0) return;
  out.push(v);
  for (const k of kids) collectContainers(k, out);
}

function sliceOf(arr: unknown[], n: Extract<JsonPathNode, { type: "slice" }>): unknown[] {
  const len = arr.length;
  let start = n.start ?? 0;
  let end: number;
  if (n.single) {
    if (start < 0) start += len;
    return start >= 0 && start < len ? [arr[start]] : [];
  }
  end = n.end ?? len;
  if (start < 0) start += len;
  if (end < 0) end += len;
  start = Math.max(0, Math.min(start, len));
  end = Math.max(0, Math.min(end, len));
  const step = n.step ?? 1;
  if (step <= 0) return [];
  const out: unknown[] = [];
  for (let i = start; i < end; i += step) out.push(arr[i]);
  return out;
}

type Comparable = string | number | boolean;

function compare(a: unknown, op: FilterOperator, b: unknown): boolean {
  const ta = typeof a;
  if (ta !== typeof b || (ta !== "string" && ta !== "number" && ta !== "boolean")) return false;
  const x = a as Comparable;
  const y = b as Comparable;
  switch (op) {
    case "==":
      return x === y;
    case "!=":
      return x !== y;
    case "<":
      return ta !== "boolean" && x < y;
    case ">":
      return ta !== "boolean" && x > y;
    case "<=":
      return ta !== "boolean" && x <= y;
    case ">=":
      return ta !== "boolean" && x >= y;
  }
}

function step(node: JsonPathNode, values: unknown[]): unknown[] {
  const out: unknown[] = [];
  switch (node.type) {
    case "field":
      for (const v of values) {
        if (node.name === "") out.push(v);
        else if (isJsonObject(v) && Object.hasOwn(v, node.name)) out.push(v[node.name]);
      }
      return out;
    case "wildcard":
      for (const v of values) out.push(...children(v));
      return out;
    case "recursive":
      for (const v of values) collectContainers(v, out);
      return out;
    case "slice":
      for (const v of values) if (Array.isArray(v)) out.push(...sliceOf(v, node));
      return out;
    case "union":
      for (const branch of node.branches) out.push(...evalNodes(branch, values));
      return out;
    case "filter":
      for (const v of values) {
        if (!Array.isArray(v)) continue;
        for (const item of v) {
          const lefts = evalNodes(node.left, [item]);
          if (node.operator === "exists") {
            if (lefts.length > 0) out.push(item);
            continue;
          }
          const rights = evalNodes(node.right, [item]);
          if (lefts.length !== 1 || rights.length !== 1) continue;
          if (compare(lefts[0], node.operator, rights[0])) out.push(item);
        }
      }
      return out;
    case "literal":
      return [node.value];
    case "keyword":
      return values;
  }
}

function evalNodes(nodes: readonly JsonPathNode[], values: unknown[]): unknown[] {
  let cur = values;
  for (const n of nodes) {
    if (cur.length === 0) return cur;
    cur = step(n, cur);
  }
  return cur;
}

/**
 * The values a JSONPath expression selects in `obj` (braces optional). Missing
 * fields and out-of-range indices select nothing. Throws JsonPathError on bad syntax.
 */
export function evaluateJsonPath(obj: unknown, path: string): unknown[] {
  return evalNodes(parseJsonPath(path), [obj]);
}

function formatFloat(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  if (Number.isInteger(n) && Math.abs(n) < 1e21) return String(n);
  // Go prints float64 with %v: exponent form below 1e-4 and from 1e21.
  const abs = Math.abs(n);
  if (abs !== 0 && (abs < 1e-4 || abs >= 1e21)) {
    const [mant, exp] = n.toExponential().split("e");
    const e = Number(exp);
    return `${mant}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
  }
  return String(n);
}

/**
 * A selected value as text, as kubectl and printer columns print it: strings as
 * they are, numbers and booleans plainly, objects and arrays as compact JSON.
 */
export function formatJsonPathValue(v: unknown): string {
  if (typeof v === "string") return v;
  if (typeof v === "number") return formatFloat(v);
  if (typeof v === "boolean") return v ? "true" : "false";
  if (v === undefined) return "";
  return JSON.stringify(v);
}

function render(parts: readonly JsonPathTemplatePart[], current: unknown, out: string[]): void {
  for (const p of parts) {
    if (p.type === "text") {
      out.push(p.text);
    } else if (p.type === "action") {
      out.push(evalNodes(p.nodes, [current]).map(formatJsonPathValue).join(" "));
    } else {
      for (const item of evalNodes(p.nodes, [current])) render(p.body, item, out);
    }
  }
}

/**
 * Renders a template as `kubectl -o jsonpath=...` does: literal text, each action's
 * values separated by spaces, `{range}...{end}` repeating its body for each value.
 */
export function executeJsonPathTemplate(obj: unknown, template: string): string {
  const out: string[] = [];
  render(parseJsonPathTemplate(template), obj, out);
  return out.join("");
}
