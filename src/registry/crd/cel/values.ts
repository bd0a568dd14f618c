/** JSON values converted to the CEL values a rule sees, guided by the schema. */
import type { ParseResult } from "@marcbachmann/cel-js";
import type { Schema } from "@setpoint/api";
import { declaredProperty, isObject } from "../paths.ts";
import { baseEnvironment } from "./environment.ts";
import { escapeCelName } from "./names.ts";
import type { CelPick } from "./types.ts";

/** Deepest value converted to CEL (deeper values are refused by the size limits first). */
const MAX_CONVERT_DEPTH = 128;

const durationParser = (() => {
  let p: ParseResult | undefined;
  return () => {
    if (!p) p = baseEnvironment().clone().registerVariable("s", "string").parse("duration(s)");
    return p;
  };
})();

function plainObject(): Record<string, unknown> {
  return Object.create(null) as Record<string, unknown>;
}

/** Converts a JSON value to the CEL value a rule sees, guided by its schema. */
export function toCel(v: unknown, s: Schema | undefined, depth = 0): unknown {
  if (v === null || v === undefined) return null;
  if (depth > MAX_CONVERT_DEPTH) throw new Error("value nested too deeply");
  if (typeof v === "number") {
    if (s?.type === "number") return v;
    return Number.isInteger(v) ? BigInt(v) : v;
  }
  if (typeof v === "string") {
    if (s?.type === "string") {
      if ((s.format === "date-time" || s.format === "date") && !Number.isNaN(Date.parse(v))) {
        return new Date(v);
      }
      if (s.format === "byte") return Uint8Array.from(Buffer.from(v, "base64"));
      if (s.format === "duration") {
        try {
          return durationParser()({ s: v });
        } catch {
          return v;
        }
      }
    }
    return v;
  }
  if (typeof v !== "object") return v;
  if (Array.isArray(v)) return v.map((x) => toCel(x, s?.items, depth + 1));
  return celObject(v as Record<string, unknown>, s, depth, undefined);
}

/**
 * The CEL map of an object; with `only`, just the fields of those (CEL) names, for
 * rules that read nothing else of it.
 */
function celObject(
  obj: Record<string, unknown>,
  s: Schema | undefined,
  depth: number,
  only: ReadonlySet<string> | undefined,
): Record<string, unknown> {
  const out = plainObject();
  const extra = isObject(s?.additionalProperties) ? (s?.additionalProperties as Schema) : undefined;
  for (const k of Object.keys(obj)) {
    const prop = declaredProperty(s, k);
    let name: string | undefined;
    let schema: Schema | undefined;
    if (prop) {
      name = escapeCelName(k);
      schema = prop;
    } else if (extra) {
      name = k;
      schema = extra;
    } else if (!s?.properties || s["x-kubernetes-preserve-unknown-fields"]) {
      name = k;
    }
    if (name === undefined || (only !== undefined && !only.has(name))) continue;
    out[name] = toCel(obj[k], schema, depth + 1);
  }
  return out;
}

/**
 * The declared fields of `s` whose CEL names are in `only`, when those are all of
 * an object's members celObject(obj, s, 0, only) can keep (the schema declares
 * properties, no additionalProperties and keeps no unknown fields, and no two
 * fields share a CEL name); undefined otherwise.
 */
export function picksOf(s: Schema, only: ReadonlySet<string> | undefined): CelPick[] | undefined {
  if (only === undefined || !s.properties || s["x-kubernetes-preserve-unknown-fields"]) {
    return undefined;
  }
  if (isObject(s.additionalProperties)) return undefined;
  const picks: CelPick[] = [];
  const names = new Set<string>();
  for (const [key, schema] of Object.entries(s.properties)) {
    const name = escapeCelName(key);
    if (name === undefined) continue;
    if (names.has(name)) return undefined;
    names.add(name);
    if (only.has(name)) picks.push({ key, name, schema });
  }
  return picks;
}

/**
 * `v` as a rule sees it, converting only the fields `only` names when it is an
 * object (just the `picks`, when given: picksOf(s, only)).
 */
export function celView(
  v: unknown,
  s: Schema,
  only: ReadonlySet<string> | undefined,
  picks: readonly CelPick[] | undefined,
): unknown {
  if (only === undefined || !isObject(v)) return toCel(v, s);
  if (picks === undefined) return celObject(v, s, 0, only);
  const out = plainObject();
  for (const p of picks) if (Object.hasOwn(v, p.key)) out[p.name] = toCel(v[p.key], p.schema, 1);
  return out;
}
