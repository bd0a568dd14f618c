/** How CEL compile errors and rules are shown in causes, in cel-go's and Kubernetes' shapes. */
import type { ValidationRule } from "@setpoint/api";

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
export function formatCompileError(src: string, what: string, offset: number): string {
  const { line, col, text } = lineCol(src, Math.max(0, Math.min(offset, src.length)));
  return `ERROR: <input>:${line}:${col}: ${what}\n | ${text}\n | ${".".repeat(col - 1)}^`;
}

export function errorOffset(err: unknown): number {
  const r = (err as { range?: { start?: number } }).range;
  return typeof r?.start === "number" ? r.start : 0;
}

export function errorSummary(err: unknown): string {
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

export function ruleErrorString(rule: ValidationRule): string {
  return rule.message?.trim() || rule.rule.trim();
}
