/**
 * Values printed as Kubernetes prints them in field errors (Go's `%#v`): a label map
 * as `map[string]string{"a":"1", "b":"2"}` with sorted keys, a label selector as
 * `v1.LabelSelector{MatchLabels:..., MatchExpressions:...}`.
 */

type Obj = Record<string, unknown>;

const quote = (s: unknown): string => JSON.stringify(typeof s === "string" ? s : String(s ?? ""));

/** A map[string]string; `map[string]string(nil)` when absent. */
export function goStringMap(m: Record<string, unknown> | undefined): string {
  if (!m) return "map[string]string(nil)";
  const keys = Object.keys(m).sort();
  return `map[string]string{${keys.map((k) => `${quote(k)}:${quote(m[k])}`).join(", ")}}`;
}

function goStrings(list: unknown): string {
  if (!Array.isArray(list)) return "[]string(nil)";
  return `[]string{${list.map(quote).join(", ")}}`;
}

/** A metav1.LabelSelector. */
export function goLabelSelector(sel: Obj | undefined): string {
  const labels = sel?.matchLabels as Record<string, unknown> | undefined;
  const exprs = Array.isArray(sel?.matchExpressions) ? (sel.matchExpressions as Obj[]) : undefined;
  const expressions = exprs
    ? `[]v1.LabelSelectorRequirement{${exprs
        .map(
          (e) =>
            `v1.LabelSelectorRequirement{Key:${quote(e.key)}, Operator:${quote(e.operator)}, Values:${goStrings(e.values)}}`,
        )
        .join(", ")}}`
    : "[]v1.LabelSelectorRequirement(nil)";
  return `v1.LabelSelector{MatchLabels:${goStringMap(labels)}, MatchExpressions:${expressions}}`;
}
