/**
 * An object's JSON encoded as its protobuf message, byte for byte as Kubernetes'
 * generated marshallers write it: fields in number order, map entries in key
 * order, every non-pointer field of a generated struct written even when zero
 * (an empty struct as an empty message), pointers only when set; times as
 * seconds and nanoseconds, quantities as their string, int-or-strings as
 * type/intVal/strVal, raw extensions and FieldsV1 as the JSON they hold. JSON
 * members the message has no field for are not sent, as a Go struct drops them.
 */
import protobuf, { type Field, type Type, type Writer } from "protobufjs";
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

const VARINT = 0;
const FIXED64 = 1;
const LENGTH = 2;
const FIXED32 = 5;

function wireType(field: Field): number {
  if (field.resolvedType) return LENGTH;
  switch (field.type) {
    case "double":
    case "fixed64":
    case "sfixed64":
      return FIXED64;
    case "float":
    case "fixed32":
    case "sfixed32":
      return FIXED32;
    case "string":
    case "bytes":
      return LENGTH;
    default:
      return VARINT;
  }
}

function tag(w: Writer, id: number, wire: number): Writer {
  return w.uint32((id << 3) | wire);
}

/** What writing one field needs, worked out once per field. */
interface FieldPlan {
  field: Field;
  id: number;
  name: string;
  type: string;
  wire: number;
  sub: Type | null;
  inline: boolean;
  /** Written as zero when absent (a Go field that is not a pointer, list or map). */
  zero: boolean;
  map: boolean;
  repeated: boolean;
  keyType: string;
}

/** How a message is written: a value kind of its own, or its fields in number order. */
interface MessagePlan {
  special: string | undefined;
  fields: FieldPlan[];
}

const SPECIAL = new Set([
  TIME,
  MICRO_TIME,
  QUANTITY,
  INT_OR_STRING,
  RAW_EXTENSION,
  FIELDS_V1,
  EXTRA_VALUE,
]);

/** Plans by message (protobufjs computes a full name on every read: worked out once). */
const plans = new WeakMap<Type, MessagePlan>();

function planOf(type: Type): MessagePlan {
  let plan = plans.get(type);
  if (plan) return plan;
  const full = type.fullName.slice(1);
  plan = {
    special: SPECIAL.has(full) ? full : undefined,
    fields: [...type.fieldsArray]
      .sort((a, b) => a.id - b.id)
      .map((field) => {
        const info = fieldInfo(field);
        return {
          field,
          id: field.id,
          name: field.name,
          type: field.type,
          wire: wireType(field),
          sub: (field.resolvedType as Type | null) ?? null,
          inline: info.inline,
          zero: info.known && !info.pointer && !field.repeated && !field.map,
          map: Boolean(field.map),
          repeated: field.repeated,
          keyType: (field as unknown as protobuf.MapField).keyType ?? "string",
        };
      }),
  };
  plans.set(type, plan);
  return plan;
}

function integer(v: unknown): number {
  const n = typeof v === "number" ? v : Number(v);
  return Number.isFinite(n) ? Math.trunc(n) : 0;
}

function writeScalar(w: Writer, type: string, v: unknown): void {
  switch (type) {
    case "string":
      w.string(typeof v === "string" ? v : String(v ?? ""));
      return;
    case "bool":
      w.bool(v === true);
      return;
    case "bytes":
      w.bytes(typeof v === "string" ? Buffer.from(v, "base64") : new Uint8Array());
      return;
    case "double":
      w.double(Number(v) || 0);
      return;
    case "float":
      w.float(Number(v) || 0);
      return;
    case "int32":
      w.int32(integer(v));
      return;
    case "uint32":
      w.uint32(integer(v));
      return;
    case "sint32":
      w.sint32(integer(v));
      return;
    case "sint64":
      w.sint64(integer(v));
      return;
    case "uint64":
      w.uint64(integer(v));
      return;
    default:
      w.int64(integer(v));
  }
}

const RFC3339 = /^(\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d)(?:\.(\d+))?(.*)$/;

/** Timestamps recently parsed (objects repeat a few of them), at most TIME_CACHE. */
const timeCache = new Map<string, { seconds: number; nanos: number } | undefined>();
const TIME_CACHE = 1024;

