/**
 * The Kubernetes CEL library, as far as validation rules commonly use it, on top
 * of what the CEL library itself provides (size, has, matches, startsWith,
 * endsWith, contains, all/exists/exists_one/map/filter, int/string/double
 * conversions, timestamp, duration, split, join, substring, indexOf, lowerAscii,
 * upperAscii, trim, optional values):
 *
 * - lists: `isSorted()`, `sum()`, `min()`, `max()`, `indexOf(x)`, `lastIndexOf(x)`;
 * - strings: `charAt(i)`, `replace(a, b)`, `replace(a, b, n)`, `reverse()`,
 *   `find(re)`, `findAll(re)`, `findAll(re, n)`;
 * - URLs: `url(s)`, `isURL(s)`, `getScheme()`, `getHost()`, `getHostname()`,
 *   `getPort()`, `getEscapedPath()`, `getQuery()`;
 * - sets: `sets.contains(a, b)`, `sets.equivalent(a, b)`, `sets.intersects(a, b)`.
 *
 * Not provided (a rule using them fails to compile with "found no matching
 * overload"): `quantity()`, `ip()`, `cidr()`, `format.*`, `semver()`,
 * `strings.quote`, `string.format`, and the authorizer library (not available to
 * CRD rules in Kubernetes either).
 *
 * Functions whose work grows with their input charge the running rule's cost
 * meter with their input size, so the runtime cost limit covers them too.
 *
 * Regular expressions (`matches`, `find`, `findAll`) run in RE2, in time linear in
 * the input, as in Kubernetes; a literal pattern RE2 cannot compile fails the
 * rule's compilation (literalPatternIssue).
 */
import { Environment } from "@marcbachmann/cel-js";
import { regexFind, regexFindAll, regexTest } from "../regex.ts";
import { registerAuthzLibrary } from "./authz.ts";
import { charge } from "./meter.ts";
import { type AstNode, isAst } from "./types.ts";

/** Strings are charged at one unit per ten characters, as Kubernetes estimates them. */
function chargeString(s: string): void {
  charge(Math.ceil(s.length / 10));
}

function compare(a: unknown, b: unknown): number {
  if (typeof a === "bigint" && typeof b === "bigint") return a < b ? -1 : a > b ? 1 : 0;
  if (
    (typeof a === "number" || typeof a === "bigint") &&
    (typeof b === "number" || typeof b === "bigint")
  ) {
    const x = Number(a);
    const y = Number(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (typeof a === "string" && typeof b === "string") return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === "boolean" && typeof b === "boolean") return Number(a) - Number(b);
  throw new Error(`no such overload: cannot compare ${typeof a} and ${typeof b}`);
}

function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (
    (typeof a === "number" || typeof a === "bigint") &&
    (typeof b === "number" || typeof b === "bigint")
  ) {
    return Number(a) === Number(b);
  }
  if (typeof a === "object" && typeof b === "object" && a !== null && b !== null) {
    return stableJson(a) === stableJson(b);
  }
  return false;
}

function stableJson(v: unknown): string {
  return JSON.stringify(v, (_k, x) => {
    if (typeof x === "bigint") return `${x}n`;
    if (x instanceof Map) return Object.fromEntries(x);
    if (typeof x === "object" && x !== null && !Array.isArray(x)) {
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(x).sort()) out[k] = (x as Record<string, unknown>)[k];
      return out;
    }
    return x;
  });
}

function listOf(v: unknown): unknown[] {
  if (Array.isArray(v)) return v;
  if (v instanceof Set) return [...v];
  throw new Error("expected a list");
}

/** A pattern compiled by RE2, charged for its length. */
function chargePattern(pattern: string): void {
  chargeString(pattern);
}

/** A parsed URL, as Kubernetes' `url()` returns it. */
export class KubeURL {
  constructor(readonly url: URL) {}
}

function parseUrl(s: string): URL | undefined {
  // Kubernetes accepts absolute URLs and absolute paths.
  try {
    if (s.startsWith("/")) return new URL(s, "http://relative.invalid");
    const u = new URL(s);
    return u.protocol ? u : undefined;
  } catch {
    return undefined;
  }
}

/** Marker class of the `sets` namespace constant. */
class SetsNamespace {}

/**
 * A new environment with the Kubernetes library registered, typed options as
 * Kubernetes' CEL environment has them (optional values on, heterogeneous
 * literals allowed).
 */
