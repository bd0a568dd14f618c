/**
 * The SPDY/3.1 subset (src/agent/endpoint/spdy.ts, spdy-session.ts) against
 * frames written out byte by byte from the SPDY/3 draft, and against frames the
 * real kubectl 1.32 sent for `port-forward` (recorded from the wire: two
 * SYN_STREAMs whose header blocks continue one zlib stream primed with the
 * SPDY/3 dictionary, then the FIN that closes the first). The session runs on
 * a real TCP connection.
 */
import { connect, createServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import {
  decodeFrame,
  decodeHeaderBlock,
  encodeControl,
  encodeData,
  encodeHeaderBlock,
  type Frame,
  FrameReader,
  HeaderCodec,
  headerBlockOffset,
  RstStatus,
  SPDY3_DICTIONARY,
  SpdyProtocolError,
} from "../../src/agent/endpoint/spdy.ts";
import { SpdySession, type SpdyStream } from "../../src/agent/endpoint/spdy-session.ts";

/** A SYN_STREAM of stream `id` (no priority, no flags) with `headers`. */
const synStream = (id: number, headers: Record<string, string[]>) =>
  ({
    type: "syn_stream",
    streamId: id,
    associatedTo: 0,
    priority: 0,
    slot: 0,
    flags: 0,
    headers,
  }) as const;

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ""), "hex");

/** What kubectl 1.32 wrote first on a port-forward connection (two ports, one request each). */
const KUBECTL_FRAMES = hex(`
  80030001 0000003e 00000001 00000000 0000
  78f9e3c6a7c202253a060606ce2248fc6482d22da30138e59514a526e6420b17d65450d0430aea22709eb030b03004000000ffff
  80030001 00000019 00000003 00000000 0000
  826a2642a901861d8600000000ffff
  00000001 01000000
`);

/** Reads every frame of `bytes`, inflating header blocks with `codec` in order. */
async function readAll(bytes: Buffer, codec = new HeaderCodec()): Promise<Frame[]> {
  const reader = new FrameReader();
  // One byte at a time: frames are cut wherever the bytes happen to be split.
  for (const b of bytes) reader.push(Buffer.of(b));
  const out: Frame[] = [];
  for (let raw = reader.next(); raw; raw = reader.next()) {
    const at = raw.control ? headerBlockOffset(raw.typeOrStream) : -1;
    out.push(
      decodeFrame(raw, at >= 0 ? await codec.decompress(raw.payload.subarray(at)) : undefined),
    );
  }
  codec.close();
  return out;
}

