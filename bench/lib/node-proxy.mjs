// The ceiling baseline of bench:gateway: the least a reverse proxy on Node's `http`
// does per request, and nothing else (no routing table, no retries, no metrics).
// Round-robin over the backends given as arguments (host:port), keep-alive to them,
// X-Forwarded-For/-Host/-Proto set, bodies piped both ways. Prints "listening on
// HOST:PORT" once it listens on 127.0.0.1 (an ephemeral port).
import { Agent, createServer, request } from "node:http";

const backends = process.argv.slice(2).map((a) => {
  const i = a.lastIndexOf(":");
  return { host: a.slice(0, i), port: Number(a.slice(i + 1)) };
});
const agent = new Agent({ keepAlive: true, maxSockets: 256 });
let next = 0;

const server = createServer((req, res) => {
  const b = backends[next++ % backends.length];
  const headers = {
    ...req.headers,
    "x-forwarded-for": req.socket.remoteAddress ?? "",
    "x-forwarded-host": req.headers.host ?? "",
    "x-forwarded-proto": "http",
  };
  const up = request(
    { host: b.host, port: b.port, method: req.method, path: req.url, headers, agent },
    (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    },
  );
  up.on("error", () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  req.pipe(up);
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  const a = server.address();
  process.stdout.write(`listening on 127.0.0.1:${typeof a === "object" && a ? a.port : 0}\n`);
});
process.on("SIGTERM", () => process.exit(0));
