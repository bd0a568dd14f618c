/**
 * A connect subresource (`pods/exec`, `pods/attach`, `pods/portforward`), as
 * kube-apiserver serves it: the request must be an upgrade (a WebSocket, or SPDY
 * from older clients; anything else is 400 `Upgrade request required`), the
 * object is read and its definition says which node and path serve it
 * (NodeConnectSubresource.locate), and the upgrade is carried to that node's
 * agent over HTTPS with the apiserver's node client certificate (found as for
 * `pods/log`, see node-stream.ts). The agent's 101 answer is relayed and from
 * then on the two connections are joined byte for byte until either ends; an
 * answer other than 101 is relayed as the agent gave it (kubectl then shows
 * `unable to upgrade connection: ...`), as kube-apiserver's upgrade-aware proxy
 * does. An agent that cannot be reached is a 500 `error dialing backend: ...`.
 * A WebSocket that tunnels SPDY (kubectl's port-forward) is the exception: the
 * node is asked for SPDY and the frames are carried in and out of WebSocket
 * messages (node-tunnel.ts).
 *
 * The server hands upgrade requests to the ordinary request path with an answer
 * written on the raw connection (markUpgrade); only this module takes the
 * connection over.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { request as httpsRequest } from "node:https";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { errors, failure } from "@setpoint/api";
import type { NodeConnectSubresource } from "../../registry/types.ts";
import type { RequestScope } from "./context.ts";
import {
  agentPath,
  dialError,
  NODE_CONNECT_TIMEOUT_MS,
  type NodeClient,
  nodeEndpoint,
  readParent,
  requireNodeClient,
} from "./node-stream.ts";
import { joinSpdyTunnel, spdyUpgradeHeaders, tunneledSpdyProtocols } from "./node-tunnel.ts";

interface Upgrade {
  socket: Duplex;
  head: Buffer;
  /** Joined to an agent's connection: the answer is no longer written through `res`. */
  taken: boolean;
}

const upgrades = new WeakMap<IncomingMessage, Upgrade>();

/**
 * Marks `req` as an upgrade request whose connection is `socket` (with `head`,
 * what came after its headers); `res` must be written on that socket. The socket
 * is ended once `res` is, unless the request took it over.
 */
export function markUpgrade(
  req: IncomingMessage,
  res: ServerResponse,
  socket: Duplex,
  head: Buffer,
): void {
  const up: Upgrade = { socket, head, taken: false };
  upgrades.set(req, up);
  res.once("finish", () => {
    if (!up.taken) socket.end();
  });
}

/** Whether `req` came as an upgrade (a WebSocket or SPDY connection). */
export function isUpgrade(req: IncomingMessage): boolean {
  return upgrades.has(req);
}

/** Request headers carried to the agent: those of the upgrade and its protocols. */
const CARRIED = [
  "upgrade",
  "sec-websocket-key",
  "sec-websocket-version",
  "sec-websocket-protocol",
  "sec-websocket-extensions",
  "x-stream-protocol-version",
];

/** The agent's 101 answer as it goes to the client. */
function switchingProtocols(answer: IncomingMessage): string {
  const lines = ["HTTP/1.1 101 Switching Protocols"];
  const raw = answer.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) lines.push(`${raw[i]}: ${raw[i + 1]}`);
  return `${lines.join("\r\n")}\r\n\r\n`;
}

/** Serves a connect subresource of the object `scope` names. */
export async function serveNodeConnect(
  scope: RequestScope,
  sub: NodeConnectSubresource,
  client: NodeClient | undefined,
): Promise<void> {
  const { req, res } = scope;
  const obj = await readParent(scope);
  const location = sub.locate(obj, scope.query.params);
  const up = upgrades.get(req);
  if (!up) throw errors.badRequest("Upgrade request required");
  requireNodeClient(client);
  const { host, port } = await nodeEndpoint(scope, location.node);
  const path = agentPath(location);
  // SPDY tunneled through a WebSocket goes to the node as a SPDY upgrade.
  const tunneled = sub.spdyOverWebSocket ? tunneledSpdyProtocols(req) : undefined;
  let headers: Record<string, string | string[]> = { connection: "Upgrade" };
  if (tunneled) headers = spdyUpgradeHeaders(tunneled);
  else {
    for (const name of CARRIED) {
      const values = req.headersDistinct[name];
      if (values && values.length > 0) headers[name] = values.length === 1 ? values[0] : values;
    }
  }
  await new Promise<void>((done, fail) => {
    let answered = false;
    const upstream = httpsRequest({
      host,
      port,
      path,
      method: tunneled ? "POST" : (req.method ?? "GET"),
      cert: client.cert,
      key: client.key,
      rejectUnauthorized: false,
      agent: false,
      timeout: NODE_CONNECT_TIMEOUT_MS,
      headers,
    });
    const clientGone = () => {
      if (!answered) upstream.destroy();
    };
    up.socket.once("close", clientGone);
    upstream.on("timeout", () => {
      if (!answered) upstream.destroy(Object.assign(new Error("timeout"), { code: "ETIMEDOUT" }));
    });
    upstream.on("error", (err: NodeJS.ErrnoException) => {
      if (answered) return;
      answered = true;
      fail(failure(500, "", `error dialing backend: ${dialError(err, host, port)}`));
    });
    upstream.on("upgrade", (answer, agentSocket: Socket, agentHead: Buffer) => {
      answered = true;
      up.taken = true;
      up.socket.off("close", clientGone);
      const clientSocket = up.socket;
      agentSocket.setTimeout(0);
      if (clientSocket.destroyed) {
        agentSocket.destroy();
        done();
        return;
      }
      if (tunneled) {
        joinSpdyTunnel(req, clientSocket, up.head, answer, agentSocket, agentHead, done);
        return;
      }
      clientSocket.write(switchingProtocols(answer));
      if (agentHead.length > 0) clientSocket.write(agentHead);
      if (up.head.length > 0) agentSocket.write(up.head);
      const end = () => {
        clientSocket.destroy();
        agentSocket.destroy();
        done();
      };
      clientSocket.on("error", end);
      agentSocket.on("error", end);
      clientSocket.once("close", end);
      agentSocket.once("close", end);
      clientSocket.pipe(agentSocket);
      agentSocket.pipe(clientSocket);
    });
    upstream.on("response", (answer) => {
      // The agent refused the upgrade: its answer goes to the client as it is.
      answered = true;
      up.socket.off("close", clientGone);
      const carried: Record<string, string> = {};
      const type = answer.headers["content-type"];
      if (type) carried["Content-Type"] = type;
      res.writeHead(answer.statusCode ?? 500, carried);
      answer.pipe(res);
      answer.on("end", () => done());
      answer.on("error", () => {
        if (!res.writableEnded) res.end();
        done();
      });
    });
    upstream.end();
  });
}
