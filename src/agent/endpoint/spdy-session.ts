/**
 * The server side of a SPDY/3.1 connection as Kubernetes' streams use it (the
 * frames are spdy.ts's): the client opens streams (odd ids) with SYN_STREAM, the
 * server accepts each with an empty SYN_REPLY or refuses it with RST_STREAM
 * REFUSED_STREAM; DATA flows both ways and an empty DATA with FLAG_FIN half-closes
 * a stream; RST_STREAM ends it at once; PINGs from the client are sent back;
 * GOAWAY from either side ends the connection. SETTINGS and WINDOW_UPDATE are
 * read and ignored: the peers Kubernetes pairs with (spdystream) keep no flow
 * control windows, so none is kept here either, and a stream's bytes are held
 * back only by the connection's own backpressure.
 *
 * Frames are handled in the order they came, and sent in the order they were
 * written: a frame carrying headers waits for its block's compression and the
 * frames written after it wait behind it.
 */
import { EventEmitter } from "node:events";
import type { Duplex } from "node:stream";
import {
  decodeFrame,
  encodeControl,
  encodeData,
  FLAG_FIN,
  FLAG_UNIDIRECTIONAL,
  type Frame,
  FrameReader,
  GoAwayStatus,
  HeaderCodec,
  headerBlockOffset,
  MAX_FRAME_PAYLOAD,
  RstStatus,
  type SpdyHeaders,
  SpdyProtocolError,
} from "./spdy.ts";

/** How long a closed connection waits for the peer to close its side before it is dropped. */
export const CLOSE_GRACE_MS = 5_000;

/** One stream of a session. Events: `data` (Buffer), `end` (the peer's FIN), `close`. */
export class SpdyStream extends EventEmitter {
  /** This side sent FIN (or the stream was reset). */
  localClosed = false;
  /** The peer sent FIN (or the stream was reset). */
  remoteClosed = false;
  closed = false;
  /** Ended by a RST_STREAM (either side's) or the connection's end, not by both FINs. */
  aborted = false;

  constructor(
    private readonly session: SpdySession,
    readonly id: number,
    readonly headers: SpdyHeaders,
  ) {
    super();
  }

  /** The first value of header `name`. */
  header(name: string): string | undefined {
    return this.headers[name]?.[0];
  }

  /** Accepts the stream (an empty SYN_REPLY). */
  reply(): void {
    this.session.send({ type: "syn_reply", streamId: this.id, flags: 0, headers: {} });
  }

  /** Refuses the stream (RST_STREAM REFUSED_STREAM). */
  refuse(): void {
    this.reset(RstStatus.REFUSED_STREAM);
  }

  /** Sends `data`; false when the connection is backed up (wait for the session's `drain`). */
  write(data: Buffer): boolean {
    if (this.localClosed || data.length === 0) return !this.session.backedUp();
    let ok = true;
    for (let at = 0; at < data.length; at += MAX_FRAME_PAYLOAD) {
      ok = this.session.sendData(this.id, data.subarray(at, at + MAX_FRAME_PAYLOAD), 0);
    }
    return ok;
  }

  /** Half-closes the stream: this side sends no more (an empty DATA with FIN). */
  end(): void {
    if (this.localClosed) return;
    this.localClosed = true;
    this.session.sendData(this.id, Buffer.alloc(0), FLAG_FIN);
    this.settle();
  }

  /** Ends the stream at once (RST_STREAM). */
  reset(status: number = RstStatus.CANCEL): void {
    if (this.closed) return;
    this.session.send({ type: "rst_stream", streamId: this.id, status });
    this.finish(true);
  }

  /** @internal The peer's DATA. */
  receive(data: Buffer, fin: boolean): void {
    if (this.remoteClosed) return;
    if (data.length > 0) this.emit("data", data);
    if (fin) {
      this.remoteClosed = true;
      this.emit("end");
      this.settle();
    }
  }

  /** @internal Gone: both sides closed, or (`aborted`) reset by either side or the connection ended. */
  finish(aborted = false): void {
    if (this.closed) return;
    this.aborted = aborted;
    const remoteWasOpen = !this.remoteClosed;
    this.localClosed = true;
    this.remoteClosed = true;
    this.closed = true;
    this.session.forget(this.id);
    if (remoteWasOpen) this.emit("end");
    this.emit("close");
  }

  private settle(): void {
    if (this.localClosed && this.remoteClosed) this.finish();
  }
}

/**
 * A SPDY/3.1 server connection over `socket` (already upgraded). Events: `stream`
 * (SpdyStream, to be replied to or refused), `drain`, `close`.
 */
export class SpdySession extends EventEmitter {
  private readonly reader = new FrameReader();
  private readonly codec = new HeaderCodec();
  private readonly streams = new Map<number, SpdyStream>();
  private lastStreamId = 0;
  /** Frames waiting for a header block to be compressed, and those behind them. */
  private queue: Promise<void> = Promise.resolve();
  private queued = 0;
  private reading = false;
  private closed = false;
  private goingAway = false;

