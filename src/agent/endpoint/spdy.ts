/**
 * SPDY/3.1 framing, the subset Kubernetes' streams use (the kubelet serves
 * `kubectl port-forward` over it, and older clients exec with it): frames are
 * parsed from and encoded to bytes as the SPDY/3 draft lays them out, and header
 * blocks are compressed with zlib primed with SPDY/3's dictionary, one zlib
 * stream per direction for the whole connection, each block ending on a sync
 * flush (HeaderCodec).
 *
 * Every frame starts with 8 bytes. A control frame: 1 bit set, 15 bits version
 * (3), 16 bits type, 8 bits flags, 24 bits length. A data frame: 1 bit clear, 31
 * bits stream id, 8 bits flags, 24 bits length. Then `length` bytes of payload.
 * Control frames of types this subset does not know (NOOP, CREDENTIAL, ...) are
 * passed up as `unknown`, to be ignored as the draft says.
 */
import {
  createDeflate,
  createInflate,
  type Deflate,
  type Inflate,
  constants as zlibConstants,
} from "node:zlib";

export const SPDY_VERSION = 3;
/** The largest payload a frame's 24-bit length allows. */
export const MAX_FRAME_PAYLOAD = 0xffffff;
/** Most bytes a header block may inflate to (more is a protocol error). */
export const MAX_HEADER_BLOCK_BYTES = 256 * 1024;

export const SYN_STREAM = 1;
export const SYN_REPLY = 2;
export const RST_STREAM = 3;
export const SETTINGS = 4;
export const PING = 6;
export const GOAWAY = 7;
export const HEADERS = 8;
export const WINDOW_UPDATE = 9;

/** FLAG_FIN on DATA, SYN_STREAM, SYN_REPLY and HEADERS. */
export const FLAG_FIN = 0x01;
/** FLAG_UNIDIRECTIONAL on SYN_STREAM. */
export const FLAG_UNIDIRECTIONAL = 0x02;

/** RST_STREAM status codes. */
export const RstStatus = {
  PROTOCOL_ERROR: 1,
  INVALID_STREAM: 2,
  REFUSED_STREAM: 3,
  UNSUPPORTED_VERSION: 4,
  CANCEL: 5,
  INTERNAL_ERROR: 6,
  FLOW_CONTROL_ERROR: 7,
  STREAM_IN_USE: 8,
  STREAM_ALREADY_CLOSED: 9,
  FRAME_TOO_LARGE: 11,
} as const;

/** GOAWAY status codes. */
export const GoAwayStatus = { OK: 0, PROTOCOL_ERROR: 1, INTERNAL_ERROR: 2 } as const;

/** A header block: lower-case names, each with its values (joined by NUL on the wire). */
export type SpdyHeaders = Record<string, string[]>;

export type Frame =
  | { type: "data"; streamId: number; flags: number; data: Buffer }
  | {
      type: "syn_stream";
      streamId: number;
      associatedTo: number;
      priority: number;
      slot: number;
      flags: number;
      headers: SpdyHeaders;
    }
  | { type: "syn_reply"; streamId: number; flags: number; headers: SpdyHeaders }
  | { type: "headers"; streamId: number; flags: number; headers: SpdyHeaders }
  | { type: "rst_stream"; streamId: number; status: number }
  | { type: "settings"; flags: number; entries: { flags: number; id: number; value: number }[] }
  | { type: "ping"; id: number }
  | { type: "goaway"; lastGoodStreamId: number; status: number }
  | { type: "window_update"; streamId: number; delta: number }
  | { type: "unknown"; controlType: number; flags: number };

/** A protocol violation: the connection is answered with GOAWAY and closed. */
export class SpdyProtocolError extends Error {}

/** One frame cut from the byte stream, its header block (if any) still compressed. */
export interface RawFrame {
  control: boolean;
  /** The control frame's type, or the data frame's stream id. */
  typeOrStream: number;
  version: number;
  flags: number;
  payload: Buffer;
}