export function kubernetesEnvironment(): Environment {
  const env = new Environment({ enableOptionalTypes: true, homogeneousAggregateLiterals: false });

  env.registerFunction("list.isSorted(): bool", (l: unknown) => {
    const items = listOf(l);
    charge(items.length);
    for (let i = 1; i < items.length; i++) if (compare(items[i - 1], items[i]) > 0) return false;
    return true;
  });
  env.registerFunction("list.sum(): dyn", (l: unknown) => {
    const items = listOf(l);
    charge(items.length);
    if (items.every((x) => typeof x === "bigint")) {
      return (items as bigint[]).reduce((a, b) => a + b, 0n);
    }
    return items.reduce((a: number, b) => a + Number(b), 0);
  });
  for (const [name, sign] of [
    ["min", -1],
    ["max", 1],
  ] as const) {
    env.registerFunction(`list.${name}(): dyn`, (l: unknown) => {
      const items = listOf(l);
      charge(items.length);
      if (items.length === 0) throw new Error(`${name} called on empty list`);
      let best = items[0];
      for (const x of items) if (compare(x, best) * sign > 0) best = x;
      return best;
    });
  }
  env.registerFunction("list.indexOf(dyn): int", (l: unknown, x: unknown) => {
    const items = listOf(l);
    charge(items.length);
    return BigInt(items.findIndex((y) => same(x, y)));
  });
  env.registerFunction("list.lastIndexOf(dyn): int", (l: unknown, x: unknown) => {
    const items = listOf(l);
    charge(items.length);
    for (let i = items.length - 1; i >= 0; i--) if (same(x, items[i])) return BigInt(i);
    return -1n;
  });

  env.registerFunction("string.charAt(int): string", (s: string, i: bigint) => {
    const chars = [...s];
    if (i < 0n || i > BigInt(chars.length)) throw new Error(`index out of range: ${i}`);
    return chars[Number(i)] ?? "";
  });
  env.registerFunction(
    "string.replace(string, string): string",
    (s: string, a: string, b: string) => {
      chargeString(s);
      return s.split(a).join(b);
    },
  );
  env.registerFunction(
    "string.replace(string, string, int): string",
    (s: string, a: string, b: string, n: bigint) => {
      chargeString(s);
      if (n < 0n) return s.split(a).join(b);
      let out = s;
      let from = 0;
      for (let i = 0n; i < n; i++) {
        const at = out.indexOf(a, from);
        if (at < 0) break;
        out = out.slice(0, at) + b + out.slice(at + a.length);
        from = at + b.length;
      }
      return out;
    },
  );
  env.registerFunction("string.reverse(): string", (s: string) => {
    chargeString(s);
    return [...s].reverse().join("");
  });
  env.registerFunction("string.find(string): string", (s: string, re: string) => {
    chargeString(s);
    chargePattern(re);
    return regexFind(re, s) ?? "";
  });
  const findAll = (s: string, re: string, n: bigint) => {
    chargeString(s);
    chargePattern(re);
    return regexFindAll(re, s, n < 0n ? -1 : Number(n));
  };
  env.registerFunction("string.findAll(string): list<string>", (s: string, re: string) =>
    findAll(s, re, -1n),
  );
  env.registerFunction("string.findAll(string, int): list<string>", findAll);

  registerAuthzLibrary(env);
  env.registerType("kubernetes.URL", KubeURL);
  env.registerFunction("url(string): kubernetes.URL", (s: string) => {
    const u = parseUrl(s);
    if (!u) throw new Error(`URL parse error during conversion from string: ${s}`);
    return new KubeURL(u);
  });
  env.registerFunction("isURL(string): bool", (s: string) => parseUrl(s) !== undefined);
  env.registerFunction("kubernetes.URL.getScheme(): string", (u: KubeURL) =>
    u.url.host === "relative.invalid" ? "" : u.url.protocol.replace(/:$/, ""),
  );
  env.registerFunction("kubernetes.URL.getHost(): string", (u: KubeURL) =>
    u.url.host === "relative.invalid" ? "" : u.url.host,
  );
  env.registerFunction("kubernetes.URL.getHostname(): string", (u: KubeURL) =>
    u.url.host === "relative.invalid" ? "" : u.url.hostname.replace(/^\[|\]$/g, ""),
  );
  env.registerFunction("kubernetes.URL.getPort(): string", (u: KubeURL) => u.url.port);
  env.registerFunction("kubernetes.URL.getEscapedPath(): string", (u: KubeURL) => u.url.pathname);
  env.registerFunction("kubernetes.URL.getQuery(): map<string, list<string>>", (u: KubeURL) => {
    const out: Record<string, string[]> = {};
    for (const [k, v] of u.url.searchParams) {
      out[k] = [...(out[k] ?? []), v];
    }
    return out;
  });

  env.registerType("kubernetes.Sets", SetsNamespace);
  env.registerConstant("sets", "kubernetes.Sets", new SetsNamespace());
  env.registerFunction(
    "kubernetes.Sets.contains(list, list): bool",
    (_s: unknown, a: unknown, b: unknown) => {
      const x = listOf(a);
      const y = listOf(b);
      charge(x.length * y.length);
      return y.every((v) => x.some((w) => same(v, w)));
    },
  );
  env.registerFunction(
    "kubernetes.Sets.equivalent(list, list): bool",
    (_s: unknown, a: unknown, b: unknown) => {
      const x = listOf(a);
      const y = listOf(b);
      charge(x.length * y.length);
      return y.every((v) => x.some((w) => same(v, w))) && x.every((v) => y.some((w) => same(v, w)));
    },
  );
  env.registerFunction(
    "kubernetes.Sets.intersects(list, list): bool",
    (_s: unknown, a: unknown, b: unknown) => {
      const x = listOf(a);
      const y = listOf(b);
      charge(x.length * y.length);
      return y.some((v) => x.some((w) => same(v, w)));
    },
  );
  return env;
}

