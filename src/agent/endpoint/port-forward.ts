/**
 * `kubectl port-forward` on the agent (the kubelet's /portForward/NS/NAME): a
 * SPDY/3.1 connection (spdy-session.ts) negotiated as `portforward.k8s.io`, on
 * which the client opens two streams per forwarded connection, paired by their
 * `requestid` header: `streamtype: error` and `streamtype: data`, each with the
 * `port` header. Once both are there, the agent connects to the Pod's address
 * on that port and carries the bytes both ways, each side's end passed on as a
 * half-close; when both sides are done, both streams are closed. A connection
 * that fails is reported on the error stream, worded as the kubelet words it
 * (`error forwarding port P to pod NAME_NAMESPACE, uid UID: dial tcp ...`), and
 * kubectl shows that text. A pair whose second stream does not come within
 * STREAM_CREATION_TIMEOUT_MS is given up, as the kubelet gives it up. Streams
 * with a missing or bad header are refused, as the kubelet refuses them.
 */
import type { IncomingMessage } from "node:http";
import { connect, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { PodRecord } from "../pods/index.ts";
import { SpdySession, type SpdyStream } from "./spdy-session.ts";

export const PORT_FORWARD_PROTOCOL = "portforward.k8s.io";
/** How long the second stream of a pair is waited for (the kubelet's default). */
export const STREAM_CREATION_TIMEOUT_MS = 30_000;

/** Go's words for a failed dial of `host:port` (net.Dial's error text). */
export function goDialError(err: NodeJS.ErrnoException, host: string, port: number): string {
  const target = `${host.includes(":") ? `[${host}]` : host}:${port}`;
  switch (err.code) {
    case "ECONNREFUSED":
      return `dial tcp ${target}: connect: connection refused`;
    case "EHOSTUNREACH":
      return `dial tcp ${target}: connect: no route to host`;
    case "ENETUNREACH":
      return `dial tcp ${target}: connect: network is unreachable`;
    case "ETIMEDOUT":
      return `dial tcp ${target}: i/o timeout`;
    default:
      return `dial tcp ${target}: ${err.message}`;
  }
}

/** Why a stream is refused (the kubelet's checks of its headers), or undefined. */
function invalidStream(stream: SpdyStream): string | undefined {
  const port = stream.header("port");
  if (!port) return `"port" header is required`;
  if (!/^\d+$/.test(port) || Number(port) > 65535) {
    return `unable to parse "${port}" as a port`;
  }
  if (Number(port) < 1) return `port "${port}" must be > 0`;
  const type = stream.header("streamtype");
  if (!type) return `"streamType" header is required`;
  if (type !== "error" && type !== "data") return `invalid stream type "${type}"`;
  return undefined;
}

interface Pair {
  requestId: string;
  data?: SpdyStream;
  error?: SpdyStream;
  timer: NodeJS.Timeout;
}

/** The 101 answer that agrees to SPDY/3.1 and the port-forward protocol. */
export function spdyUpgradeAnswer(protocol: string): string {
  return (
    "HTTP/1.1 101 Switching Protocols\r\n" +
    "Connection: Upgrade\r\n" +
    "Upgrade: SPDY/3.1\r\n" +
    `X-Stream-Protocol-Version: ${protocol}\r\n\r\n`
  );
}

/** The protocols a SPDY upgrade request offers (X-Stream-Protocol-Version, repeatable). */
export function offeredStreamProtocols(req: IncomingMessage): string[] {
  return (req.headersDistinct["x-stream-protocol-version"] ?? [])
    .flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter(Boolean);
}

/**
 * Serves a port-forward connection for `record` on `socket`, already answered
 * with 101; `head` is what the client sent after its request.
 */
export function runPortForward(socket: Duplex, head: Buffer, record: PodRecord): SpdySession {
  const session = new SpdySession(socket, head);
  const pairs = new Map<string, Pair>();
  const meta = record.pod.metadata;
  const podFullName = `${meta.name ?? ""}_${meta.namespace ?? ""}`;

  const requestIdOf = (stream: SpdyStream): string => {
    const id = stream.header("requestid");
    if (id) return id;
    // Clients older than the header: the error stream's id, or the data stream's less 2.
    return String(stream.header("streamtype") === "error" ? stream.id : stream.id - 2);
  };

  session.on("stream", (stream: SpdyStream) => {
    const invalid = invalidStream(stream);
    if (invalid) {
      stream.reset();
      return;
    }
    stream.reply();
    const requestId = requestIdOf(stream);
    let pair = pairs.get(requestId);
    if (!pair) {
      const created: Pair = {
        requestId,
        timer: setTimeout(() => {
          pairs.delete(requestId);
          created.error?.write(
            Buffer.from(
              `(conn=${podFullName}, request=${requestId}) timed out waiting for streams`,
            ),
          );
          created.error?.end();
          created.data?.reset();
        }, STREAM_CREATION_TIMEOUT_MS),
      };
      created.timer.unref();
      pair = created;
      pairs.set(requestId, pair);
    }
    const kind = stream.header("streamtype") === "error" ? "error" : "data";
    if (pair[kind]) {
      pair.error?.write(
        Buffer.from(
          `error processing stream for request ${requestId}: ${kind} stream already assigned`,
        ),
      );
      stream.reset();
      return;
    }
    pair[kind] = stream;
    if (pair.data && pair.error) {
      clearTimeout(pair.timer);
      pairs.delete(requestId);
      forward(record, podFullName, session, pair.data, pair.error);
    }
  });
  session.once("close", () => {
    for (const pair of pairs.values()) clearTimeout(pair.timer);
    pairs.clear();
  });
  return session;
}

/** Carries one forwarded connection between `data` and the Pod's `port`. */
function forward(
  record: PodRecord,
  podFullName: string,
  session: SpdySession,
  data: SpdyStream,
  error: SpdyStream,
): void {
  const port = Number(data.header("port"));
  const host = record.podIP;
  const conn: Socket = connect({ host, port });
  let connected = false;
  let reported = false;
  const done = () => {
    data.end();
    error.end();
  };
  const report = (message: string) => {
    if (reported) return;
    reported = true;
    error.write(
      Buffer.from(
        `error forwarding port ${port} to pod ${podFullName}, uid ${record.uid}: ${message}`,
      ),
    );
  };
  conn.setNoDelay(true);
  conn.once("connect", () => {
    connected = true;
  });
  conn.on("error", (err: NodeJS.ErrnoException) => {
    report(connected ? `${err.message}` : goDialError(err, host, port));
  });
  conn.once("close", done);
  conn.on("data", (chunk: Buffer) => {
    if (!data.write(chunk)) {
      conn.pause();
      session.once("drain", () => conn.resume());
    }
  });
  // The Pod's side ended what it sends: so does the stream.
  conn.once("end", () => data.end());
  data.on("data", (chunk: Buffer) => {
    if (!conn.destroyed) conn.write(chunk);
  });
  // The client ended what it sends (or the stream was reset): pass it on.
  data.once("end", () => {
    if (!conn.destroyed) conn.end();
  });
  data.once("close", () => {
    if (data.aborted) conn.destroy();
  });
  session.once("close", () => conn.destroy());
}