/** Seconds and nanoseconds of an RFC 3339 timestamp; undefined when it is not one. */
function timeParts(v: unknown, micro: boolean): { seconds: number; nanos: number } | undefined {
  if (typeof v !== "string") return undefined;
  const key = micro ? `m${v}` : v;
  if (timeCache.has(key)) return timeCache.get(key);
  const parts = parseTime(v, micro);
  if (timeCache.size >= TIME_CACHE) timeCache.clear();
  timeCache.set(key, parts);
  return parts;
}

function parseTime(v: string, micro: boolean): { seconds: number; nanos: number } | undefined {
  const m = RFC3339.exec(v);
  if (!m) return undefined;
  const ms = Date.parse(`${m[1]}${m[3]}`);
  if (!Number.isFinite(ms)) return undefined;
  const digits = (m[2] ?? "").slice(0, micro ? 6 : 9).padEnd(9, "0");
  return { seconds: Math.floor(ms / 1000), nanos: Number(digits) };
}

function writeEmbeddedJson(w: Writer, id: number, v: unknown): void {
  tag(w, id, LENGTH).bytes(Buffer.from(JSON.stringify(v), "utf8"));
}

/**
 * The fields of message `type` for `v`, written into `w` (without a length):
 * the body of a message.
 */
export function writeMessageBody(w: Writer, type: Type, v: unknown): void {
  const plan = planOf(type);
  switch (plan.special) {
    case undefined:
      break;
    case TIME:
    case MICRO_TIME: {
      const t = timeParts(v, plan.special === MICRO_TIME);
      if (!t || (t.seconds === 0 && t.nanos === 0)) return;
      tag(w, 1, VARINT).int64(t.seconds);
      tag(w, 2, VARINT).int32(t.nanos);
      return;
    }
    case QUANTITY:
      tag(w, 1, LENGTH).string(v === undefined || v === null ? "0" : String(v));
      return;
    case INT_OR_STRING: {
      const isString = typeof v === "string";
      tag(w, 1, VARINT).int64(isString ? 1 : 0);
      tag(w, 2, VARINT).int32(isString ? 0 : integer(v ?? 0));
      tag(w, 3, LENGTH).string(isString ? v : "");
      return;
    }
    case EXTRA_VALUE:
      for (const item of Array.isArray(v) ? v : []) tag(w, 1, LENGTH).string(String(item));
      return;
    default:
      // RawExtension, FieldsV1: the JSON they hold.
      if (v !== undefined && v !== null) writeEmbeddedJson(w, 1, v);
      return;
  }
  const obj = (typeof v === "object" && v !== null && !Array.isArray(v) ? v : {}) as Record<
    string,
    unknown
  >;
  for (const f of plan.fields) {
    const sub = f.sub;
    if (f.inline && sub) {
      writeNested(w, f.id, sub, obj);
      continue;
    }
    const value = obj[f.name];
    if (value === undefined || value === null) {
      // Go writes every field that is not a pointer, a list or a map.
      if (f.zero) {
        if (sub) writeNested(w, f.id, sub, undefined);
        else writeScalar(tag(w, f.id, f.wire), f.type, undefined);
      }
      continue;
    }
    if (f.map) {
      if (typeof value !== "object" || Array.isArray(value)) continue;
      const m = value as Record<string, unknown>;
      const keys = Object.keys(m);
      if (keys.length > 1) keys.sort();
      for (const k of keys) {
        tag(w, f.id, LENGTH).fork();
        writeScalar(tag(w, 1, f.keyType === "string" ? LENGTH : VARINT), f.keyType, k);
        if (sub) writeNested(w, 2, sub, m[k]);
        else writeScalar(tag(w, 2, f.wire), f.type, m[k]);
        w.ldelim();
      }
      continue;
    }
    if (f.repeated) {
      if (!Array.isArray(value)) continue;
      for (const item of value) {
        if (sub) writeNested(w, f.id, sub, item);
        else writeScalar(tag(w, f.id, f.wire), f.type, item);
      }
      continue;
    }
    if (sub) writeNested(w, f.id, sub, value);
    else writeScalar(tag(w, f.id, f.wire), f.type, value);
  }
}

function writeNested(w: Writer, id: number, type: Type, v: unknown): void {
  tag(w, id, LENGTH).fork();
  writeMessageBody(w, type, v);
  w.ldelim();
}

/** The bytes of message `type` for the JSON value `v`. */
export function encodeMessage(type: Type, v: unknown): Uint8Array {
  const w = protobuf.Writer.create();
  writeMessageBody(w, type, v);
  return w.finish();
}
