/**
 * Content-Type and Accept headers as media types: "application/json; charset=utf-8"
 * becomes a lower-case type plus its parameters.
 */

/** A parsed media type: "application/json; charset=utf-8" → type plus parameters. */
export interface MediaType {
  /** Lower-case "type/subtype". */
  type: string;
  params: Record<string, string>;
}

/** Parses one media type ("a/b;k=v"); an empty header yields type "". */
export function parseMediaType(header: string | undefined): MediaType {
  const [head, ...rest] = (header ?? "").split(";");
  const params: Record<string, string> = {};
  for (const p of rest) {
    const eq = p.indexOf("=");
    if (eq < 0) continue;
    const k = p.slice(0, eq).trim().toLowerCase();
    let v = p.slice(eq + 1).trim();
    if (v.startsWith('"') && v.endsWith('"') && v.length >= 2) v = v.slice(1, -1);
    if (k) params[k] = v;
  }
  return { type: head.trim().toLowerCase(), params };
}

/** Parses an Accept header into its media ranges, in the order given. */
export function parseAccept(header: string | undefined): MediaType[] {
  if (!header) return [];
  return header
    .split(",")
    .map((part) => parseMediaType(part))
    .filter((m) => m.type !== "");
}
