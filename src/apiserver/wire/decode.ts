/**
 * Decoding request bodies into objects: JSON, YAML and (for built-in types)
 * Kubernetes protobuf. Besides the object, decoding reports duplicate fields, which
 * `fieldValidation` turns into an error (Strict) or a warning (Warn).
 */

import { errors } from "@setpoint/api";
import { isMap, isPair, isScalar, isSeq, parseDocument } from "yaml";
import { parseJsonOffThread } from "./json-thread.ts";
import type { MediaType } from "./media-type.ts";
import { decodeProtobufObject, isProtobufContentType } from "./protobuf/index.ts";
import { parseYamlOffThread } from "./yaml-thread.ts";

/** The media types a create or update body may have. */
export const BODY_MEDIA_TYPES = [
  "application/json",
  "application/yaml",
  "application/vnd.kubernetes.protobuf",
];

/** Aliases a YAML body may expand before it is refused (billion-laughs guard). */
export const MAX_YAML_ALIASES = 100;

/** Deepest nesting of a decoded body accepted. */
export const MAX_BODY_DEPTH = 100;

export interface Decoded {
  /** The decoded value (an object unless the caller accepts other JSON values). */
  value: unknown;
  /** Paths of fields that appear more than once in one object, e.g. "metadata.name". */
  duplicates: string[];
}

function joinPath(path: string, key: string): string {
  return path === "" ? key : `${path}.${key}`;
}

/** Keys of one object compared pairwise before a set is used (findDuplicateJsonKeys). */
const PAIRWISE_KEYS = 16;

/** Key ranges of the objects being scanned: start and end offsets, reused between scans. */
let keyRanges = new Int32Array(256);

/** Index of the first character at or after `i` that is not JSON whitespace. */
function skipBlanks(text: string, i: number): number {
  for (;;) {
    const c = text.charCodeAt(i);
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++;
    else return i;
  }
}

/** Index just past a number, true, false or null starting at `i` (at its delimiter or the end). */
function skipScalar(text: string, i: number): number {
  for (;;) {
    const d = text.charCodeAt(i);
    if (
      Number.isNaN(d) ||
      d === 0x2c ||
      d === 0x7d ||
      d === 0x5d ||
      d === 0x20 ||
      d === 0x0a ||
      d === 0x0d ||
      d === 0x09
    ) {
      return i;
    }
    i++;
  }
}

/**
 * Index of the quote closing the string whose opening quote is at `start`. With
 * `escapes` (the text has a backslash somewhere), a quote preceded by an odd run of
 * backslashes is skipped; the text length when there is none.
 */
function closingQuote(text: string, start: number, escapes: boolean): number {
  let end = text.indexOf('"', start + 1);
  if (escapes) {
    while (end > 0) {
      let bs = 0;
      for (let j = end - 1; j > start && text.charCodeAt(j) === 0x5c; j--) bs++;
      if (bs % 2 === 0) break;
      end = text.indexOf('"', end + 1);
    }
  }
  return end < 0 ? text.length : end;
}

/**
 * Scans valid JSON text for keys that repeat within one object. Only called on text
 * JSON.parse accepted, so it needs no error handling beyond staying in bounds.
 *
 * Keys are compared where they stand in the text (no key string is made) while an
 * object has few keys; an object with many keys, or with a key holding an escape,
 * compares decoded key strings in a set instead (an escaped key is compared by what
 * it decodes to: "\u0041" and "A" are the same key). Paths are only built for the
 * duplicates found.
 */