  /** `head`: bytes of the connection already read (after the upgrade request). */
  constructor(
    private readonly socket: Duplex,
    head: Buffer = Buffer.alloc(0),
  ) {
    super();
    if (head.length > 0) this.reader.push(head);
    socket.on("data", (chunk: Buffer) => {
      this.reader.push(chunk);
      void this.pump();
    });
    if (head.length > 0) void this.pump();
    socket.on("drain", () => this.emit("drain"));
    socket.once("close", () => this.close());
    socket.on("error", () => this.close());
  }

  /** Whether the connection's write buffer is full. */
  backedUp(): boolean {
    return this.socket.writableNeedDrain;
  }

  /** The streams open now. */
  get openStreams(): number {
    return this.streams.size;
  }

  /** @internal Sends a control frame, after any queued ones. */
  send(frame: Exclude<Frame, { type: "data" | "unknown" }>): void {
    if (this.closed || this.goingAway) return;
    if (frame.type === "syn_stream" || frame.type === "syn_reply" || frame.type === "headers") {
      this.enqueue(async () => encodeControl(frame, await this.codec.compress(frame.headers)));
    } else if (this.queued > 0) {
      this.enqueue(async () => encodeControl(frame));
    } else {
      this.socket.write(encodeControl(frame));
    }
  }

  /** @internal Sends a DATA frame; false when the connection is backed up. */
  sendData(streamId: number, data: Buffer, flags: number): boolean {
    if (this.closed || this.goingAway) return false;
    const bytes = encodeData(streamId, data, flags);
    if (this.queued > 0) {
      this.enqueue(async () => bytes);
      return !this.socket.writableNeedDrain;
    }
    return this.socket.write(bytes);
  }

  private enqueue(make: () => Promise<Buffer>): void {
    this.queued++;
    this.queue = this.queue.then(async () => {
      try {
        const bytes = await make();
        if (!this.closed) this.socket.write(bytes);
      } catch {
        this.close();
      } finally {
        this.queued--;
      }
    });
  }

  /** @internal */
  forget(id: number): void {
    this.streams.delete(id);
  }

  /** Sends GOAWAY (with `status`) after what is queued, and closes the connection. */
  goAway(status: number = GoAwayStatus.OK): void {
    if (this.closed || this.goingAway) return;
    this.goingAway = true;
    const bytes = encodeControl({ type: "goaway", lastGoodStreamId: this.lastStreamId, status });
    const finish = () => {
      if (!this.socket.destroyed) this.socket.write(bytes);
      this.close();
    };
    if (this.queued > 0) this.queue = this.queue.then(finish);
    else finish();
  }

  /** Closes the connection and every stream on it. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.codec.close();
    for (const stream of [...this.streams.values()]) stream.finish(true);
    if (!this.socket.destroyed) {
      this.socket.end();
      // A peer that never closes its side is not waited for.
      setTimeout(() => this.socket.destroy(), CLOSE_GRACE_MS).unref();
    }
    this.emit("close");
  }

  /** Reads and handles the frames that arrived, one at a time, in order. */
  private async pump(): Promise<void> {
    if (this.reading) return;
    this.reading = true;
    try {
      for (let raw = this.reader.next(); raw && !this.closed; raw = this.reader.next()) {
        let headers: SpdyHeaders | undefined;
        const at = raw.control ? headerBlockOffset(raw.typeOrStream) : -1;
        if (at >= 0 && raw.payload.length >= at) {
          headers = await this.codec.decompress(raw.payload.subarray(at));
        }
        this.handle(decodeFrame(raw, headers));
      }
    } catch (err) {
      if (err instanceof SpdyProtocolError) this.goAway(GoAwayStatus.PROTOCOL_ERROR);
      else this.close();
    } finally {
      this.reading = false;
    }
  }

  private handle(frame: Frame): void {
    switch (frame.type) {
      case "syn_stream": {
        const id = frame.streamId;
        // Client streams are odd and increase; anything else is a protocol error.
        if (id % 2 === 0 || id <= this.lastStreamId) {
          this.send({ type: "rst_stream", streamId: id, status: RstStatus.PROTOCOL_ERROR });
          return;
        }
        this.lastStreamId = id;
        const stream = new SpdyStream(this, id, frame.headers);
        this.streams.set(id, stream);
        if (frame.flags & FLAG_UNIDIRECTIONAL) stream.localClosed = true;
        this.emit("stream", stream);
        if (frame.flags & FLAG_FIN) stream.receive(Buffer.alloc(0), true);
        return;
      }
      case "data":
        this.streams.get(frame.streamId)?.receive(frame.data, (frame.flags & FLAG_FIN) !== 0);
        return;
      case "headers":
        if (frame.flags & FLAG_FIN)
          this.streams.get(frame.streamId)?.receive(Buffer.alloc(0), true);
        return;
      case "rst_stream":
        this.streams.get(frame.streamId)?.finish(true);
        return;
      case "ping":
        // The client's pings (odd ids) go back as they came.
        if (frame.id % 2 === 1) this.send(frame);
        return;
      case "goaway":
        this.close();
        return;
      default:
        // SETTINGS, WINDOW_UPDATE, SYN_REPLY (the server opens no streams), unknown types.
        return;
    }
  }
}
