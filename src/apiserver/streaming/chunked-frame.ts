/**
 * HTTP/1.1 chunks framed once and written as they are to many responses: a watch
 * event's output is the same bytes for every watcher alike, so its chunk framing
 * (`<size in hex>\r\n<bytes>\r\n`) is made once, in the same buffer, and each
 * watcher's connection is given that one buffer in one write, instead of each
 * response framing it again in four writes of its own.
 */
import type { ServerResponse } from "node:http";

const CRLF = "\r\n";

/** `text` (bytes in `encoding`) as one HTTP/1.1 chunk, size line and trailing CRLF included. */
export function chunkedFrame(text: string, encoding: BufferEncoding = "utf8"): Buffer {
  const bytes = Buffer.byteLength(text, encoding);
  const head = `${bytes.toString(16)}${CRLF}`;
  const frame = Buffer.allocUnsafe(head.length + bytes + CRLF.length);
  let at = frame.write(head, 0, "latin1");
  at += frame.write(text, at, encoding);
  frame.write(CRLF, at, "latin1");
  return frame;
}

/** The data a chunk made by chunkedFrame carries (a view of it, not a copy). */
export function chunkData(frame: Buffer): Buffer {
  const end = frame.indexOf(CRLF, 0, "latin1");
  return frame.subarray(end + CRLF.length, frame.length - CRLF.length);
}

/**
 * Writes `frame` (from chunkedFrame) to `res`: straight to its connection when the
 * response is chunked and its headers went out (what the response would have
 * written, in one write); through the response otherwise.
 */
export function writeChunk(res: ServerResponse, frame: Buffer): void {
  const socket = res.socket;
  if (socket !== null && res.headersSent && res.chunkedEncoding && !res.writableEnded) {
    socket.write(frame);
    return;
  }
  res.write(chunkData(frame));
}