export function findDuplicateJsonKeys(text: string): string[] {
  const escapes = text.includes("\\");
  const found: string[] = [];
  // The path to the current value, two numbers a segment: a key's range (start, end),
  // an array index (-1, i), or a decoded escaped key (-2, its index in `decodedKeys`).
  const path: number[] = [];
  const decodedKeys: string[] = [];
  let top = 0;
  let i = 0;
  const render = (): string => {
    let out = "";
    for (let p = 0; p < path.length; p += 2) {
      if (path[p] === -1) out += `[${path[p + 1]}]`;
      else {
        const seg = path[p] === -2 ? decodedKeys[path[p + 1]] : text.slice(path[p], path[p + 1]);
        out += out === "" ? seg : `.${seg}`;
      }
    }
    return out;
  };
  const ws = () => {
    i = skipBlanks(text, i);
  };
  const sameKey = (a: number, b: number, len: number): boolean => {
    for (let k = 0; k < len; k++)
      if (text.charCodeAt(a + k) !== text.charCodeAt(b + k)) return false;
    return true;
  };
  const value = (depth: number): void => {
    ws();
    const c = text.charCodeAt(i);
    if (c === 0x7b /* { */) {
      i++;
      ws();
      if (text.charCodeAt(i) === 0x7d) {
        i++;
        return;
      }
      const base = top;
      const decodedBase = decodedKeys.length;
      let seen: Set<string> | null = null;
      while (i < text.length) {
        ws();
        // The key: from after its opening quote to its closing one.
        const ks = i + 1;
        const ke = closingQuote(text, i, escapes);
        i = ke + 1;
        const len = ke - ks;
        // An escaped key is compared (and named in paths) by what it decodes to.
        let decoded: string | null = null;
        if (escapes) {
          const bs = text.indexOf("\\", ks);
          if (bs >= 0 && bs < ke) decoded = JSON.parse(text.slice(ks - 1, ke + 1)) as string;
        }
        let dup = false;
        if (seen === null && (decoded !== null || (top - base) / 2 >= PAIRWISE_KEYS)) {
          seen = new Set();
          for (let r = base; r < top; r += 2) seen.add(text.slice(keyRanges[r], keyRanges[r + 1]));
        }
        if (seen !== null) {
          const k = decoded ?? text.slice(ks, ke);
          if (seen.has(k)) dup = true;
          else seen.add(k);
        } else {
          for (let r = base; r < top; r += 2) {
            if (keyRanges[r + 1] - keyRanges[r] === len && sameKey(keyRanges[r], ks, len)) {
              dup = true;
              break;
            }
          }
          if (!dup) {
            if (top + 2 > keyRanges.length) {
              const grown = new Int32Array(keyRanges.length * 2);
              grown.set(keyRanges);
              keyRanges = grown;
            }
            keyRanges[top++] = ks;
            keyRanges[top++] = ke;
          }
        }
        if (decoded === null) path.push(ks, ke);
        else {
          path.push(-2, decodedKeys.length);
          decodedKeys.push(decoded);
        }
        if (dup) found.push(render());
        ws();
        i++; // colon
        if (depth < MAX_BODY_DEPTH) value(depth + 1);
        path.length -= 2;
        ws();
        if (text.charCodeAt(i) === 0x2c) {
          i++;
          continue;
        }
        i++; // closing brace
        break;
      }
      top = base;
      if (decodedKeys.length > decodedBase) decodedKeys.length = decodedBase;
    } else if (c === 0x5b /* [ */) {
      i++;
      ws();
      if (text.charCodeAt(i) === 0x5d) {
        i++;
        return;
      }
      let n = 0;
      while (i < text.length) {
        path.push(-1, n);
        if (depth < MAX_BODY_DEPTH) value(depth + 1);
        path.length -= 2;
        n++;
        ws();
        if (text.charCodeAt(i) === 0x2c) {
          i++;
          continue;
        }
        i++; // closing bracket
        return;
      }
    } else if (c === 0x22 /* " */) {
      i = closingQuote(text, i, escapes) + 1;
    } else {
      i = skipScalar(text, i);
    }
  };
  value(0);
  return found;
}

function tooDeep() {
  return errors.badRequest(`the request body is nested deeper than ${MAX_BODY_DEPTH} levels`);
}

/**
 * The number of strings in `v`, keys and string values: the strings its JSON text
 * has when no key repeats. Counted in one walk that also refuses (400) a value
 * nested deeper than MAX_BODY_DEPTH (the walk recurses no deeper than that).
 */
function countStrings(v: unknown, depth: number): number {
  if (depth > MAX_BODY_DEPTH) throw tooDeep();
  let n = 0;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const c = v[i];
      if (typeof c === "string") n++;
      else if (c !== null && typeof c === "object") n += countStrings(c, depth + 1);
    }
    return n;
  }
  const obj = v as Record<string, unknown>;
  for (const k in obj) {
    n++;
    const c = obj[k];
    if (typeof c === "string") n++;
    else if (c !== null && typeof c === "object") n += countStrings(c, depth + 1);
  }
  return n;
}

function checkDepth(v: unknown): void {
  if (v !== null && typeof v === "object") countStrings(v, 0);
}

/**
 * Half the number of quotes in JSON text: its number of strings (keys and
 * values), plus half its escaped quotes (never fewer).
 */
function quotedStrings(text: string): number {
  let quotes = 0;
  for (let i = text.indexOf('"'); i >= 0; i = text.indexOf('"', i + 1)) quotes++;
  return quotes / 2;
}

/**
 * quotedStrings of the UTF-8 text in `bytes` (a quote byte is always a quote
 * character in UTF-8), counted over the bytes, which is quicker than over the string.
 */
