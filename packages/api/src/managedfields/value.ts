/**
 * JSON value helpers for field management: copies without `undefined` members, the
 * total order Kubernetes' structured-merge-diff defines over values (used to sort list-item path
 * elements), and JSON text written the way Go's encoder writes it (object keys
 * sorted, `<`, `>` and `&` escaped), since that text ends up in `k:`/`v:` path
 * elements and in the last-applied annotation, where clients compare it byte for byte.
 * Equality, plain-object tests and own-member writes are deep-copy.ts's.
 */
import { isJsonObject, setMember } from "../deep-copy.ts";

/** The keys of a JSON object whose values are not `undefined`, in insertion order. */
export function definedKeys(o: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const k of Object.keys(o)) if (o[k] !== undefined) out.push(k);
  return out;
}

/** `obj[key]` if it is an own property, else undefined (never reads the prototype). */
export function getOwn(obj: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(obj, key) ? obj[key] : undefined;
}

/**
 * A deep copy of a JSON value without its `undefined` members (as a JSON round trip
 * would drop them; deepClone keeps them); object keys keep their order.
 */
export function cloneJson<T>(v: T): T {
  if (typeof v !== "object" || v === null) return v;
  if (Array.isArray(v)) return v.map((x) => cloneJson(x)) as T;
  const src = v as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(src)) {
    if (src[k] !== undefined) setMember(out, k, cloneJson(src[k]));
  }
  return out as T;
}

function isSurrogate(c: number): boolean {
  return c >= 0xd800 && c <= 0xdfff;
}

/**
 * Compares strings by Unicode code point, which is the byte order of their UTF-8
 * encoding (how Go compares strings). Returns -1, 0 or 1.
 */
/** Lengths up to which sortInPlace sorts by insertion (no allocation). */
const INSERTION_SORT_MAX = 16;

/**
 * Sorts `items` in place by `compare`, as Array.prototype.sort does; short arrays
 * (the usual case: an object's keys, a list's items) by insertion, which neither
 * allocates nor calls `compare` more than needed when they are already in order.
 */
export function sortInPlace<T>(items: T[], compare: (a: T, b: T) => number): T[] {
  const n = items.length;
  if (n > INSERTION_SORT_MAX) return items.sort(compare);
  for (let i = 1; i < n; i++) {
    const x = items[i];
    let j = i - 1;
    if (compare(items[j], x) <= 0) continue;
    while (j >= 0 && compare(items[j], x) > 0) {
      items[j + 1] = items[j];
      j--;
    }
    items[j + 1] = x;
  }
  return items;
}

export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const ca = a.charCodeAt(i);
    const cb = b.charCodeAt(i);
    if (ca === cb) continue;
    const sa = isSurrogate(ca);
    if (sa !== isSurrogate(cb)) return sa ? 1 : -1;
    return ca < cb ? -1 : 1;
  }
  return a.length < b.length ? -1 : a.length > b.length ? 1 : 0;
}

function typeRank(v: unknown): number {
  if (typeof v === "number") return 0;
  if (typeof v === "string") return 1;
  if (typeof v === "boolean") return 2;
  if (Array.isArray(v)) return 3;
  if (isJsonObject(v)) return 4;
  return 5; // null
}

/**
 * The total order structured-merge-diff defines over values: numbers, then strings,
 * booleans, lists, maps, and null last. Returns -1, 0 or 1.
 */
export function compareValues(a: unknown, b: unknown): number {
  const ra = typeRank(a);
  const rb = typeRank(b);
  if (ra !== rb) return ra < rb ? -1 : 1;
  switch (ra) {
    case 0:
      return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
    case 1:
      return compareStrings(a as string, b as string);
    case 2:
      return a === b ? 0 : a ? 1 : -1;
    case 3: {
      const x = a as unknown[];
      const y = b as unknown[];
      for (let i = 0; i < Math.min(x.length, y.length); i++) {
        const c = compareValues(x[i], y[i]);
        if (c !== 0) return c;
      }
      return x.length < y.length ? -1 : x.length > y.length ? 1 : 0;
    }
    case 4: {
      const x = a as Record<string, unknown>;
      const y = b as Record<string, unknown>;
      const kx = definedKeys(x).sort(compareStrings);
      const ky = definedKeys(y).sort(compareStrings);
      for (let i = 0; i < Math.min(kx.length, ky.length); i++) {
        const c = compareStrings(kx[i], ky[i]) || compareValues(x[kx[i]], y[ky[i]]);
        if (c !== 0) return c;
      }
      return kx.length < ky.length ? -1 : kx.length > ky.length ? 1 : 0;
    }
    default:
      return 0;
  }
}

const HTML_UNSAFE = /[<>&\u2028\u2029]/g;
const HAS_HTML_UNSAFE = /[<>&\u2028\u2029]/;

function escapeHtml(c: string): string {
  return `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;
}

/** A JSON string literal as Go's encoder writes it (HTML-sensitive characters escaped). */
export function goJsonString(s: string): string {
  const json = JSON.stringify(s);
  return HAS_HTML_UNSAFE.test(s) ? json.replace(HTML_UNSAFE, escapeHtml) : json;
}

/**
 * JSON text of a value as Go's encoding/json writes an unstructured value: object
 * keys sorted, no whitespace, HTML-sensitive characters escaped.
 */
export function goJson(v: unknown): string {
  if (v === null || v === undefined) return "null";
  switch (typeof v) {
    case "string":
      return goJsonString(v);
    case "number":
      return Number.isFinite(v) ? JSON.stringify(v) : "null";
    case "boolean":
      return v ? "true" : "false";
  }
  if (Array.isArray(v)) return `[${v.map((x) => goJson(x)).join(",")}]`;
  if (!isJsonObject(v)) return "null";
  const keys = sortInPlace(definedKeys(v), compareStrings);
  return `{${keys.map((k) => `${goJsonString(k)}:${goJson(v[k])}`).join(",")}}`;
}

const GO_ESCAPES: Record<string, string> = {
  '"': '\\"',
  "\\": "\\\\",
  "\x07": "\\a",
  "\b": "\\b",
  "\f": "\\f",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
  "\v": "\\v",
};

/** A string quoted as Go's `%q` verb quotes it (used in conflict and error messages). */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const esc = GO_ESCAPES[ch];
    if (esc !== undefined) {
      out += esc;
      continue;
    }
    const c = ch.codePointAt(0) ?? 0;
    out += c < 0x20 || c === 0x7f ? `\\x${c.toString(16).padStart(2, "0")}` : ch;
  }
  return `${out}"`;
}

/** A value printed as structured-merge-diff prints it in field paths (`"x"`, `80`, `true`). */
export function valueToString(v: unknown): string {
  if (v === null || v === undefined) return "null";
  if (typeof v === "string") return goQuote(v);
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  if (Array.isArray(v)) return `[${v.map((x) => valueToString(x)).join(",")}]`;
  if (isJsonObject(v)) {
    return definedKeys(v)
      .map((k) => `${k}=${valueToString(v[k])}`)
      .join("");
  }
  return "null";
}
