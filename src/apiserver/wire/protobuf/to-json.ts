/**
 * A decoded protobuf message as the JSON Go's encoding of the same struct would
 * write: zero scalars left out unless the field is a pointer or has no
 * `omitempty`, empty non-pointer structs left out, embedded structs' fields
 * spread into their parent, times in RFC 3339 (whole seconds for Time, six
 * digits for MicroTime), quantities and int-or-strings as their JSON values,
 * raw extensions and FieldsV1 as the JSON they carry.
 */
import type { Field, Message, Type } from "protobufjs";
import {
  EXTRA_VALUE,
  FIELDS_V1,
  fieldInfo,
  INT_OR_STRING,
  MICRO_TIME,
  QUANTITY,
  RAW_EXTENSION,
  TIME,
} from "./messages.ts";

/** A body that is not a valid encoding of its kind (answered 400). */
export class DecodeError extends Error {}

interface LongLike {
  low: number;
  high: number;
  unsigned?: boolean;
}

function isLong(v: unknown): v is LongLike {
  return typeof v === "object" && v !== null && "low" in v && "high" in v;
}

function toInteger(v: unknown, what: string): number {
  let n: number;
  if (typeof v === "number") n = v;
  else if (isLong(v)) {
    const hi = v.unsigned ? BigInt(v.high >>> 0) : BigInt(v.high | 0);
    const big = (hi << 32n) + BigInt(v.low >>> 0);
    if (big > BigInt(Number.MAX_SAFE_INTEGER) || big < BigInt(Number.MIN_SAFE_INTEGER)) {
      throw new DecodeError(`${what}: integer out of range`);
    }
    n = Number(big);
  } else throw new DecodeError(`${what}: not an integer`);
  if (!Number.isSafeInteger(n)) throw new DecodeError(`${what}: integer out of range`);
  return n;
}

const MAX_TIME_SECONDS = 253402300799; // 9999-12-31T23:59:59Z
const MIN_TIME_SECONDS = -62135596800; // 0001-01-01T00:00:00Z

/** A meta/v1 Time or MicroTime as RFC 3339 (seconds, or microseconds for MicroTime). */
function formatTime(msg: Message, micro: boolean, what: string): string | undefined {
  const m = msg as unknown as { seconds?: unknown; nanos?: unknown };
  const seconds = m.seconds === undefined ? 0 : toInteger(m.seconds, `${what}.seconds`);
  const nanos = m.nanos === undefined ? 0 : toInteger(m.nanos, `${what}.nanos`);
  if (seconds === 0 && nanos === 0) return undefined;
  if (
    seconds < MIN_TIME_SECONDS ||
    seconds > MAX_TIME_SECONDS ||
    nanos < 0 ||
    nanos > 999_999_999
  ) {
    throw new DecodeError(`${what}: time out of range`);
  }
  const iso = new Date(seconds * 1000).toISOString().slice(0, 19);
  if (!micro) return `${iso}Z`;
  return `${iso}.${String(Math.floor(nanos / 1000)).padStart(6, "0")}Z`;
}

function isZero(v: unknown): boolean {
  if (v === undefined || v === null || v === "" || v === false || v === 0) return true;
  if (isLong(v)) return v.low === 0 && v.high === 0;
  if (v instanceof Uint8Array) return v.length === 0;
  return false;
}

function scalar(type: string, v: unknown, what: string): unknown {
  switch (type) {
    case "string":
      return v;
    case "bool":
      return Boolean(v);
    case "bytes":
      return Buffer.from(v as Uint8Array).toString("base64");
    case "double":
    case "float":
      return v;
    case "int32":
    case "int64":
    case "uint32":
    case "uint64":
    case "sint32":
    case "sint64":
      return toInteger(v, what);
    default:
      throw new DecodeError(`${what}: unsupported field type ${type}`);
  }
}

/** The JSON value carried as bytes (FieldsV1, RawExtension); undefined when empty. */
function embeddedJson(raw: Uint8Array | undefined, path: string, what: string): unknown {
  if (!raw || raw.length === 0) return undefined;
  try {
    return JSON.parse(Buffer.from(raw).toString("utf8"));
  } catch {
    throw new DecodeError(`${path}: invalid ${what} JSON`);
  }
}

