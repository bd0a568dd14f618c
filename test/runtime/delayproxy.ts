/**
 * An HTTP proxy that delays what watches deliver: every chunk of a watch
 * response reaches the client `delayMs` late, while other requests pass at
 * once. It makes a client's cache lag behind its own writes, as a busy server
 * or a slow network does.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface DelayProxy {
  url: string;
  close(): Promise<void>;
}

export async function startDelayProxy(target: string, delayMs: number): Promise<DelayProxy> {
  const upstream = new URL(target);
  const agent = new http.Agent({ keepAlive: true });
  const server = http.createServer((req, res) => {
    const isWatch = /[?&]watch=(true|1)/.test(req.url ?? "");
    const out = http.request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
        agent,
      },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        if (!isWatch) {
          up.pipe(res);
          return;
        }
        up.on("data", (chunk: Buffer) => setTimeout(() => res.write(chunk), delayMs));
        up.on("end", () => setTimeout(() => res.end(), delayMs));
      },
    );
    out.on("error", () => res.destroy());
    res.on("close", () => out.destroy());
    req.pipe(out);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
        agent.destroy();
      }),
  };
}
