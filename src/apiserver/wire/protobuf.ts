/**
 * Protobuf request bodies (`application/vnd.kubernetes.protobuf`), as kubectl
 * sends for `create configmap|secret|namespace`: the 4-byte magic "k8s\0", then a
 * runtime.Unknown envelope naming apiVersion and kind, whose `raw` bytes are the
 * object in Kubernetes' protobuf encoding. The object is turned into the JSON a
 * Kubernetes server would have produced from it; responses are never protobuf.
 *
 * The message definitions are in ./protobuf/*.proto (Kubernetes' package names and
 * field numbers); which message encodes which kind comes from the built-in
 * definitions' `protobufMessage`, and from that of the kinds their create
 * subresources take (authentication.k8s.io/v1 TokenRequest). DELETE bodies (meta/v1 DeleteOptions, under any
 * apiVersion) decode too; like every decoded object they carry `metadata: {}`.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { KubeObject } from "@setpoint/api";
import { apiVersionOf, errors } from "@setpoint/api";
import type { Field, Message, Type } from "protobufjs";
import protobuf from "protobufjs";
import { builtinDefinitions } from "../../registry/builtin/index.ts";

/** The media type of Kubernetes protobuf. */
export const PROTOBUF_CONTENT_TYPE = "application/vnd.kubernetes.protobuf";

/** The 4 bytes every Kubernetes protobuf body starts with. */
export const PROTOBUF_MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

/** The message definitions loaded, in ./protobuf/. */
export const PROTO_FILES = [
  "runtime.proto",
  "meta.proto",
  "core.proto",
  "coordination.proto",
  "events.proto",
  "authentication.proto",
  "authorization.proto",
  "openapiv2.proto",
];

const META = "k8s.io.apimachinery.pkg.apis.meta.v1";

/**
 * Fields that are pointers in the Go types: present on the wire means present in
 * JSON, even when zero. Other scalar fields are `omitempty`: zero values are left out.
 */
const POINTER_FIELDS = new Set([
  `${META}.DeleteOptions.gracePeriodSeconds`,
  `${META}.DeleteOptions.preconditions`,
  `${META}.DeleteOptions.orphanDependents`,
  `${META}.DeleteOptions.propagationPolicy`,
  `${META}.DeleteOptions.ignoreStoreReadErrorWithClusterBreakingPotential`,
  `${META}.Preconditions.uid`,
  `${META}.Preconditions.resourceVersion`,
  `${META}.OwnerReference.controller`,
  `${META}.OwnerReference.blockOwnerDeletion`,
  `${META}.ObjectMeta.deletionGracePeriodSeconds`,
  "k8s.io.api.core.v1.ConfigMap.immutable",
  "k8s.io.api.core.v1.Secret.immutable",
  "k8s.io.api.core.v1.ServiceAccount.automountServiceAccountToken",
  "k8s.io.api.core.v1.Event.series",
  "k8s.io.api.core.v1.Event.related",
  "k8s.io.api.events.v1.Event.series",
  "k8s.io.api.events.v1.Event.related",
  "k8s.io.api.coordination.v1.LeaseSpec.holderIdentity",
  "k8s.io.api.coordination.v1.LeaseSpec.leaseDurationSeconds",
  "k8s.io.api.coordination.v1.LeaseSpec.leaseTransitions",
  "k8s.io.api.coordination.v1.LeaseSpec.strategy",
  "k8s.io.api.coordination.v1.LeaseSpec.preferredHolder",
  "k8s.io.api.authentication.v1.TokenRequestSpec.expirationSeconds",
  "k8s.io.api.authentication.v1.TokenRequestSpec.boundObjectRef",
]);

/** Scalar fields without `omitempty` in the Go types: always in the JSON. */
const ALWAYS_FIELDS = new Set([
  `${META}.OwnerReference.apiVersion`,
  `${META}.OwnerReference.kind`,
  `${META}.OwnerReference.name`,
  `${META}.OwnerReference.uid`,
  "k8s.io.api.core.v1.NamespaceCondition.type",
  "k8s.io.api.core.v1.NamespaceCondition.status",
  "k8s.io.api.core.v1.Event.reportingComponent",
  "k8s.io.api.core.v1.Event.reportingInstance",
  "k8s.io.api.events.v1.EventSeries.count",
]);

