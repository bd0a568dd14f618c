/**
 * Accept headers as a list of media ranges in preference order: by q-value
 * (highest first), then as written. Ranges with q=0 are refused by the client and
 * dropped. Parameter names are lower-cased; values keep their case and may be
 * quoted.
 */

export interface MediaRange {
  /** Lower-case type, e.g. "application" or "*". */
  type: string;
  /** Lower-case subtype, e.g. "json" or "*". */
  subtype: string;
  /** Parameters other than q. */
  params: Record<string, string>;
  q: number;
}

function unquote(v: string): string {
  const t = v.trim();
  if (t.length >= 2 && t.startsWith('"') && t.endsWith('"')) {
    return t.slice(1, -1).replace(/\\(.)/g, "$1");
  }
  return t;
}

/** Splits on `sep` outside double quotes. */
function splitOutsideQuotes(s: string, sep: string): string[] {
  const out: string[] = [];
  let cur = "";
  let quoted = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '"') quoted = !quoted;
    if (c === "\\" && quoted && i + 1 < s.length) {
      cur += c + s[++i];
      continue;
    }
    if (c === sep && !quoted) {
      out.push(cur);
      cur = "";
    } else cur += c;
  }
  out.push(cur);
  return out;
}

/** Parses an Accept header into media ranges in preference order. */
export function parseAcceptRanges(header: string | undefined): MediaRange[] {
  if (!header) return [];
  const ranges: { r: MediaRange; i: number }[] = [];
  splitOutsideQuotes(header, ",").forEach((part, i) => {
    const [head, ...paramParts] = splitOutsideQuotes(part, ";");
    const full = head.trim().toLowerCase();
    const slash = full.indexOf("/");
    if (slash <= 0 || slash === full.length - 1) return;
    const params: Record<string, string> = {};
    let q = 1;
    for (const p of paramParts) {
      const eq = p.indexOf("=");
      if (eq < 0) continue;
      const name = p.slice(0, eq).trim().toLowerCase();
      const value = unquote(p.slice(eq + 1));
      if (!name) continue;
      if (name === "q") {
        const n = Number(value);
        q = Number.isFinite(n) ? Math.min(Math.max(n, 0), 1) : 0;
      } else params[name] = value;
    }
    if (q <= 0) return;
    ranges.push({
      r: { type: full.slice(0, slash), subtype: full.slice(slash + 1), params, q },
      i,
    });
  });
  return ranges.sort((a, b) => b.r.q - a.r.q || a.i - b.i).map((x) => x.r);
}

/** Whether a range covers application/json (exactly or by wildcard). */
export function coversJson(r: MediaRange): boolean {
  return (
    (r.type === "application" && (r.subtype === "json" || r.subtype === "*")) ||
    (r.type === "*" && r.subtype === "*")
  );
}