/** Cuts frames from the bytes of a connection as they arrive. */
export class FrameReader {
  private buf: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): void {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
  }

  /** The next whole frame, or undefined until more bytes come. */
  next(): RawFrame | undefined {
    if (this.buf.length < 8) return undefined;
    const length = this.buf.readUIntBE(5, 3);
    if (this.buf.length < 8 + length) return undefined;
    const first = this.buf.readUInt32BE(0);
    const control = (first & 0x80000000) !== 0;
    const frame: RawFrame = {
      control,
      typeOrStream: control ? first & 0xffff : first & 0x7fffffff,
      version: control ? (first >>> 16) & 0x7fff : SPDY_VERSION,
      flags: this.buf[4],
      payload: this.buf.subarray(8, 8 + length),
    };
    this.buf = this.buf.subarray(8 + length);
    return frame;
  }
}

/** The uncompressed header block of `headers`: count, then length-prefixed names and values. */
export function encodeHeaderBlock(headers: SpdyHeaders): Buffer {
  const parts: Buffer[] = [];
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n);
    return b;
  };
  const names = Object.keys(headers);
  parts.push(u32(names.length));
  for (const name of names) {
    const n = Buffer.from(name.toLowerCase(), "utf8");
    const v = Buffer.from(headers[name].join("\0"), "utf8");
    parts.push(u32(n.length), n, u32(v.length), v);
  }
  return Buffer.concat(parts);
}

/** Reads an uncompressed header block; a malformed one is a SpdyProtocolError. */
export function decodeHeaderBlock(block: Buffer): SpdyHeaders {
  let off = 0;
  const u32 = () => {
    if (off + 4 > block.length) throw new SpdyProtocolError("header block is truncated");
    const n = block.readUInt32BE(off);
    off += 4;
    return n;
  };
  const bytes = (n: number) => {
    if (off + n > block.length) throw new SpdyProtocolError("header block is truncated");
    const s = block.subarray(off, off + n).toString("utf8");
    off += n;
    return s;
  };
  const count = u32();
  const headers: SpdyHeaders = {};
  for (let i = 0; i < count; i++) {
    const name = bytes(u32());
    if (name.length === 0) throw new SpdyProtocolError("header name is empty");
    if (Object.hasOwn(headers, name)) throw new SpdyProtocolError(`header ${name} is repeated`);
    headers[name] = bytes(u32()).split("\0");
  }
  return headers;
}

function header(control: boolean, typeOrStream: number, flags: number, length: number): Buffer {
  if (length > MAX_FRAME_PAYLOAD) throw new RangeError(`frame payload of ${length} bytes`);
  const b = Buffer.alloc(8);
  b.writeUInt32BE(
    control ? (0x80000000 | (SPDY_VERSION << 16) | typeOrStream) >>> 0 : typeOrStream & 0x7fffffff,
  );
  b.writeUInt32BE(((flags << 24) | length) >>> 0, 4);
  return b;
}

function words(...values: number[]): Buffer {
  const b = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => {
    b.writeUInt32BE(v >>> 0, i * 4);
  });
  return b;
}

/** A DATA frame. */
export function encodeData(streamId: number, data: Buffer, flags = 0): Buffer {
  return Buffer.concat([header(false, streamId, flags, data.length), data]);
}

/**
 * A control frame. Frames that carry headers take their header block already
 * compressed (`block`), since the compression state is the connection's.
 */
