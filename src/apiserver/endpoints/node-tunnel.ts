/**
 * SPDY tunneled through a WebSocket, as kube-apiserver's tunneling handler serves
 * `pods/portforward` to kubectl 1.31 and later: the client asks for a WebSocket
 * offering subprotocols `SPDY/3.1+<protocol>` (`SPDY/3.1+portforward.k8s.io`)
 * and then writes SPDY/3.1 frames as binary messages. The node is asked for a
 * plain SPDY upgrade instead (POST, `Upgrade: SPDY/3.1`, one
 * `X-Stream-Protocol-Version` per offered protocol, the prefix taken off); only
 * once it agreed (101 with `Upgrade: SPDY/3.1`) is the client's WebSocket
 * accepted, with the protocol the node chose, prefixed again. From then on each
 * binary message's bytes go to the node's connection as they are, and the
 * node's bytes come back as binary messages: the SPDY frames pass through
 * untouched. An answer from the node other than 101 reaches the client as the
 * node gave it (node-connect.ts).
 */
import type { IncomingMessage } from "node:http";
import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer } from "ws";

/** The prefix of a tunneled SPDY protocol among a WebSocket's subprotocols. */
export const SPDY_TUNNEL_PREFIX = "SPDY/3.1+";
/** Messages sent to the client and not yet written, beyond which the node's side is paused. */
const MAX_PENDING_SENDS = 32;

function offeredSubprotocols(req: IncomingMessage): string[] {
  return (req.headers["sec-websocket-protocol"] ?? "")
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean);
}

/**
 * The SPDY protocols a WebSocket request tunnels (`SPDY/3.1+...k8s.io`, prefix
 * taken off), or undefined when it is not such a request.
 */
export function tunneledSpdyProtocols(req: IncomingMessage): string[] | undefined {
  if ((req.headers.upgrade ?? "").toLowerCase() !== "websocket") return undefined;
  const protocols = offeredSubprotocols(req)
    .filter((p) => p.startsWith(SPDY_TUNNEL_PREFIX) && p.endsWith(".k8s.io"))
    .map((p) => p.slice(SPDY_TUNNEL_PREFIX.length));
  return protocols.length > 0 ? protocols : undefined;
}

/** The headers of the SPDY upgrade asked of the node for a tunnel of `protocols`. */
export function spdyUpgradeHeaders(protocols: string[]): Record<string, string | string[]> {
  return { connection: "Upgrade", upgrade: "SPDY/3.1", "x-stream-protocol-version": protocols };
}

function plainAnswer(socket: Duplex, code: number, text: string): void {
  const body = Buffer.from(`${text}\n`);
  socket.end(
    `HTTP/1.1 ${code} ${STATUS_CODES[code] ?? ""}\r\n` +
      "Content-Type: text/plain; charset=utf-8\r\n" +
      "X-Content-Type-Options: nosniff\r\n" +
      `Content-Length: ${body.length}\r\n` +
      "Connection: close\r\n\r\n" +
      body.toString("utf8"),
  );
}

/**
 * Joins the client's WebSocket (`req` on `clientSocket`, `clientHead` read past
 * its headers) to the node's SPDY connection (`answer`, the node's 101, on
 * `nodeSocket` with `nodeHead`). `done` is called once both are closed.
 */
export function joinSpdyTunnel(
  req: IncomingMessage,
  clientSocket: Duplex,
  clientHead: Buffer,
  answer: IncomingMessage,
  nodeSocket: Duplex,
  nodeHead: Buffer,
  done: () => void,
): void {
  const connection = String(answer.headers.connection ?? "").toLowerCase();
  const upgrade = String(answer.headers.upgrade ?? "").toLowerCase();
  if (!connection.includes("upgrade") || !upgrade.includes("spdy/3.1")) {
    nodeSocket.destroy();
    plainAnswer(clientSocket, 500, "unable to upgrade: missing upgrade headers in response");
    done();
    return;
  }
  const chosen = String(answer.headers["x-stream-protocol-version"] ?? "").trim();
  const wanted = chosen ? `${SPDY_TUNNEL_PREFIX}${chosen}` : "";
  // `/` is not allowed in a token, so the ws library refuses these subprotocols:
  // the one agreed is answered here instead of by its negotiation.
  const offered = offeredSubprotocols(req);
  delete req.headers["sec-websocket-protocol"];
  const server = new WebSocketServer({ noServer: true, perMessageDeflate: false });
  if (wanted && offered.includes(wanted)) {
    server.on("headers", (lines: string[]) => {
      lines.push(`Sec-WebSocket-Protocol: ${wanted}`);
    });
  }
  let finished = false;
  const end = () => {
    if (finished) return;
    finished = true;
    nodeSocket.destroy();
    clientSocket.destroy();
    done();
  };
  nodeSocket.on("error", end);
  nodeSocket.once("close", end);
  clientSocket.once("close", end);
  server.handleUpgrade(req, clientSocket, clientHead, (ws) => {
    let pending = 0;
    const send = (chunk: Buffer) => {
      if (ws.readyState !== ws.OPEN) return;
      pending++;
      ws.send(chunk, { binary: true }, () => {
        pending--;
        if (pending < MAX_PENDING_SENDS / 4 && nodeSocket.isPaused()) nodeSocket.resume();
      });
      if (pending >= MAX_PENDING_SENDS) nodeSocket.pause();
    };
    if (nodeHead.length > 0) send(nodeHead);
    nodeSocket.on("data", send);
    nodeSocket.once("end", () => {
      if (ws.readyState === ws.OPEN) ws.close(1000);
    });
    ws.on("message", (data: Buffer, isBinary: boolean) => {
      if (!isBinary) {
        ws.close(1003, "invalid message type received");
        return;
      }
      if (!nodeSocket.write(data)) {
        ws.pause();
        nodeSocket.once("drain", () => ws.resume());
      }
    });
    ws.once("close", () => {
      // What was written still reaches the node; then its connection ends.
      nodeSocket.end();
      setTimeout(end, 1_000).unref();
    });
    ws.on("error", end);
  });
}
