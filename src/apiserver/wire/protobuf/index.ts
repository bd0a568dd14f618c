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
 *   (from-json.ts); a list can also be written in parts (protobufListEncoder:
 *   its items measured first, then the envelope, then the items a batch at a
 *   time, for streaming it); watch events are length-prefixed WatchEvent messages whose
 *   object is such an envelope (Content-Type `...protobuf;stream=watch`).
 *
 * The messages (messages.ts) are the hand-written .proto files of this folder and
 * those made from the generated workload facts; which message encodes which kind
 * comes from the built-in definitions' `protobufMessage` and the facts' roots.
 */
import type { KubeObject } from "@setpoint/api";
import { errors } from "@setpoint/api";
import protobuf, { type Type, type Writer } from "protobufjs";
import { encodeMessage, writeMessageBody } from "./from-json.ts";
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

/** The bytes a protobuf Writer made, as a Buffer (a view, not a copy). */
function bytesOf(w: Writer): Buffer {
  const b = w.finish();
  return Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

/**
 * A list written in parts, the same bytes as encodeProtobufObject writes for the
 * whole list: `head`, then the items' fields (`item`, `items`, in order), then
 * `tail`. The envelope and the list message carry lengths before the items, so
 * the head needs the items' bytes in all: they are measured first (`itemSize`,
 * which keeps no bytes). The list message's items are its last field, so nothing
 * of the list comes after them.
 */
export interface ProtobufListEncoder {
  /** The field `item` takes in the list (tag, length and message). */
  item(item: unknown): Buffer;
  /** The bytes `item` would take (see `item`), without keeping them. */
  itemSize(item: unknown): number;
  /** The fields of `items`, in order, in one buffer. */
  items(items: readonly unknown[]): Buffer;
  /**
   * What comes before the items of `list` (its apiVersion, kind and metadata; its
   * items are not looked at) when they take `itemsBytes` in all: the magic, the
   * envelope up to the list message's bytes, and the list's own fields.
   */
  head(list: object, itemsBytes: number): Buffer;
  /** What comes after the items: the rest of the envelope. */
  tail: Buffer;
}

/** Protobuf's wire type of a length-delimited field. */
const LENGTH_DELIMITED = 2;

/**
 * How lists of `apiVersion` and `kind` (a `<Kind>List`, PartialObjectMetadataList)
 * are written in parts; undefined when they have no protobuf encoding.
 */
export function protobufListEncoder(
  apiVersion: string,
  kind: string,
): ProtobufListEncoder | undefined {
  const type = responseMessage(apiVersion, kind);
  const field = type?.fields.items;
  const itemType = field?.resolvedType;
  if (!type || !field?.repeated || !itemType || !("fieldsArray" in itemType)) {
    return undefined;
  }
  if (type.fieldsArray.some((f) => f.id > field.id)) return undefined;
  const itemTag = (field.id << 3) | LENGTH_DELIMITED;
  const rawTag = (unknownType().fields.raw.id << 3) | LENGTH_DELIMITED;
  const write = (w: Writer, item: unknown) => {
    w.uint32(itemTag).fork();
    writeMessageBody(w, itemType as Type, item);
    w.ldelim();
  };
  // The envelope around no bytes: its type meta, the raw field (tag, zero length), the rest.
  const typeMeta = Buffer.from(unknownType().encode({ typeMeta: { apiVersion, kind } }).finish());
  const empty = Buffer.from(envelope(apiVersion, kind, new Uint8Array()));
  const at = typeMeta.length;
  if (!empty.subarray(0, at).equals(typeMeta) || empty[at] !== rawTag || empty[at + 1] !== 0) {
    throw new Error("protobuf: the envelope does not have its raw bytes after its type meta");
  }
  const tail = Buffer.from(empty.subarray(at + 2));
  return {
    item(item) {
      const w = protobuf.Writer.create();
      write(w, item);
      return bytesOf(w);
    },
    itemSize(item) {
      const w = protobuf.Writer.create();
      write(w, item);
      return w.len;
    },
    items(items) {
      const w = protobuf.Writer.create();
      for (const item of items) write(w, item);
      return bytesOf(w);
    },
    head(list, itemsBytes) {
      const { items: _items, ...rest } = list as Record<string, unknown>;
      const own = encodeMessage(type, rest);
      const w = protobuf.Writer.create()
        .uint32(rawTag)
        .uint32(own.length + itemsBytes);
      return Buffer.concat([PROTOBUF_MAGIC, typeMeta, bytesOf(w), own]);
    },
    tail,
  };
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