/** The functions whose argument is a regular expression. */
const REGEX_FUNCTIONS = new Set(["matches", "find", "findAll"]);

/** Calls `fn` on every parsed node of an expression. */
function visitAst(v: unknown, fn: (n: AstNode) => void): void {
  if (Array.isArray(v)) {
    for (const x of v) visitAst(x, fn);
    return;
  }
  if (!isAst(v)) return;
  fn(v);
  if (v.op !== "value" && typeof v.args === "object" && v.args !== null) visitAst(v.args, fn);
}

/** A receiver call node's name, receiver and arguments, when `n` is one. */
function receiverCall(n: AstNode): [string, unknown, unknown[]] | undefined {
  if (n.op !== "rcall" || !Array.isArray(n.args)) return undefined;
  const [name, receiver, args] = n.args as [unknown, unknown, unknown];
  if (typeof name !== "string" || !Array.isArray(args)) return undefined;
  return [name, receiver, args];
}

/** What is wrong with a literal pattern of a rule, as Kubernetes reports it. */
export type PatternIssue =
  /** `matches` with a literal RE2 cannot compile: a compile error at the literal. */
  | { kind: "compile"; message: string; offset: number }
  /** `find`/`findAll` with such a literal: the program cannot be instantiated. */
  | { kind: "program"; message: string };

/**
 * The first call of `matches`, `find` or `findAll` whose pattern is a string
 * literal RE2 cannot compile, or undefined.
 */
export function literalPatternIssue(ast: unknown): PatternIssue | undefined {
  let issue: PatternIssue | undefined;
  visitAst(ast, (n) => {
    if (issue) return;
    const call = receiverCall(n);
    if (!call || !REGEX_FUNCTIONS.has(call[0])) return;
    const arg = call[2][0];
    if (!isAst(arg) || arg.op !== "value" || typeof arg.args !== "string") return;
    try {
      regexTest(arg.args, "");
    } catch (err) {
      const message = (err as Error).message;
      issue =
        call[0] === "matches"
          ? { kind: "compile", message: "invalid matches argument", offset: arg.start ?? 0 }
          : { kind: "program", message };
    }
  });
  return issue;
}

interface CheckedCall {
  handle?: (args: unknown, ev: unknown, ast: unknown) => unknown;
}

/**
 * Makes the type-checked expression `ast` run `string.matches(string)` in RE2
 * instead of the CEL library's backtracking RegExp. The library's handler stays
 * for what RE2 does not decide (arguments that are not both strings: its error).
 */
export function useRe2Matches(ast: unknown): void {
  visitAst(ast, (n) => {
    const call = receiverCall(n);
    if (call === undefined) return;
    const [name, , args] = call;
    if (name !== "matches" || args.length !== 1) return;
    const node = n as AstNode & CheckedCall;
    const original = node.handle;
    if (typeof original !== "function") {
      throw new Error("CEL matches() cannot be run in RE2: the expression is not type-checked");
    }
    node.handle = (args, ev, at) => {
      if (Array.isArray(args) && typeof args[0] === "string" && typeof args[1] === "string") {
        chargeString(args[0]);
        chargePattern(args[1]);
        return regexTest(args[1], args[0]);
      }
      return original(args, ev, at);
    };
  });
}
