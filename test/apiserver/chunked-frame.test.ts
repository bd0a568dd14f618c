/**
 * Chunks framed once and shared among responses (src/apiserver/streaming/
 * chunked-frame.ts): what a client reads is exactly the data written, in order,
 * whether a frame goes straight to the connection or through the response, with
 * multi-byte UTF-8 and binary (latin1-held) data, and the response still ends as a
 * well-formed chunked body.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chunkData, chunkedFrame, writeChunk } from "../../src/apiserver/streaming/index.ts";

describe("chunked frames", () => {
  let server: http.Server;
  let port = 0;
  /** What each request's handler does with its response. */
  let handle: (res: http.ServerResponse) => void = () => {};

  beforeAll(async () => {
    server = http.createServer((_req, res) => handle(res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  /** GETs `/` and returns the whole body as bytes. */
  function fetchBody(): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      http
        .get({ host: "127.0.0.1", port, path: "/", agent: false }, (res) => {
          const parts: Buffer[] = [];
          res.on("data", (c: Buffer) => parts.push(c));
          res.on("end", () => resolve(Buffer.concat(parts)));
          res.on("error", reject);
        })
        .on("error", reject);
    });
  }

  it("frames the bytes of the text, not its characters, and gives the data back", () => {
    const text = "été ☃\n";
    const frame = chunkedFrame(text);
    const bytes = Buffer.byteLength(text);
    expect(frame.toString("latin1", 0, frame.indexOf("\r\n"))).toBe(bytes.toString(16));
    expect(chunkData(frame).toString("utf8")).toBe(text);
    const binary = String.fromCharCode(0, 0xff, 0x0a, 0x80);
    expect([...chunkData(chunkedFrame(binary, "latin1"))]).toEqual([0, 0xff, 0x0a, 0x80]);
  });

  it("delivers shared frames, response writes and the end in order", async () => {
    const shared = chunkedFrame('{"type":"ADDED","n":"☃"}\n');
    const binary = chunkedFrame(String.fromCharCode(1, 0xfe, 0x0d, 0x0a), "latin1");
    handle = (res) => {
      res.statusCode = 200;
      res.setHeader("Transfer-Encoding", "chunked");
      // Before the headers went out the frame goes through the response.
      writeChunk(res, shared);
      res.write("between\n");
      writeChunk(res, binary);
      writeChunk(res, shared);
      setImmediate(() => {
        writeChunk(res, shared);
        res.end("last\n");
      });
    };
    const body = await fetchBody();
    const s = chunkData(shared);
    const b = chunkData(binary);
    expect(
      body.equals(Buffer.concat([s, Buffer.from("between\n"), b, s, s, Buffer.from("last\n")])),
    ).toBe(true);
  });
});