function quotedStringsOfBytes(bytes: Uint8Array): number {
  let quotes = 0;
  for (let i = 0; i < bytes.length; i++) if (bytes[i] === 0x22) quotes++;
  return quotes / 2;
}

/** Parses JSON text; a syntax error is a 400 in Kubernetes' words. */
export function decodeJson(text: string): Decoded {
  return decodedJson(text, parseJson(text));
}

/** decodeJson of the UTF-8 text `bytes` holds (`text`). */
function decodeJsonBytes(bytes: Uint8Array, text: string): Decoded {
  return decodedJson(text, parseJson(text), bytes);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw jsonParseError((err as Error).message);
  }
}

/** A JSON syntax error (JSON.parse's message) as a 400 in Kubernetes' words. */
function jsonParseError(message: string) {
  return errors.badRequest(
    `couldn't get version/kind; json parse error: ${message || "invalid JSON"}`,
  );
}

function decodedJson(text: string, value: unknown, bytes?: Uint8Array): Decoded {
  if (value === null || typeof value !== "object") return { value, duplicates: [] };
  // Parsing keeps one of each repeated key and drops the other's value: the parsed
  // value has as many strings as the text has quoted strings only when no key
  // repeats (and no quote is escaped; otherwise the scan tells).
  const strings = countStrings(value, 0);
  const quoted = bytes === undefined ? quotedStrings(text) : quotedStringsOfBytes(bytes);
  const duplicates = quoted === strings ? [] : findDuplicateJsonKeys(text);
  return { value, duplicates };
}

function yamlDuplicates(node: unknown, path: string, out: string[], depth: number): void {
  if (depth > MAX_BODY_DEPTH) return;
  if (isMap(node)) {
    const seen = new Set<string>();
    for (const item of node.items) {
      if (!isPair(item)) continue;
      const k = isScalar(item.key) ? String(item.key.value) : String(item.key);
      const child = joinPath(path, k);
      if (seen.has(k)) out.push(child);
      else seen.add(k);
      yamlDuplicates(item.value, child, out, depth + 1);
    }
  } else if (isSeq(node)) {
    node.items.forEach((item, n) => {
      yamlDuplicates(item, `${path}[${n}]`, out, depth + 1);
    });
  }
}

/**
 * Most values a YAML body may have, counted before it is parsed (YAML parsing
 * costs about a microsecond per value, on the event loop). A value needs a line,
 * a comma or a bracket of its own, so those are what is counted; JSON bodies sent
 * as YAML are parsed as JSON and not counted.
 */
export const MAX_YAML_VALUES = 250_000;

function looksLikeJson(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
    return c === 0x7b /* { */ || c === 0x5b /* [ */;
  }
  return false;
}

function countYamlSeparators(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x0a || c === 0x2c || c === 0x5b || c === 0x7b) n++;
  }
  return n;
}

/**
 * Parses one YAML document (YAML 1.1, as Kubernetes reads it). A body that is
 * JSON (as kubectl and client-go send apply patches) is parsed as JSON, which
 * gives the same value much faster.
 */
export function decodeYaml(text: string): Decoded {
  if (looksLikeJson(text)) {
    let value: unknown;
    let json = true;
    try {
      value = JSON.parse(text);
    } catch {
      json = false; // YAML flow style, or not valid: the YAML parser decides.
    }
    if (json) return decodedJson(text, value);
  }
  if (countYamlSeparators(text) > MAX_YAML_VALUES) {
    throw errors.badRequest(
      `error converting YAML to JSON: the document has more than ${MAX_YAML_VALUES} values, the most the server decodes`,
    );
  }
  let doc: ReturnType<typeof parseDocument>;
  try {
    doc = parseDocument(text, { version: "1.1", uniqueKeys: false, prettyErrors: false });
  } catch (err) {
    throw errors.badRequest(`error converting YAML to JSON: ${(err as Error).message}`);
  }
  if (doc.errors.length > 0) {
    const message = doc.errors[0].message;
    // The parser recurses per nesting level: running out of stack means nesting.
    if (/Maximum call stack size exceeded/.test(message)) throw tooDeep();
    throw errors.badRequest(`error converting YAML to JSON: yaml: ${message}`);
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_YAML_ALIASES });
  } catch (err) {
    throw errors.badRequest(`error converting YAML to JSON: ${(err as Error).message}`);
  }
  checkDepth(value);
  // Round-trip through JSON: YAML may yield Dates, Maps or non-finite numbers.
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (err) {
    throw errors.badRequest(`error converting YAML to JSON: ${(err as Error).message}`);
  }
  const duplicates: string[] = [];
  yamlDuplicates(doc.contents, "", duplicates, 0);
  return { value: json === undefined ? null : JSON.parse(json), duplicates };
}

