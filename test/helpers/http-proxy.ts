/**
 * What the tests' HTTP proxies in front of a real apiserver share: listening on a
 * free 127.0.0.1 port (closed with every open connection), and forwarding a request
 * upstream as it came (method, path, headers, streamed body). Each proxy adds its
 * own misbehaviour (faults, delays, recording) around these.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

/** An HTTP server listening on 127.0.0.1. */
export interface Listening {
  /** http://127.0.0.1:<port> */
  readonly url: string;
  readonly server: http.Server;
  /** Cuts every open connection (watches included), runs `onClose`, and stops listening. */
  close(): Promise<void>;
}

/** Serves `handler` on a free 127.0.0.1 port; `onClose` runs when it is closed. */
export async function listenHttp(
  handler: http.RequestListener,
  onClose?: () => void,
): Promise<Listening> {
  const server = http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close: async () => {
      server.closeAllConnections();
      onClose?.();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

export interface ForwardOptions {
  /** Agent of the upstream request (default Node's global agent). */
  agent?: http.Agent;
  /** Headers sent upstream instead of the request's. */
  headers?: http.OutgoingHttpHeaders;
  /** Handles the upstream answer; by default its status, headers and body are relayed as they come. */
  onResponse?: (up: http.IncomingMessage) => void;
}

/**
 * Sends `req` on to `upstream` (same method, path and headers, the body streamed).
 * The upstream request is dropped when the client's response closes, and the
 * client's connection when the upstream request fails.
 */
export function forward(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  upstream: URL,
  opts: ForwardOptions = {},
): void {
  const relay = (up: http.IncomingMessage) => {
    res.writeHead(up.statusCode ?? 502, up.headers);
    up.pipe(res);
  };
  const out = http.request(
    {
      host: upstream.hostname,
      port: upstream.port,
      method: req.method,
      path: req.url,
      headers: opts.headers ?? req.headers,
      agent: opts.agent,
    },
    opts.onResponse ?? relay,
  );
  out.on("error", () => res.destroy());
  res.on("close", () => out.destroy());
  req.pipe(out);
}