/** Full names by message (protobufjs computes one on every read). */
const names = new WeakMap<Type, string>();

function nameOf(type: Type): string {
  let name = names.get(type);
  if (name === undefined) {
    name = type.fullName.slice(1);
    names.set(type, name);
  }
  return name;
}

/** The zero JSON of a scalar type, for fields Go always writes. */
function zeroOf(field: Field): unknown {
  switch (field.type) {
    case "string":
      return "";
    case "bool":
      return false;
    default:
      return 0;
  }
}

/** One value of a field (an item of a list, a map's value, or the field's value). */
function valueJson(field: Field, v: unknown, at: string): unknown {
  return field.resolvedType
    ? messageJson(field.resolvedType as Type, v as Message, at)
    : scalar(field.type, v, at);
}

/**
 * The JSON of a decoded message; undefined for a zero Time or an empty raw
 * extension (which Go's JSON leaves out).
 */
export function messageJson(type: Type, msg: Message, path: string): unknown {
  const full = nameOf(type);
  if (full === TIME) return formatTime(msg, false, path);
  if (full === MICRO_TIME) return formatTime(msg, true, path);
  if (full === FIELDS_V1) {
    const parsed = embeddedJson((msg as unknown as { Raw?: Uint8Array }).Raw, path, "FieldsV1");
    if (parsed === undefined) return {};
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      throw new DecodeError(`${path}: FieldsV1 must be a JSON object`);
    }
    return parsed;
  }
  if (full === RAW_EXTENSION) {
    return embeddedJson((msg as unknown as { raw?: Uint8Array }).raw, path, "raw extension");
  }
  if (full === QUANTITY) return (msg as unknown as { string?: string }).string ?? "";
  if (full === EXTRA_VALUE) return (msg as unknown as { items?: string[] }).items ?? [];
  if (full === INT_OR_STRING) {
    const m = msg as unknown as { type?: unknown; intVal?: unknown; strVal?: string };
    const t = m.type === undefined ? 0 : toInteger(m.type, `${path}.type`);
    if (t === 1) return m.strVal ?? "";
    if (t !== 0) throw new DecodeError(`${path}: unknown int-or-string type ${t}`);
    return m.intVal === undefined ? 0 : toInteger(m.intVal, `${path}.intVal`);
  }
  const out: Record<string, unknown> = {};
  const record = msg as unknown as Record<string, unknown>;
  for (const field of type.fieldsArray) {
    const name = field.name;
    const info = fieldInfo(field);
    const present = Object.hasOwn(record, name);
    if (!present) {
      if (info.inline && field.resolvedType) {
        const t = field.resolvedType as Type;
        Object.assign(out, messageJson(t, t.create({}), `${path}.${name}`));
      } else if (info.always && !field.repeated && !field.map && !field.resolvedType) {
        out[name] = zeroOf(field);
      }
      continue;
    }
    const v = record[name];
    const at = `${path}.${name}`;
    if (field.map) {
      const entries = Object.entries(v as Record<string, unknown>);
      if (entries.length === 0) continue;
      const m: Record<string, unknown> = {};
      for (const [k, mv] of entries) {
        const item =
          mv ?? (field.resolvedType ? {} : field.type === "bytes" ? new Uint8Array() : "");
        m[k] = valueJson(field, item, `${at}[${k}]`) ?? null;
      }
      out[name] = m;
      continue;
    }
    if (field.repeated) {
      const arr = v as unknown[];
      if (!arr.length) continue;
      out[name] = arr.map((item, i) => valueJson(field, item, `${at}[${i}]`) ?? null);
      continue;
    }
    if (field.resolvedType) {
      const converted = messageJson(field.resolvedType as Type, v as Message, at);
      if (converted === undefined) continue;
      if (info.inline) {
        Object.assign(out, converted);
        continue;
      }
      const empty =
        typeof converted === "object" &&
        converted !== null &&
        !Array.isArray(converted) &&
        Object.keys(converted).length === 0;
      if (empty && !info.pointer) continue;
      out[name] = converted;
      continue;
    }
    if (isZero(v) && !info.pointer && !info.always) continue;
    out[name] = scalar(field.type, v, at);
  }
  return out;
}
