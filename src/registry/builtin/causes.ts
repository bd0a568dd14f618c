/**
 * Field error causes worded as Kubernetes words them (the `details.causes` of a 422),
 * and the key and name rules the built-in types share.
 */
import { CauseType, type StatusCause } from "@setpoint/api";

function show(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (value === undefined || value === null) return "null";
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value);
}

/** `field: Invalid value: "v": detail` */
export function invalid(field: string, value: unknown, detail: string): StatusCause {
  return { reason: CauseType.Invalid, field, message: `Invalid value: ${show(value)}: ${detail}` };
}

/** `field: Required value` */
export function required(field: string, detail?: string): StatusCause {
  return {
    reason: CauseType.Required,
    field,
    message: detail ? `Required value: ${detail}` : "Required value",
  };
}

/** `field: Forbidden: detail` */
export function forbidden(field: string, detail: string): StatusCause {
  return { reason: CauseType.Forbidden, field, message: `Forbidden: ${detail}` };
}

/** `field: Too long: may not be more than N bytes` */
export function tooLong(field: string, max: number): StatusCause {
  return {
    reason: CauseType.TooLong,
    field,
    message: `Too long: may not be more than ${max} bytes`,
  };
}

/** `field: Unsupported value: "v": supported values: "a", "b"` */
export function notSupported(field: string, value: unknown, supported: string[]): StatusCause {
  return {
    reason: CauseType.NotSupported,
    field,
    message: `Unsupported value: ${show(value)}: supported values: ${supported.map((s) => JSON.stringify(s)).join(", ")}`,
  };
}

/** `field: Invalid value: ...: field is immutable` when the values differ. */
export function immutable(field: string, value: unknown, old: unknown): StatusCause[] {
  return deepEqual(value, old) ? [] : [invalid(field, value ?? "", "field is immutable")];
}

/** Structural equality of JSON values. */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  const rb = b as Record<string, unknown>;
  const ra = a as Record<string, unknown>;
  return ka.every((k) => Object.hasOwn(rb, k) && deepEqual(ra[k], rb[k]));
}

/** Longest key of a ConfigMap or Secret (DNS-1123 subdomain maximum). */
export const MAX_DATA_KEY_LENGTH = 253;

const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;

/** The problems with a ConfigMap/Secret data key (Kubernetes' IsConfigMapKey); empty if valid. */
export function configKeyErrors(key: string): string[] {
  const errs: string[] = [];
  if (key.length > MAX_DATA_KEY_LENGTH) {
    errs.push(`must be no more than ${MAX_DATA_KEY_LENGTH} characters`);
  }
  if (!CONFIG_KEY.test(key)) {
    errs.push(
      "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
    );
  }
  if (key === ".") errs.push("must not be '.'");
  else if (key === "..") errs.push("must not be '..'");
  else if (key.startsWith("..")) errs.push("must not start with '..'");
  return errs;
}

/** Causes for every bad key of a data map at `path` ("data", "binaryData"). */
export function dataKeyCauses(
  path: string,
  map: Record<string, unknown> | undefined,
): StatusCause[] {
  const causes: StatusCause[] = [];
  for (const key of Object.keys(map ?? {})) {
    for (const msg of configKeyErrors(key)) causes.push(invalid(`${path}[${key}]`, key, msg));
  }
  return causes;
}

const QUALIFIED_NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** The problems with a qualified name ("prefix/name" or "name"), as Kubernetes' IsQualifiedName. */
export function qualifiedNameErrors(value: string): string[] {
  const parts = value.split("/");
  let name = value;
  const errs: string[] = [];
  if (parts.length === 2) {
    const [prefix, n] = parts;
    name = n;
    if (prefix.length === 0) errs.push("prefix part must be non-empty");
    else if (prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix)) {
      errs.push(
        "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
      );
    }
  } else if (parts.length > 2) {
    return [
      "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character, with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
    ];
  }
  if (name.length === 0) errs.push("name part must be non-empty");
  else if (name.length > 63) errs.push("name part must be no more than 63 characters");
  if (name.length > 0 && !QUALIFIED_NAME_PART.test(name)) {
    errs.push(
      "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    );
  }
  return errs;
}

/** Whether a string is standard padded base64 (how JSON carries []byte). */
export function isBase64(value: string): boolean {
  const s = value.replace(/[\r\n]/g, "");
  return s.length % 4 === 0 && /^[A-Za-z0-9+/]*={0,2}$/.test(s);
}

/** Number of bytes a base64 string decodes to. */
export function base64Length(value: string): number {
  const s = value.replace(/[\r\n]/g, "");
  const pad = s.endsWith("==") ? 2 : s.endsWith("=") ? 1 : 0;
  return (s.length / 4) * 3 - pad;
}
