/**
 * Regular expressions as Kubernetes runs them: RE2 syntax (Go's `regexp`), matched
 * in time linear in the input whatever the pattern, so that no value can make a
 * schema `pattern` or a CEL `matches()` run for seconds. Patterns RE2 cannot run
 * (lookahead, lookbehind, backreferences) fail to compile, with Go's messages
 * (`error parsing regexp: invalid or unsupported Perl syntax: ...`).
 *
 * Compiled patterns are remembered (at most REGEX_CACHE_SIZE, the oldest dropped
 * first), since schemas and rules use the same few patterns again and again.
 */
import { RE2JS } from "re2js";

/** Most compiled patterns remembered. */
export const REGEX_CACHE_SIZE = 1_000;

/** A pattern that does not compile, with Go's message. */
export class RegexSyntaxError extends Error {}

const compiled = new Map<string, RE2JS | RegexSyntaxError>();

function compileUncached(pattern: string): RE2JS | RegexSyntaxError {
  try {
    return RE2JS.compile(pattern);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return new RegexSyntaxError(
      message.startsWith("error parsing regexp:") ? message : `error parsing regexp: ${message}`,
    );
  }
}

function lookup(pattern: string): RE2JS | RegexSyntaxError {
  let hit = compiled.get(pattern);
  if (hit === undefined) {
    hit = compileUncached(pattern);
    if (compiled.size >= REGEX_CACHE_SIZE) {
      const oldest = compiled.keys().next().value;
      if (oldest !== undefined) compiled.delete(oldest);
    }
    compiled.set(pattern, hit);
  }
  return hit;
}

/** The compiled pattern; throws RegexSyntaxError when RE2 cannot compile it. */
export function compileRegex(pattern: string): RE2JS {
  const re = lookup(pattern);
  if (re instanceof RegexSyntaxError) throw re;
  return re;
}

/** Go's message for a pattern RE2 cannot compile, or undefined when it compiles. */
export function regexError(pattern: string): string | undefined {
  const re = lookup(pattern);
  return re instanceof RegexSyntaxError ? re.message : undefined;
}

/** Whether `pattern` matches anywhere in `s` (Go's MatchString); throws RegexSyntaxError. */
export function regexTest(pattern: string, s: string): boolean {
  return compileRegex(pattern).test(s);
}

/** The first match of `pattern` in `s`, or undefined; throws RegexSyntaxError. */
export function regexFind(pattern: string, s: string): string | undefined {
  const m = compileRegex(pattern).matcher(s);
  return m.find() ? (m.group() ?? "") : undefined;
}

/**
 * The successive non-overlapping matches of `pattern` in `s` (at most `limit` when
 * it is not negative), as Go's FindAllString; throws RegexSyntaxError.
 */
export function regexFindAll(pattern: string, s: string, limit: number): string[] {
  const out: string[] = [];
  if (limit === 0) return out;
  const m = compileRegex(pattern).matcher(s);
  while ((limit < 0 || out.length < limit) && m.find()) out.push(m.group() ?? "");
  return out;
}

/**
 * ajv's `code.regExp` engine: schema patterns compiled and run by RE2. A pattern
 * RE2 cannot compile (only in a schema stored before patterns were checked this
 * way) matches nothing, and schemaPatternMessage says why.
 */
export const ajvRegExpEngine = Object.assign(
  (pattern: string): { test(s: string): boolean; toString(): string } => {
    const re = lookup(pattern);
    return {
      test: re instanceof RegexSyntaxError ? () => false : (s: string) => re.test(s),
      toString: () => `re2:${pattern}`,
    };
  },
  { code: "setpoint.re2" },
);
