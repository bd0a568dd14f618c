/**
 * Decoding request bodies into objects: JSON, YAML and (for built-in types)
 * Kubernetes protobuf. Besides the object, decoding reports duplicate fields, which
 * `fieldValidation` turns into an error (Strict) or a warning (Warn).
 */
import { isMap, isPair, isScalar, isSeq, parseDocument } from "yaml";
import { errors } from "../api/status.ts";
import { decodeProtobufObject, isProtobufContentType } from "./protobuf.ts";
import type { MediaType } from "./request.ts";

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

/**
 * Scans valid JSON text for keys that repeat within one object. Only called on text
 * JSON.parse accepted, so it needs no error handling beyond staying in bounds.
 */
export function findDuplicateJsonKeys(text: string): string[] {
  const found: string[] = [];
  let i = 0;
  const ws = () => {
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++;
      else break;
    }
  };
  const str = (): string => {
    const start = i;
    i++; // opening quote
    let simple = true;
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === 0x5c) {
        simple = false;
        i += 2;
        continue;
      }
      i++;
      if (c === 0x22) break;
    }
    const raw = text.slice(start, i);
    return simple ? raw.slice(1, -1) : (JSON.parse(raw) as string);
  };
  const value = (path: string, depth: number): void => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      const seen = new Set<string>();
      ws();
      if (text[i] === "}") {
        i++;
        return;
      }
      while (i < text.length) {
        ws();
        const key = str();
        const child = joinPath(path, key);
        if (seen.has(key)) found.push(child);
        else seen.add(key);
        ws();
        i++; // colon
        if (depth < MAX_BODY_DEPTH) value(child, depth + 1);
        else skipValue();
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        i++; // closing brace
        return;
      }
    } else if (c === "[") {
      i++;
      ws();
      if (text[i] === "]") {
        i++;
        return;
      }
      let n = 0;
      while (i < text.length) {
        if (depth < MAX_BODY_DEPTH) value(`${path}[${n}]`, depth + 1);
        else skipValue();
        n++;
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        i++; // closing bracket
        return;
      }
    } else if (c === '"') {
      str();
    } else {
      while (i < text.length && !",}] \n\r\t".includes(text[i])) i++;
    }
  };
  const skipValue = () => {
    // Past the depth limit: skip a nested value without recording anything.
    ws();
    let depth = 0;
    while (i < text.length) {
      const c = text[i];
      if (c === '"') {
        str();
        if (depth === 0) return;
        continue;
      }
      if (c === "{" || c === "[") depth++;
      else if (c === "}" || c === "]") {
        depth--;
        if (depth === 0) {
          i++;
          return;
        }
        if (depth < 0) return;
      } else if (depth === 0 && (c === "," || c === "}" || c === "]")) return;
      i++;
    }
  };
  value("", 0);
  return found;
}

function depthOf(v: unknown, limit: number): number {
  // Iterative depth check so hostile nesting cannot overflow the stack.
  let max = 0;
  const stack: [unknown, number][] = [[v, 0]];
  while (stack.length > 0) {
    const [cur, d] = stack.pop()!;
    if (d > max) max = d;
    if (max > limit) return max;
    if (cur !== null && typeof cur === "object") {
      for (const child of Object.values(cur as Record<string, unknown>)) {
        if (child !== null && typeof child === "object") stack.push([child, d + 1]);
      }
    }
  }
  return max;
}

function checkDepth(v: unknown): void {
  if (depthOf(v, MAX_BODY_DEPTH) > MAX_BODY_DEPTH) {
    throw errors.badRequest(`the request body is nested deeper than ${MAX_BODY_DEPTH} levels`);
  }
}

/** Parses JSON text; a syntax error is a 400 in Kubernetes' words. */
export function decodeJson(text: string): Decoded {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw errors.badRequest(
      `couldn't get version/kind; json parse error: ${(err as Error).message || "invalid JSON"}`,
    );
  }
  checkDepth(value);
  const duplicates = value !== null && typeof value === "object" ? findDuplicateJsonKeys(text) : [];
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

/** Parses one YAML document (YAML 1.1, as Kubernetes reads it). */
export function decodeYaml(text: string): Decoded {
  let doc: ReturnType<typeof parseDocument>;
  try {
    doc = parseDocument(text, { version: "1.1", uniqueKeys: false, prettyErrors: false });
  } catch (err) {
    throw errors.badRequest(`error converting YAML to JSON: ${(err as Error).message}`);
  }
  if (doc.errors.length > 0) {
    throw errors.badRequest(`error converting YAML to JSON: yaml: ${doc.errors[0].message}`);
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
  if (type === "application/json") return decodeJson(body.toString("utf8"));
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
