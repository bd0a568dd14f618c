/** Property names as CEL rules refer to them (Kubernetes' escaping). */

/** CEL's reserved words: not usable as identifiers. */
export const CEL_KEYWORDS: ReadonlySet<string> = new Set([
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