export function encodeControl(
  frame: Exclude<Frame, { type: "data" | "unknown" }>,
  block?: Buffer,
): Buffer {
  const control = (type: number, flags: number, payload: Buffer) =>
    Buffer.concat([header(true, type, flags, payload.length), payload]);
  const needBlock = () => {
    if (!block) throw new Error(`${frame.type} needs its compressed header block`);
    return block;
  };
  switch (frame.type) {
    case "syn_stream": {
      const fixed = Buffer.alloc(10);
      fixed.writeUInt32BE(frame.streamId & 0x7fffffff, 0);
      fixed.writeUInt32BE(frame.associatedTo & 0x7fffffff, 4);
      fixed[8] = (frame.priority & 0x7) << 5;
      fixed[9] = frame.slot & 0xff;
      return control(SYN_STREAM, frame.flags, Buffer.concat([fixed, needBlock()]));
    }
    case "syn_reply":
      return control(SYN_REPLY, frame.flags, Buffer.concat([words(frame.streamId), needBlock()]));
    case "headers":
      return control(HEADERS, frame.flags, Buffer.concat([words(frame.streamId), needBlock()]));
    case "rst_stream":
      return control(RST_STREAM, 0, words(frame.streamId, frame.status));
    case "settings": {
      const entries = frame.entries.map((e) =>
        words((((e.flags & 0xff) << 24) | (e.id & 0xffffff)) >>> 0, e.value),
      );
      return control(SETTINGS, frame.flags, Buffer.concat([words(entries.length), ...entries]));
    }
    case "ping":
      return control(PING, 0, words(frame.id));
    case "goaway":
      return control(GOAWAY, 0, words(frame.lastGoodStreamId, frame.status));
    case "window_update":
      return control(WINDOW_UPDATE, 0, words(frame.streamId, frame.delta & 0x7fffffff));
  }
}

/** Where a control frame's compressed header block starts in its payload (none: -1). */
export function headerBlockOffset(type: number): number {
  if (type === SYN_STREAM) return 10;
  if (type === SYN_REPLY || type === HEADERS) return 4;
  return -1;
}

/**
 * A raw frame read into a Frame; `headers` is its header block once inflated (for
 * the frames that carry one). Sizes are checked as the draft fixes them.
 */
export function decodeFrame(raw: RawFrame, headers?: SpdyHeaders): Frame {
  const p = raw.payload;
  if (!raw.control) {
    if (raw.typeOrStream === 0) throw new SpdyProtocolError("data frame on stream 0");
    return { type: "data", streamId: raw.typeOrStream, flags: raw.flags, data: p };
  }
  if (raw.version !== SPDY_VERSION) {
    throw new SpdyProtocolError(`unsupported SPDY version ${raw.version}`);
  }
  const need = (n: number, exact = false) => {
    if (p.length < n || (exact && p.length !== n)) {
      throw new SpdyProtocolError(`control frame ${raw.typeOrStream} of ${p.length} bytes`);
    }
  };
  const id = (at: number) => p.readUInt32BE(at) & 0x7fffffff;
  switch (raw.typeOrStream) {
    case SYN_STREAM:
      need(10);
      return {
        type: "syn_stream",
        streamId: id(0),
        associatedTo: id(4),
        priority: p[8] >> 5,
        slot: p[9],
        flags: raw.flags,
        headers: headers ?? {},
      };
    case SYN_REPLY:
      need(4);
      return { type: "syn_reply", streamId: id(0), flags: raw.flags, headers: headers ?? {} };
    case HEADERS:
      need(4);
      return { type: "headers", streamId: id(0), flags: raw.flags, headers: headers ?? {} };
    case RST_STREAM:
      need(8, true);
      return { type: "rst_stream", streamId: id(0), status: p.readUInt32BE(4) };
    case SETTINGS: {
      need(4);
      const count = p.readUInt32BE(0);
      need(4 + count * 8, true);
      const entries = [];
      for (let i = 0; i < count; i++) {
        const w = p.readUInt32BE(4 + i * 8);
        entries.push({ flags: w >>> 24, id: w & 0xffffff, value: p.readUInt32BE(8 + i * 8) });
      }
      return { type: "settings", flags: raw.flags, entries };
    }
    case PING:
      need(4, true);
      return { type: "ping", id: p.readUInt32BE(0) };
    case GOAWAY:
      need(8, true);
      return { type: "goaway", lastGoodStreamId: id(0), status: p.readUInt32BE(4) };
    case WINDOW_UPDATE:
      need(8, true);
      return { type: "window_update", streamId: id(0), delta: p.readUInt32BE(4) & 0x7fffffff };
    default:
      return { type: "unknown", controlType: raw.typeOrStream, flags: raw.flags };
  }
}

