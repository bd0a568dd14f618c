/**
 * Kubernetes protobuf (`application/vnd.kubernetes.protobuf`), both ways, for
 * every built-in kind: the 4-byte magic "k8s\0", then a runtime.Unknown envelope
 * naming apiVersion and kind, whose `raw` bytes are the object in Kubernetes'
 * protobuf encoding (contentEncoding and contentType empty).
 *
 * - Request bodies (kubectl's and client-go's typed clients send them) decode into
 *   the JSON a Kubernetes server would have made of them (to-json.ts); DELETE
 *   bodies (meta/v1 DeleteOptions, under any apiVersion) too, and like every
 *   decoded object they carry `metadata: {}`.
 * - Responses: objects, lists (`<Kind>List`), Status and
 *   PartialObjectMetadata(List) encode as kube-apiserver writes them
 *   (from-json.ts); watch events are length-prefixed WatchEvent messages whose
 *   object is such an envelope (Content-Type `...protobuf;stream=watch`).
 *
 * The messages (messages.ts) are the hand-written .proto files of this folder and
 * those made from the generated workload facts; which message encodes which kind
 * comes from the built-in definitions' `protobufMessage` and the facts' roots.
 */
import type { KubeObject } from "@setpoint/api";
import { errors } from "@setpoint/api";
import type { Type } from "protobufjs";
import { encodeMessage } from "./from-json.ts";
import { listMessageOf, META, messageForKind, protobufType } from "./messages.ts";
import { DecodeError, messageJson } from "./to-json.ts";

export { PROTO_FILES, protobufType } from "./messages.ts";

/** The media type of Kubernetes protobuf. */
export const PROTOBUF_CONTENT_TYPE = "application/vnd.kubernetes.protobuf";

/** The Content-Type of a protobuf watch stream. */
export const PROTOBUF_WATCH_CONTENT_TYPE = "application/vnd.kubernetes.protobuf;stream=watch";

/** The 4 bytes every Kubernetes protobuf body starts with. */
export const PROTOBUF_MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

/** Whether a Content-Type names Kubernetes protobuf (parameters ignored). */
export function isProtobufContentType(ct: string | undefined): boolean {
  if (!ct) return false;
  return ct.split(";")[0].trim().toLowerCase() === PROTOBUF_CONTENT_TYPE;
}

let unknown: Type | undefined;
let status: Type | undefined;
let watchEvent: Type | undefined;

/** runtime.Unknown, the envelope (looked up once). */
function unknownType(): Type {
  unknown ??= protobufType("k8s.io.apimachinery.pkg.runtime.Unknown");
  return unknown;
}

function fail(message: string): never {
  throw errors.badRequest(`unable to decode protobuf body: ${message}`);
}

/**
 * Decodes a Kubernetes protobuf body into the JSON form of the object it carries.
 * Throws StatusError 400 for anything malformed, never another error.
 */
export function decodeProtobufObject(body: Buffer): KubeObject {
  return decodeEnvelope(body, messageForKind);
}

/**
 * Decodes a protobuf answer of the server (an object, a list or a Status) into its
 * JSON form, as a client reads it.
 */
export function decodeProtobufResponse(body: Buffer): KubeObject {
  return decodeEnvelope(body, responseMessage);
}

function decodeEnvelope(
  body: Buffer,
  messageOf: (apiVersion: string, kind: string) => Type | undefined,
): KubeObject {
  if (body.length < PROTOBUF_MAGIC.length || !body.subarray(0, 4).equals(PROTOBUF_MAGIC)) {
    fail('the body does not start with the protobuf prefix "k8s\\x00"');
  }
  try {
    const envelope = unknownType().decode(body.subarray(4)) as unknown as {
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
    const type = messageOf(apiVersion, kind);
    if (!type) fail(`no protobuf encoding is known for kind "${kind}" in version "${apiVersion}"`);
    const msg = type.decode(envelope.raw ?? new Uint8Array());
    const json = messageJson(type, msg, kind);
    const fields = typeof json === "object" && json ? (json as Record<string, unknown>) : {};
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

/** The message an object of `apiVersion` and `kind` is sent as (lists, Status, meta types included). */
function responseMessage(apiVersion: string, kind: string): Type | undefined {
  if (kind === "Status" && apiVersion === "v1") {
    status ??= protobufType(`${META}.Status`);
    return status;
  }
  if (apiVersion === "meta.k8s.io/v1") {
    if (kind === "PartialObjectMetadata" || kind === "PartialObjectMetadataList") {
      return protobufType(`${META}.${kind}`);
    }
    return undefined;
  }
  const own = messageForKind(apiVersion, kind);
  if (own) return own;
  if (kind.endsWith("List")) {
    const item = messageForKind(apiVersion, kind.slice(0, -4));
    return item ? listMessageOf(item) : undefined;
  }
  return undefined;
}

/** Whether objects of `apiVersion` and `kind` (and their lists) can be sent as protobuf. */
export function hasProtobufEncoding(apiVersion: string, kind: string): boolean {
  return responseMessage(apiVersion, kind) !== undefined;
}

/** The envelope's bytes (without the magic) around a message's bytes. */
function envelope(apiVersion: string, kind: string, raw: Uint8Array): Uint8Array {
  return unknownType()
    .encode({ typeMeta: { apiVersion, kind }, raw, contentEncoding: "", contentType: "" })
    .finish();
}

/**
 * An object (or list, or Status) as kube-apiserver sends it in protobuf: the magic,
 * then the envelope. Undefined when its kind has no protobuf encoding (custom
 * resources, Tables), which the caller answers in JSON instead.
 */
export function encodeProtobufObject(obj: unknown): Buffer | undefined {
  if (typeof obj !== "object" || obj === null) return undefined;
  const { apiVersion, kind } = obj as { apiVersion?: unknown; kind?: unknown };
  if (typeof apiVersion !== "string" || typeof kind !== "string") return undefined;
  const type = responseMessage(apiVersion, kind);
  if (!type) return undefined;
  return Buffer.concat([PROTOBUF_MAGIC, envelope(apiVersion, kind, encodeMessage(type, obj))]);
}

/**
 * One frame of a protobuf watch stream: the length (4 bytes, big-endian) of a
 * meta/v1 WatchEvent whose object's raw bytes are the object's protobuf (magic and
 * envelope included), then that WatchEvent. Undefined when the object has no
 * protobuf encoding.
 */
export function encodeProtobufWatchEvent(type: string, obj: unknown): Buffer | undefined {
  const raw = encodeProtobufObject(obj);
  if (!raw) return undefined;
  watchEvent ??= protobufType(`${META}.WatchEvent`);
  const event = watchEvent.encode({ type, object: { raw } }).finish();
  const frame = Buffer.allocUnsafe(4 + event.length);
  frame.writeUInt32BE(event.length, 0);
  frame.set(event, 4);
  return frame;
}
