/**
 * The endpoint's upgraded connections, as the kubelet serves them to the
 * apiserver: `/exec/NS/NAME/CONTAINER` (query `command`, repeated, and `input`,
 * `output`, `error`, `tty`) over a WebSocket in the channel protocol (exec.ts),
 * `/attach/NS/NAME/CONTAINER` (the same query without `command`) in the same
 * protocol (attach.ts), and `/portForward/NS/NAME` over SPDY/3.1
 * (port-forward.ts). SPDY upgrades to /exec and /attach are refused (kubectl 1.30
 * and later speak WebSockets for them).
 * Callers are checked as for logs (authenticate.ts); refusals are plain text, as
 * the kubelet's are, and the apiserver relays them as they are.
 */
import type { IncomingMessage } from "node:http";
import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import { type WebSocket, WebSocketServer } from "ws";
import type { PodRecord } from "../pods/index.ts";
import { attachTarget, runAttach } from "./attach.ts";
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
  /** The agent's data dir (where containers' logs and stdin pipes are). */
  dataDir: string;
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
  if ((kind === "exec" || kind === "attach") && parts.length === 4) {
    const at: StreamRequest = { opts, req, socket, head, namespace, podName, container };
    if (kind === "exec") serveExec(at, url.searchParams);
    else serveAttach(at, url.searchParams);
    return;
  }
  if (kind === "portForward" && parts.length === 3) {
    servePortForward(opts, req, socket, head, namespace, podName);
    return;
  }
  refuse(socket, 404, "404 page not found");
  return;
}

/** An exec or attach request: the connection and the container it names. */
interface StreamRequest {
  opts: UpgradeOptions;
  req: IncomingMessage;
  socket: Duplex;
  head: Buffer;
  namespace: string;
  podName: string;
  container: string;
}

/** The streams asked for, when at least one is (else refused). */
function wantedStreams(at: StreamRequest, query: URLSearchParams) {
  const flags = streamFlags(query);
  if (!flags.stdin && !flags.stdout && !flags.stderr) {
    refuse(at.socket, 400, "you must specify at least 1 of stdin, stdout, stderr");
    return undefined;
  }
  return flags;
}

/** The record of the Pod namespace/name, when it runs here (else refused). */
function podOf(
  opts: UpgradeOptions,
  socket: Duplex,
  namespace: string,
  name: string,
): PodRecord | undefined {
  const record = opts.pod(namespace, name);
  if (!record) refuse(socket, 404, "pod does not exist");
  return record;
}

function serveExec(at: StreamRequest, query: URLSearchParams): void {
  const flags = wantedStreams(at, query);
  if (!flags) return;
  const argv = query.getAll("command");
  if (argv.length === 0) {
    refuse(at.socket, 400, "you must specify at least one command for the container");
    return;
  }
  const record = podOf(at.opts, at.socket, at.namespace, at.podName);
  if (!record) return;
  const context = at.opts.execContext(record.uid, at.container);
  if (!context) {
    refuse(at.socket, 500, `container not found (${JSON.stringify(at.container)})`);
    return;
  }
  const spec: ExecSpec = { argv, ...flags, ...context };
  acceptChannels(at, "exec", (ws) => runExec(ws, spec, at.opts.sessions, record.uid));
}

/** Completes a WebSocket in the channel protocol for exec or attach; refuses SPDY and other protocols. */
function acceptChannels(
  at: StreamRequest,
  what: "exec" | "attach",
  open: (ws: WebSocket) => void,
): void {
  const { req, socket } = at;
  if (!isWebSocket(req)) {
    refuse(
      socket,
      400,
      `SPDY is not served by this node: ${what} needs a WebSocket (kubectl 1.30 and later)`,
    );
    return;
  }
  if (!EXEC_PROTOCOLS.some((p) => offered(req).includes(p))) {
    refuse(
      socket,
      400,
      `unable to upgrade: unable to negotiate a protocol: the client offers [${offered(req).join(" ")}], this node speaks [${EXEC_PROTOCOLS.join(" ")}]`,
    );
    return;
  }
  execServer.handleUpgrade(req, socket, at.head, open);
}

/** The streams an exec or attach asks for (the kubelet's query); a terminal's stderr is the terminal. */
function streamFlags(query: URLSearchParams): {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
} {
  const flags = {
    stdin: flag(query, "input"),
    stdout: flag(query, "output"),
    stderr: flag(query, "error"),
    tty: flag(query, "tty"),
  };
  if (flags.tty) flags.stderr = false;
  return flags;
}

function serveAttach(at: StreamRequest, query: URLSearchParams): void {
  const flags = wantedStreams(at, query);
  if (!flags) return;
  const record = podOf(at.opts, at.socket, at.namespace, at.podName);
  if (!record) return;
  const target = attachTarget(at.opts.dataDir, record, at.container, () =>
    at.opts.pod(at.namespace, at.podName),
  );
  if (!target) {
    refuse(at.socket, 500, `container ${JSON.stringify(at.container)} is not running`);
    return;
  }
  acceptChannels(at, "attach", (ws) => runAttach(ws, flags, target));
}

function servePortForward(
  opts: UpgradeOptions,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  namespace: string,
  podName: string,
): void {
  const record = podOf(opts, socket, namespace, podName);
  if (!record) return;
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
