/**
 * How the inspection commands print: aligned tables for people (kubectl's style:
 * upper-case headers, columns separated by three spaces, cells may span several
 * lines), or one JSON document with `-o json` for scripts.
 */
import { UsageError } from "./usage-error.ts";

/** The output formats the inspection commands accept with `-o`. */
export type OutputFormat = "table" | "json";

/** Spaces between table columns. */
export const COLUMN_GAP = 3;

/** Validates `-o`: unset means a table. */
export function parseOutputFormat(value: string | undefined): OutputFormat {
  if (value === undefined || value === "" || value === "table") return "table";
  if (value === "json") return "json";
  throw new UsageError(`-o must be json (or omitted for a table), got ${JSON.stringify(value)}`);
}

/**
 * An aligned table. Each cell is a string; a cell with newlines spans several
 * lines (the row's other cells are blank on the extra lines). The last column is
 * not padded.
 */
export function renderTable(headers: string[], rows: string[][]): string {
  const split = rows.map((r) => headers.map((_, i) => (r[i] ?? "").split("\n")));
  const widths = headers.map((h, i) =>
    Math.max(h.length, ...split.map((r) => Math.max(...r[i].map((l) => l.length)))),
  );
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] + COLUMN_GAP)))
      .join("")
      .trimEnd();
  const out = [line(headers.map((h) => h.toUpperCase()))];
  for (const r of split) {
    const height = Math.max(...r.map((c) => c.length));
    for (let k = 0; k < height; k++) out.push(line(r.map((c) => c[k] ?? "")));
  }
  return `${out.join("\n")}\n`;
}

/** A value as indented JSON with a final newline. */
export function renderJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** Writes text to stdout. */
export function print(text: string): void {
  process.stdout.write(text);
}

/** Writes a line to stderr (progress, warnings: never mixed into -o json). */
export function note(text: string): void {
  process.stderr.write(`${text}\n`);
}