/**
 * Bodies of at most this many values are parsed on the event loop (a few
 * milliseconds); larger ones on the YAML thread (yaml-thread.ts).
 */
export const YAML_INLINE_VALUES = 2_000;

/**
 * decodeYaml, with a large document parsed on the YAML thread so that the event
 * loop keeps serving other requests meanwhile; the same value and errors.
 */
export async function decodeYamlAsync(text: string): Promise<Decoded> {
  if (looksLikeJson(text)) return decodeYaml(text);
  const values = countYamlSeparators(text);
  if (values <= YAML_INLINE_VALUES || values > MAX_YAML_VALUES) return decodeYaml(text);
  const r = await parseYamlOffThread(text, MAX_YAML_ALIASES, MAX_BODY_DEPTH);
  if (!r.ok) {
    if (r.stage === "convert")
      throw errors.badRequest(`error converting YAML to JSON: ${r.message}`);
    if (/Maximum call stack size exceeded/.test(r.message)) throw tooDeep();
    throw errors.badRequest(`error converting YAML to JSON: yaml: ${r.message}`);
  }
  const value = r.json === undefined ? null : JSON.parse(r.json);
  checkDepth(value);
  return { value, duplicates: r.duplicates };
}

/**
 * JSON bodies of at most this many bytes are parsed on the event loop (a few
 * milliseconds at most); larger ones on the JSON thread (json-thread.ts).
 */
export const JSON_INLINE_BYTES = 256 * 1024;

/**
 * decodeJson of `body` (JSON text, or its UTF-8 bytes), with a large one parsed on
 * the JSON thread so that the event loop keeps serving other requests meanwhile;
 * the same value, duplicate fields and errors.
 */
export async function decodeJsonAsync(body: Uint8Array | string): Promise<Decoded> {
  const size = typeof body === "string" ? body.length : body.byteLength;
  if (size <= JSON_INLINE_BYTES) {
    if (typeof body === "string") return decodeJson(body);
    return decodeJsonBytes(body, Buffer.from(body.buffer, body.byteOffset, size).toString("utf8"));
  }
  const r = await parseJsonOffThread(body, MAX_BODY_DEPTH);
  if (!r.ok) {
    if (r.stage === "depth") throw tooDeep();
    throw jsonParseError(r.message);
  }
  // Only when a key may repeat is the text read again, here, to find which.
  const text = () =>
    typeof body === "string"
      ? body
      : Buffer.from(body.buffer, body.byteOffset, size).toString("utf8");
  return {
    value: r.value,
    duplicates: r.quoted === r.strings ? [] : findDuplicateJsonKeys(text()),
  };
}

/**
 * decodeBody, with large YAML and JSON bodies decoded off the event loop
 * (decodeYamlAsync, decodeJsonAsync).
 */
export function decodeBodyAsync(
  body: Buffer,
  media: MediaType,
  allowProtobuf: boolean,
): Promise<Decoded> {
  if (media.type === "application/yaml") return decodeYamlAsync(body.toString("utf8"));
  if ((media.type === "" || media.type === "application/json") && body.length > JSON_INLINE_BYTES) {
    return decodeJsonAsync(body);
  }
  return Promise.resolve().then(() => decodeBody(body, media, allowProtobuf));
}

/** Media types accepted as request bodies, in the words of a 415. */
export function unsupportedBodyType(accepted: string[] = BODY_MEDIA_TYPES) {
  return errors.unsupportedMediaType(
    `the body of the request was in an unknown format - accepted media types include: ${accepted.join(", ")}`,
  );
}

/**
 * Decodes a create/update body by its media type (JSON when none is given, as
 * Kubernetes does). `allowProtobuf` is false for types without a protobuf schema.
 */
export function decodeBody(body: Buffer, media: MediaType, allowProtobuf: boolean): Decoded {
  const type = media.type === "" ? "application/json" : media.type;
  if (type === "application/json") return decodeJsonBytes(body, body.toString("utf8"));
  if (type === "application/yaml") return decodeYaml(body.toString("utf8"));
  if (isProtobufContentType(type)) {
    if (!allowProtobuf) {
      throw unsupportedBodyType(["application/json", "application/yaml"]);
    }
    try {
      return { value: decodeProtobufObject(body), duplicates: [] };
    } catch (err) {
      if (err instanceof Error && err.name === "StatusError") throw err;
      throw errors.badRequest(`unable to decode protobuf body: ${(err as Error).message}`);
    }
  }
  throw unsupportedBodyType();
}
