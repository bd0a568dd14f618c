/**
 * The endpoint's upgraded connections, as the kubelet serves them to the
 * apiserver: `/exec/NS/NAME/CONTAINER` (query `command`, repeated, and `input`,
 * `output`, `error`, `tty`) over a WebSocket in the channel protocol (exec.ts),
 * and `/portForward/NS/NAME` over SPDY/3.1 (port-forward.ts). `/attach` is refused with a 400
 * that says why: a container's output goes to its log files and it reads no input,
 * so there is nothing to attach to (`kubectl logs -f` follows its output). SPDY
 * upgrades to /exec are refused too (kubectl 1.30 and later speak WebSockets).
 * Callers are checked as for logs (authenticate.ts); refusals are plain text, as
 * the kubelet's are, and the apiserver relays them as they are.
 */
import type { IncomingMessage } from "node:http";
import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer } from "ws";
import type { PodRecord } from "../pods/index.ts";
import { checkCaller } from "./authenticate.ts";
import {
  EXEC_PROTOCOLS,
  type ExecContext,
  type ExecSessions,
  type ExecSpec,
  runExec,
} from "./exec.ts";
import {
  offeredStreamProtocols,
  PORT_FORWARD_PROTOCOL,
  runPortForward,
  spdyUpgradeAnswer,
} from "./port-forward.ts";

/** What upgrades need of the endpoint's options (server.ts's EndpointOptions). */
export interface UpgradeOptions {
  clientCa: string | undefined;
  pod(namespace: string, name: string): PodRecord | undefined;
  execContext(uid: string, container: string): ExecContext | undefined;
  sessions: ExecSessions;
}

const execServer = new WebSocketServer({
  noServer: true,
  perMessageDeflate: false,
  handleProtocols: (protocols) => EXEC_PROTOCOLS.find((p) => protocols.has(p)) ?? false,
});

/** Answers an upgrade request with `code` and `text`, and closes the connection. */
function refuse(socket: Duplex, code: number, text: string): void {
  const body = Buffer.from(`${text}\n`);
  socket.end(
    `HTTP/1.1 ${code} ${STATUS_CODES[code] ?? ""}\r\n` +
      "Content-Type: text/plain; charset=utf-8\r\n" +
      `Content-Length: ${body.length}\r\n` +
      "Connection: close\r\n\r\n" +
      body.toString("utf8"),
  );
}

const GO_TRUE = new Set(["1", "t", "T", "TRUE", "true", "True"]);

function flag(query: URLSearchParams, name: string): boolean {
  return GO_TRUE.has(query.get(name) ?? "");
}

/** The protocols a WebSocket request offers. */
function offered(req: IncomingMessage): string[] {
  return (req.headers["sec-websocket-protocol"] ?? "")
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean);
}

function isWebSocket(req: IncomingMessage): boolean {
  return (req.headers.upgrade ?? "").toLowerCase() === "websocket";
}

export function serveUpgrade(
  opts: UpgradeOptions,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): void {
  socket.on("error", () => socket.destroy());
  opts.sessions.track(socket);
  const url = new URL(req.url ?? "/", "https://agent");
  let parts: string[];
  try {
    parts = url.pathname.split("/").filter(Boolean).map(decodeURIComponent);
  } catch {
    refuse(socket, 400, "invalid path");
    return;
  }
  const caller = opts.clientCa
    ? checkCaller(req, "proxy")
    : ({ ok: false, code: 401, message: "Unauthorized" } as const);
  if (!caller.ok) {
    refuse(socket, caller.code, caller.message);
    return;
  }
  const [kind, namespace, podName, container] = parts;
  if (kind === "exec" && parts.length === 4) {
    serveExec(opts, req, socket, head, url.searchParams, namespace, podName, container);
    return;
  }
  if (kind === "portForward" && parts.length === 3) {
    servePortForward(opts, req, socket, head, namespace, podName);
    return;
  }
  if (kind === "attach" && parts.length === 4) {
    refuse(
      socket,
      400,
      "attach is not supported by this node: a container's output goes to its log files and it reads no input, so there is nothing to attach to (kubectl logs -f follows its output)",
    );
    return;
  }
  refuse(socket, 404, "404 page not found");
  return;
}

function serveExec(
  opts: UpgradeOptions,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  query: URLSearchParams,
  namespace: string,
  podName: string,
  container: string,
): void {
  const spec: Omit<ExecSpec, "env" | "cwd"> = {
    argv: query.getAll("command"),
    stdin: flag(query, "input"),
    stdout: flag(query, "output"),
    stderr: flag(query, "error"),
    tty: flag(query, "tty"),
  };
  if (!spec.stdin && !spec.stdout && !spec.stderr) {
    refuse(socket, 400, "you must specify at least 1 of stdin, stdout, stderr");
    return;
  }
  // With a terminal, stderr is the terminal.
  if (spec.tty) spec.stderr = false;
  if (spec.argv.length === 0) {
    refuse(socket, 400, "you must specify at least one command for the container");
    return;
  }
  const record = opts.pod(namespace, podName);
  if (!record) {
    refuse(socket, 404, "pod does not exist");
    return;
  }
  const context = opts.execContext(record.uid, container);
  if (!context) {
    refuse(socket, 500, `container not found (${JSON.stringify(container)})`);
    return;
  }
  if (!isWebSocket(req)) {
    refuse(
      socket,
      400,
      "SPDY is not served by this node: exec needs a WebSocket (kubectl 1.30 and later)",
    );
    return;
  }
  const protocol = EXEC_PROTOCOLS.find((p) => offered(req).includes(p));
  if (!protocol) {
    refuse(
      socket,
      400,
      `unable to upgrade: unable to negotiate a protocol: the client offers [${offered(req).join(" ")}], this node speaks [${EXEC_PROTOCOLS.join(" ")}]`,
    );
    return;
  }
  execServer.handleUpgrade(req, socket, head, (ws) => {
    runExec(ws, { ...spec, ...context }, opts.sessions, record.uid);
  });
}

function servePortForward(
  opts: UpgradeOptions,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  namespace: string,
  podName: string,
): void {
  const record = opts.pod(namespace, podName);
  if (!record) {
    refuse(socket, 404, "pod does not exist");
    return;
  }
  if ((req.headers.upgrade ?? "").toLowerCase() !== "spdy/3.1") {
    refuse(
      socket,
      400,
      "port forwarding is served over SPDY/3.1 by this node (the apiserver carries kubectl's WebSocket tunnel to it as SPDY)",
    );
    return;
  }
  const offers = offeredStreamProtocols(req);
  if (offers.length === 0) {
    refuse(socket, 400, "unable to upgrade: X-Stream-Protocol-Version is required");
    return;
  }
  if (!offers.includes(PORT_FORWARD_PROTOCOL)) {
    refuse(
      socket,
      403,
      `unable to upgrade: unable to negotiate protocol: client supports [${offers.join(" ")}], server accepts [${PORT_FORWARD_PROTOCOL}]`,
    );
    return;
  }
  socket.write(spdyUpgradeAnswer(PORT_FORWARD_PROTOCOL));
  runPortForward(socket, head, record);
}