/** SPDY/3's header compression dictionary: length-prefixed names, then common text. */
export const SPDY3_DICTIONARY: Buffer = (() => {
  const names = [
    "options",
    "head",
    "post",
    "put",
    "delete",
    "trace",
    "accept",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "accept-ranges",
    "age",
    "allow",
    "authorization",
    "cache-control",
    "connection",
    "content-base",
    "content-encoding",
    "content-language",
    "content-length",
    "content-location",
    "content-md5",
    "content-range",
    "content-type",
    "date",
    "etag",
    "expect",
    "expires",
    "from",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "last-modified",
    "location",
    "max-forwards",
    "pragma",
    "proxy-authenticate",
    "proxy-authorization",
    "range",
    "referer",
    "retry-after",
    "server",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "vary",
    "via",
    "warning",
    "www-authenticate",
    "method",
    "get",
    "status",
    "200 OK",
    "version",
    "HTTP/1.1",
    "url",
    "public",
    "set-cookie",
    "keep-alive",
    "origin",
  ];
  const text = [
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505",
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request",
    "401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented",
    "503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 ",
    "Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,",
    "application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age=",
    "gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.",
  ].join("");
  const parts: Buffer[] = [];
  for (const name of names) {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(name.length);
    parts.push(len, Buffer.from(name, "latin1"));
  }
  parts.push(Buffer.from(text, "latin1"));
  return Buffer.concat(parts);
})();

/** Runs `input` through `stream` (a zlib stream flushing with Z_SYNC_FLUSH) and collects what comes out. */
function through(
  stream: Deflate | Inflate,
  input: Buffer,
  limit = Number.POSITIVE_INFINITY,
): Promise<Buffer> {
  return new Promise((done, fail) => {
    const out: Buffer[] = [];
    let size = 0;
    const failed = (err: Error) => {
      stream.off("data", collect);
      fail(new SpdyProtocolError(`header block: ${err.message}`));
    };
    const collect = (chunk: Buffer) => {
      out.push(chunk);
      size += chunk.length;
      if (size > limit) {
        failed(new Error(`inflates past ${limit} bytes`));
        stream.destroy();
      }
    };
    stream.on("data", collect);
    stream.once("error", failed);
    stream.write(input, () => {
      // Whatever is still buffered was produced by this block.
      for (let c = stream.read(); c !== null; c = stream.read()) collect(c as Buffer);
      stream.off("data", collect);
      stream.off("error", failed);
      if (size <= limit) done(Buffer.concat(out));
    });
  });
}

/**
 * The header compression of one connection: one deflate stream for what is sent
 * and one inflate stream for what is received, both primed with SPDY3_DICTIONARY.
 * Calls must be made in frame order (each direction's blocks form one zlib stream).
 */
export class HeaderCodec {
  private readonly deflate = createDeflate({
    dictionary: SPDY3_DICTIONARY,
    flush: zlibConstants.Z_SYNC_FLUSH,
  });
  private readonly inflate = createInflate({
    dictionary: SPDY3_DICTIONARY,
    flush: zlibConstants.Z_SYNC_FLUSH,
  });

  /** The compressed block of `headers`, continuing this connection's stream. */
  compress(headers: SpdyHeaders): Promise<Buffer> {
    return through(this.deflate, encodeHeaderBlock(headers));
  }

  /** The headers of a received compressed block. */
  async decompress(block: Buffer): Promise<SpdyHeaders> {
    if (block.length === 0) return {};
    return decodeHeaderBlock(await through(this.inflate, block, MAX_HEADER_BLOCK_BYTES));
  }

  close(): void {
    this.deflate.destroy();
    this.inflate.destroy();
  }
}
