/**
 * An HTTP proxy that forwards every request to a plain-http apiserver and records
 * what the client sent (method, URL, Content-Type): to see what kubectl puts on the
 * wire, e.g. protobuf bodies.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface RecordedRequest {
  method: string;
  url: string;
  contentType: string | undefined;
}

export interface RecordingProxy {
  readonly url: string;
  readonly requests: RecordedRequest[];
  close(): Promise<void>;
}

/** Starts a proxy on a free 127.0.0.1 port forwarding to `target` (an http:// URL). */
export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const upstream = new URL(target);
  const requests: RecordedRequest[] = [];
  const server = http.createServer((req, res) => {
    requests.push({
      method: req.method ?? "",
      url: req.url ?? "",
      contentType: req.headers["content-type"],
    });
    const out = http.request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
      },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    out.on("error", () => res.destroy());
    res.on("close", () => out.destroy());
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