/** ALWAYS_FIELDS by message name. */
const ALWAYS_BY_MESSAGE = new Map<string, string[]>();
for (const key of ALWAYS_FIELDS) {
  const dot = key.lastIndexOf(".");
  const list = ALWAYS_BY_MESSAGE.get(key.slice(0, dot)) ?? [];
  list.push(key.slice(dot + 1));
  ALWAYS_BY_MESSAGE.set(key.slice(0, dot), list);
}

let root: protobuf.Root | undefined;
let messagesByKind: Map<string, Type> | undefined;

function loadRoot(): protobuf.Root {
  if (!root) {
    const dir = fileURLToPath(new URL("./protobuf/", import.meta.url));
    const r = new protobuf.Root();
    r.loadSync(
      PROTO_FILES.map((f) => join(dir, f)),
      { keepCase: true },
    );
    r.resolveAll();
    root = r;
  }
  return root;
}

/** A message type of the loaded definitions, by its full name ("openapi.v2.Document"). */
export function protobufType(name: string): Type {
  return loadRoot().lookupType(name);
}

/** The message type of a kind, by "apiVersion/kind" ("v1/ConfigMap"). */
function messageFor(apiVersion: string, kind: string): Type | undefined {
  if (!messagesByKind) {
    const r = loadRoot();
    const m = new Map<string, Type>();
    const kinds = builtinDefinitions().flatMap((def) => [
      def,
      ...(def.createSubresources ?? []).map((s) => s.kind),
    ]);
    for (const def of kinds) {
      if (!def.protobufMessage) continue;
      const type = r.lookupType(def.protobufMessage);
      for (const v of def.versions)
        m.set(`${apiVersionOf(def.group, v.name)}/${def.names.kind}`, type);
    }
    messagesByKind = m;
  }
  // DeleteOptions is registered in every group-version.
  if (kind === "DeleteOptions") return loadRoot().lookupType(`${META}.DeleteOptions`);
  return messagesByKind.get(`${apiVersion}/${kind}`);
}

/** Whether a Content-Type names Kubernetes protobuf (parameters ignored). */
export function isProtobufContentType(ct: string | undefined): boolean {
  if (!ct) return false;
  return ct.split(";")[0].trim().toLowerCase() === PROTOBUF_CONTENT_TYPE;
}

class DecodeError extends Error {}

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

function scalar(field: Field, v: unknown, what: string): unknown {
  switch (field.type) {
    case "string":
      return v;
    case "bool":
      return Boolean(v);
    case "bytes":
      return Buffer.from(v as Uint8Array).toString("base64");
    case "int32":
    case "int64":
    case "uint32":
    case "uint64":
    case "sint32":
    case "sint64":
      return toInteger(v, what);
    default:
      throw new DecodeError(`${what}: unsupported field type ${field.type}`);
  }
}