describe("frames", () => {
  it("lays out control and data frames as the draft does", () => {
    // RST_STREAM: control bit, version 3, type 3; flags 0, length 8; stream 5; CANCEL (5).
    const rst = hex("80030003 00000008 00000005 00000005");
    expect(encodeControl({ type: "rst_stream", streamId: 5, status: RstStatus.CANCEL })).toEqual(
      rst,
    );
    // DATA: control bit clear, stream 7; FLAG_FIN, length 3; "abc".
    const data = hex("00000007 01000003 616263");
    expect(encodeData(7, Buffer.from("abc"), 1)).toEqual(data);
    // PING 1; GOAWAY last good stream 9, status OK; WINDOW_UPDATE stream 3 by 65536.
    expect(encodeControl({ type: "ping", id: 1 })).toEqual(hex("80030006 00000004 00000001"));
    expect(encodeControl({ type: "goaway", lastGoodStreamId: 9, status: 0 })).toEqual(
      hex("80030007 00000008 00000009 00000000"),
    );
    expect(encodeControl({ type: "window_update", streamId: 3, delta: 65536 })).toEqual(
      hex("80030009 00000008 00000003 00010000"),
    );
  });

  it("reads the frames the draft defines, and passes unknown control types up", async () => {
    const frames = await readAll(
      Buffer.concat([
        hex("80030003 00000008 00000005 00000003"),
        hex("00000007 01000003 616263"),
        // SETTINGS: 1 entry, flags 1 (persist), id 4 (max concurrent streams), value 100.
        hex("80030004 0000000c 00000001 01000004 00000064"),
        hex("80030006 00000004 00000002"),
        hex("80030007 00000008 00000009 00000001"),
        hex("80030009 00000008 00000003 00010000"),
        // NOOP (type 5), gone from SPDY/3: ignored by whoever reads it.
        hex("80030005 00000000"),
      ]),
    );
    expect(frames).toEqual([
      { type: "rst_stream", streamId: 5, status: RstStatus.REFUSED_STREAM },
      { type: "data", streamId: 7, flags: 1, data: Buffer.from("abc") },
      { type: "settings", flags: 0, entries: [{ flags: 1, id: 4, value: 100 }] },
      { type: "ping", id: 2 },
      { type: "goaway", lastGoodStreamId: 9, status: 1 },
      { type: "window_update", streamId: 3, delta: 65536 },
      { type: "unknown", controlType: 5, flags: 0 },
    ]);
  });

  it("refuses frames of a wrong size or version", () => {
    const raw = (bytes: Buffer) => {
      const r = new FrameReader();
      r.push(bytes);
      const f = r.next();
      if (!f) throw new Error("no frame");
      return f;
    };
    expect(() => decodeFrame(raw(hex("80030006 00000003 000000")))).toThrow(SpdyProtocolError);
    expect(() => decodeFrame(raw(hex("80020006 00000004 00000001")))).toThrow(/version 2/);
    expect(() => decodeFrame(raw(hex("00000000 00000000")))).toThrow(/stream 0/);
  });

  it("writes header blocks as counted, length-prefixed names and NUL-joined values", () => {
    const block = hex(`
      00000002
      00000004 706f7274 00000004 38303830
      00000001 61 00000003 780079
    `);
    expect(encodeHeaderBlock({ port: ["8080"], a: ["x", "y"] })).toEqual(block);
    expect(decodeHeaderBlock(block)).toEqual({ port: ["8080"], a: ["x", "y"] });
    expect(() => decodeHeaderBlock(hex("00000001 00000004 706f"))).toThrow(/truncated/);
  });
});

describe("header compression", () => {
  it("uses SPDY/3's dictionary, the one kubectl's zlib stream names", async () => {
    expect(SPDY3_DICTIONARY.length).toBe(1423);
    expect(SPDY3_DICTIONARY.subarray(0, 11)).toEqual(hex("00000007 6f7074696f6e73"));
    expect(SPDY3_DICTIONARY.subarray(-7).toString()).toBe(",enq=0.");
    const codec = new HeaderCodec();
    const block = await codec.compress({ port: ["8080"] });
    codec.close();
    // A zlib header with FDICT set, then the dictionary's Adler-32: kubectl's is the same.
    expect(block[1] & 0x20).toBe(0x20);
    expect(block.subarray(2, 6)).toEqual(KUBECTL_FRAMES.subarray(20, 24));
  });

  it("reads what kubectl 1.32 sent: header blocks continuing one zlib stream", async () => {
    expect(await readAll(KUBECTL_FRAMES)).toEqual([
      synStream(1, { requestid: ["0"], streamtype: ["error"], port: ["8081"] }),
      synStream(3, { streamtype: ["error"], port: ["8080"], requestid: ["1"] }),
      { type: "data", streamId: 1, flags: 1, data: Buffer.alloc(0) },
    ]);
  });

  it("compresses blocks that a fresh reader inflates in order", async () => {
    const out = new HeaderCodec();
    const blocks = [
      await out.compress({ streamtype: ["data"], port: ["80"] }),
      await out.compress({}),
      await out.compress({ "x-many": ["1", "2", "3"] }),
    ];
    out.close();
    const frames = Buffer.concat(
      blocks.map((b, i) =>
        encodeControl({ type: "syn_reply", streamId: 2 * i + 1, flags: 0, headers: {} }, b),
      ),
    );
    const read = await readAll(frames);
    expect(read.map((f) => (f.type === "syn_reply" ? f.headers : undefined))).toEqual([
      { streamtype: ["data"], port: ["80"] },
      {},
      { "x-many": ["1", "2", "3"] },
    ]);
  });
});

