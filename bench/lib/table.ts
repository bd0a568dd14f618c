/** Printing benchmark results: each figure beside its baseline and the ratio. */

/** One printed line of a benchmark. */
export interface Row {
  backend: string;
  metric: string;
  value: number;
  unit: string;
  baseline: number;
  baselineLabel: string;
  /** "higher" when more is better (rates), "lower" when less is (latencies). */
  better: "higher" | "lower";
  /** A goal for this figure, shown with whether it was met. */
  goal?: { text: string; met: boolean };
}

/** value / baseline, as printed. */
export function ratio(value: number, baseline: number): number {
  return baseline > 0 ? value / baseline : Number.NaN;
}

function formatNumber(value: number, unit: string): string {
  if (!Number.isFinite(value)) return "n/a";
  if (unit === "ms") return `${value.toFixed(2)} ms`;
  return `${Math.round(value).toLocaleString("en-US")} ${unit}`;
}

function pad(text: string, width: number, right = false): string {
  return right ? text.padStart(width) : text.padEnd(width);
}

/** Prints rows as an aligned table. */
export function printTable(title: string, rows: Row[]): void {
  const cells = rows.map((r) => [
    r.backend,
    r.metric,
    formatNumber(r.value, r.unit),
    `${formatNumber(r.baseline, r.unit)}  ${r.baselineLabel}`,
    `${ratio(r.value, r.baseline).toFixed(2)}x`,
    r.goal ? `${r.goal.met ? "met" : "MISSED"}: ${r.goal.text}` : "",
  ]);
  const header = ["backend", "metric", "value", "baseline", "ratio", "goal"];
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) =>
    c
      .map((text, i) => pad(text, widths[i], i === 2 || i === 4))
      .join("  ")
      .trimEnd();
  console.log(`\n${title}`);
  console.log(line(header));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const c of cells) console.log(line(c));
}