/** The JSON of a decoded message, field by field, as Go's JSON encoding would write it. */
function toJson(
  type: Type,
  msg: Message,
  path: string,
): Record<string, unknown> | string | undefined {
  const full = type.fullName.replace(/^\./, "");
  if (full === `${META}.Time`) return formatTime(msg, false, path);
  if (full === `${META}.MicroTime`) return formatTime(msg, true, path);
  if (full === `${META}.FieldsV1`) {
    const raw = (msg as unknown as { Raw?: Uint8Array }).Raw;
    if (!raw || raw.length === 0) return {};
    try {
      const parsed: unknown = JSON.parse(Buffer.from(raw).toString("utf8"));
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
        throw new DecodeError(`${path}: FieldsV1 must be a JSON object`);
      }
      return parsed as Record<string, unknown>;
    } catch (err) {
      if (err instanceof DecodeError) throw err;
      throw new DecodeError(`${path}: invalid FieldsV1 JSON`);
    }
  }
  const out: Record<string, unknown> = {};
  const record = msg as unknown as Record<string, unknown>;
  for (const field of type.fieldsArray) {
    const name = field.name;
    if (!Object.hasOwn(record, name)) continue;
    const v = record[name];
    const at = `${path}.${name}`;
    const key = `${full}.${name}`;
    if (field.map) {
      const entries = Object.entries(v as Record<string, unknown>);
      if (entries.length === 0) continue;
      const m: Record<string, unknown> = {};
      for (const [k, mv] of entries)
        m[k] = scalar(field, mv ?? (field.type === "bytes" ? new Uint8Array() : ""), `${at}[${k}]`);
      out[name] = m;
      continue;
    }
    if (field.repeated) {
      const arr = v as unknown[];
      if (!arr.length) continue;
      out[name] = arr.map((item, i) =>
        field.resolvedType
          ? toJson(field.resolvedType as Type, item as Message, `${at}[${i}]`)
          : scalar(field, item, `${at}[${i}]`),
      );
      continue;
    }
    if (field.resolvedType) {
      const converted = toJson(field.resolvedType as Type, v as Message, at);
      if (converted === undefined) continue;
      const empty = typeof converted === "object" && Object.keys(converted).length === 0;
      if (empty && !POINTER_FIELDS.has(key)) continue;
      out[name] = converted;
      continue;
    }
    if (isZero(v) && !POINTER_FIELDS.has(key) && !ALWAYS_FIELDS.has(key)) continue;
    out[name] = scalar(field, v, at);
  }
  for (const fieldName of ALWAYS_BY_MESSAGE.get(full) ?? []) {
    if (!(fieldName in out)) out[fieldName] = type.fields[fieldName]?.type === "string" ? "" : 0;
  }
  return out;
}

function fail(message: string): never {
  throw errors.badRequest(`unable to decode protobuf body: ${message}`);
}

/**
 * Decodes a Kubernetes protobuf body into the JSON form of the object it carries.
 * Throws StatusError 400 for anything malformed, never another error.
 */
export function decodeProtobufObject(body: Buffer): KubeObject {
  if (body.length < PROTOBUF_MAGIC.length || !body.subarray(0, 4).equals(PROTOBUF_MAGIC)) {
    fail('the body does not start with the protobuf prefix "k8s\\x00"');
  }
  try {
    const r = loadRoot();
    const unknownType = r.lookupType("k8s.io.apimachinery.pkg.runtime.Unknown");
    const envelope = unknownType.decode(body.subarray(4)) as unknown as {
      typeMeta?: { apiVersion?: string; kind?: string };
      raw?: Uint8Array;
      contentEncoding?: string;
      contentType?: string;
    };
    const apiVersion = envelope.typeMeta?.apiVersion ?? "";
    const kind = envelope.typeMeta?.kind ?? "";
    if (!apiVersion || !kind) fail("the envelope does not name apiVersion and kind");
    if (envelope.contentEncoding)
      fail(`unsupported content encoding "${envelope.contentEncoding}"`);
    if (envelope.contentType && !isProtobufContentType(envelope.contentType)) {
      fail(`unsupported content type "${envelope.contentType}" in the envelope`);
    }
    const type = messageFor(apiVersion, kind);
    if (!type) fail(`no protobuf encoding is known for kind "${kind}" in version "${apiVersion}"`);
    const msg = type.decode(envelope.raw ?? new Uint8Array());
    const json = toJson(type, msg, kind);
    const fields = typeof json === "object" && json ? json : {};
    const { metadata, ...rest } = fields;
    return {
      apiVersion,
      kind,
      metadata: (metadata as KubeObject["metadata"] | undefined) ?? {},
      ...rest,
    };
  } catch (err) {
    if (err instanceof Error && err.name === "StatusError") throw err;
    if (err instanceof DecodeError) fail(err.message);
    fail(err instanceof Error ? err.message : String(err));
  }
}
