/**
 * An HTTP proxy that delays what watches deliver: every chunk of a watch
 * response reaches the client `delayMs` late, while other requests pass at
 * once. It makes a client's cache lag behind its own writes, as a busy server
 * or a slow network does.
 */
import http from "node:http";
import { forward, type Listening, listenHttp } from "../helpers/http-proxy.ts";

export async function startDelayProxy(target: string, delayMs: number): Promise<Listening> {
  const upstream = new URL(target);
  const agent = new http.Agent({ keepAlive: true });
  return listenHttp(
    (req, res) => {
      const isWatch = /[?&]watch=(true|1)/.test(req.url ?? "");
      forward(req, res, upstream, {
        agent,
        onResponse: (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          if (!isWatch) {
            up.pipe(res);
            return;
          }
          up.on("data", (chunk: Buffer) => setTimeout(() => res.write(chunk), delayMs));
          up.on("end", () => setTimeout(() => res.end(), delayMs));
        },
      });
    },
    () => agent.destroy(),
  );
}
