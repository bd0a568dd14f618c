/**
 * Field selectors (`?fieldSelector=metadata.name=web,status.phase!=Running`): parsed,
 * matched through a getter, and formatted back, with Kubernetes' escaping of
 * `\,`, `\=` and `\\` in values and its error messages.
 */
import { errors } from "./status.ts";

/** One term: the field must (or must not) equal the value. */
export interface FieldRequirement {
  readonly field: string;
  readonly operator: "Equals" | "NotEquals";
  readonly value: string;
}

/** A parsed field selector: all requirements must hold. Empty selects everything. */
export interface FieldSelector {
  readonly requirements: readonly FieldRequirement[];
}

/** The field selector that matches every object. */
export const EVERYTHING_FIELDS: FieldSelector = Object.freeze({
  requirements: Object.freeze([]),
});

/** True if the selector does not restrict anything. */
export function isEverythingFields(sel: FieldSelector): boolean {
  return sel.requirements.length === 0;
}

/** Escapes a value for a field selector: `\` → `\\`, `,` → `\,`, `=` → `\=`. */
export function escapeFieldValue(s: string): string {
  return s.replace(/[\\,=]/g, (c) => `\\${c}`);
}

/** Reverses `escapeFieldValue`; throws StatusError 400 on a bad escape or a bare `,`/`=`. */
export function unescapeFieldValue(s: string): string {
  if (!/[\\,=]/.test(s)) return s;
  let out = "";
  let inSlash = false;
  for (const c of s) {
    if (inSlash) {
      if (c !== "\\" && c !== "," && c !== "=") {
        throw errors.badRequest(`invalid field selector: invalid escape sequence: \\${c}`);
      }
      out += c;
      inSlash = false;
      continue;
    }
    if (c === "\\") inSlash = true;
    else if (c === "," || c === "=") {
      // Kubernetes prints the rune's code point here.
      throw errors.badRequest(
        `invalid field selector: unescaped character in value: ${c.codePointAt(0)}`,
      );
    } else out += c;
  }
  if (inSlash) throw errors.badRequest("invalid field selector: invalid escape sequence: \\");
  return out;
}

// Splits on commas that are not escaped by a backslash.
function splitTerms(s: string): string[] {
  if (s.length === 0) return [];
  const terms: string[] = [];
  let start = 0;
  let inSlash = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (inSlash) inSlash = false;
    else if (c === "\\") inSlash = true;
    else if (c === ",") {
      terms.push(s.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(s.slice(start));
  return terms;
}

const TERM_OPERATORS = ["!=", "==", "="] as const;

// The first position where an operator starts splits the term.
function splitTerm(term: string): [string, (typeof TERM_OPERATORS)[number], string] | undefined {
  for (let i = 0; i < term.length; i++) {
    for (const op of TERM_OPERATORS) {
      if (term.startsWith(op, i)) return [term.slice(0, i), op, term.slice(i + op.length)];
    }
  }
  return undefined;
}

/**
 * Parses a field selector: comma-separated `field=value`, `field==value` or
 * `field!=value` terms; values may escape `\,` `\=` `\\`. Terms are kept in sorted
 * order, as Kubernetes keeps them; empty terms are skipped; "" selects everything.
 * Throws StatusError 400 with Kubernetes' message on a term without an operator or
 * a bad escape.
 */
export function parseFieldSelector(s: string): FieldSelector {
  const parts = splitTerms(s).sort();
  const reqs: FieldRequirement[] = [];
  for (const part of parts) {
    if (part === "") continue;
    const split = splitTerm(part);
    if (!split) throw errors.badRequest(`invalid selector: '${s}'; can't understand '${part}'`);
    const [field, op, rhs] = split;
    const value = unescapeFieldValue(rhs);
    reqs.push({ field, operator: op === "!=" ? "NotEquals" : "Equals", value });
  }
  return { requirements: reqs };
}

/**
 * Whether an object is selected; `get` returns a field's value for the object
 * (undefined when the object has no such field, which compares as "").
 */
export function matchesFields(
  sel: FieldSelector,
  get: (field: string) => string | undefined,
): boolean {
  for (const r of sel.requirements) {
    const v = get(r.field) ?? "";
    if (r.operator === "Equals" ? v !== r.value : v === r.value) return false;
  }
  return true;
}

/** The distinct fields a selector mentions, in order (to reject unsupported ones). */
export function fieldSelectorFields(sel: FieldSelector): string[] {
  return [...new Set(sel.requirements.map((r) => r.field))];
}

/**
 * Throws StatusError 400 `field label not supported: <field>` for the first field
 * of the selector that is not in `supported`, as Kubernetes answers.
 */
export function checkFieldSelectorFields(sel: FieldSelector, supported: Iterable<string>): void {
  const ok = supported instanceof Set ? (supported as Set<string>) : new Set(supported);
  for (const f of fieldSelectorFields(sel)) {
    if (!ok.has(f)) throw errors.badRequest(`field label not supported: ${f}`);
  }
}

/** The value a selector pins `field` to with an `=` term, if any (for index lookups). */
export function requiredFieldValue(sel: FieldSelector, field: string): string | undefined {
  for (const r of sel.requirements) {
    if (r.field === field && r.operator === "Equals") return r.value;
  }
  return undefined;
}

/** The query-string form: `field=value` / `field!=value` terms joined by ",", values escaped. */
export function formatFieldSelector(sel: FieldSelector): string {
  return sel.requirements
    .map((r) => `${r.field}${r.operator === "Equals" ? "=" : "!="}${escapeFieldValue(r.value)}`)
    .join(",");
}