describe("session", () => {
  let server: Server | undefined;
  let client: Socket | undefined;
  afterEach(async () => {
    client?.destroy();
    await new Promise<void>((done) => (server ? server.close(() => done()) : done()));
    server = undefined;
  });

  /** A session served on a real TCP connection, and the client's socket with the frames it got. */
  async function connected(): Promise<{
    session: Promise<SpdySession>;
    frames: Frame[];
    send: (frame: Exclude<Frame, { type: "data" | "unknown" }>) => Promise<void>;
    sendRaw: (bytes: Buffer) => void;
  }> {
    let resolveSession: (s: SpdySession) => void = () => {};
    const session = new Promise<SpdySession>((r) => {
      resolveSession = r;
    });
    server = createServer((socket) => resolveSession(new SpdySession(socket)));
    await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
    const port = (server.address() as { port: number }).port;
    client = connect({ host: "127.0.0.1", port });
    const out = new HeaderCodec();
    const inCodec = new HeaderCodec();
    const reader = new FrameReader();
    const frames: Frame[] = [];
    let chain = Promise.resolve();
    client.on("data", (chunk: Buffer) => {
      reader.push(chunk);
      chain = chain.then(async () => {
        for (let raw = reader.next(); raw; raw = reader.next()) {
          const at = raw.control ? headerBlockOffset(raw.typeOrStream) : -1;
          frames.push(
            decodeFrame(
              raw,
              at >= 0 ? await inCodec.decompress(raw.payload.subarray(at)) : undefined,
            ),
          );
        }
      });
    });
    client.once("close", () => {
      out.close();
      inCodec.close();
    });
    const send = async (frame: Exclude<Frame, { type: "data" | "unknown" }>) => {
      const block = "headers" in frame ? await out.compress(frame.headers) : undefined;
      client!.write(encodeControl(frame, block));
    };
    return { session, frames, send, sendRaw: (b) => client!.write(b) };
  }

  const until = async (what: string, ok: () => boolean) => {
    for (let i = 0; i < 400 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
    if (!ok()) throw new Error(`never: ${what}`);
  };

  it("accepts a client's stream, carries data both ways and closes it with both FINs", async () => {
    const c = await connected();
    await c.send(synStream(1, { port: ["80"] }));
    const session = await c.session;
    const stream = await new Promise<SpdyStream>((r) => session.once("stream", r));
    expect(stream.header("port")).toBe("80");
    stream.reply();
    const got: Buffer[] = [];
    stream.on("data", (d: Buffer) => got.push(d));
    let closed = false;
    stream.once("close", () => {
      closed = true;
    });
    c.sendRaw(encodeData(1, Buffer.from("ping?")));
    c.sendRaw(encodeData(1, Buffer.alloc(0), 1));
    await until("the client's FIN", () => stream.remoteClosed);
    expect(Buffer.concat(got).toString()).toBe("ping?");
    stream.write(Buffer.from("pong"));
    stream.end();
    await until("the server's frames", () => c.frames.length >= 3);
    expect(c.frames).toEqual([
      { type: "syn_reply", streamId: 1, flags: 0, headers: {} },
      { type: "data", streamId: 1, flags: 0, data: Buffer.from("pong") },
      { type: "data", streamId: 1, flags: 1, data: Buffer.alloc(0) },
    ]);
    expect(closed).toBe(true);
    expect(session.openStreams).toBe(0);
  });

  it("answers the client's pings, refuses a server-numbered stream, and ends on GOAWAY", async () => {
    const c = await connected();
    c.sendRaw(encodeControl({ type: "ping", id: 7 }));
    const session = await c.session;
    await c.send(synStream(2, {}));
    await until("two answers", () => c.frames.length >= 2);
    expect(c.frames).toEqual([
      { type: "ping", id: 7 },
      { type: "rst_stream", streamId: 2, status: RstStatus.PROTOCOL_ERROR },
    ]);
    let ended = false;
    session.once("close", () => {
      ended = true;
    });
    c.sendRaw(encodeControl({ type: "goaway", lastGoodStreamId: 0, status: 0 }));
    await until("the session's end", () => ended);
  });

  it("answers a malformed frame with GOAWAY PROTOCOL_ERROR", async () => {
    const c = await connected();
    c.sendRaw(hex("80020006 00000004 00000001"));
    await c.session;
    await until("GOAWAY", () => c.frames.length >= 1);
    expect(c.frames[0]).toEqual({ type: "goaway", lastGoodStreamId: 0, status: 1 });
  });
});
