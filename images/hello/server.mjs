// The `hello` demo image: an HTTP server answering with its Pod's name and its
// version, so a rolling update can be watched from outside. It listens on the Pod's
// address (SETPOINT_POD_IP, set by the agent) and $PORT; the version is $VERSION, or
// else the tag of the image the Pod names (SETPOINT_IMAGE, e.g. hello:2.0 → 2.0).
// GET /healthz answers "ok" for probes. SIGTERM stops accepting, lets the requests
// in flight finish (closing idle keep-alive connections at once) and exits 0.
import { createServer } from "node:http";

const host = process.env.SETPOINT_POD_IP || "127.0.0.1";
const port = Number(process.env.PORT || 8080);
const pod = process.env.POD_NAME || process.env.HOSTNAME || "unknown";
const image = process.env.SETPOINT_IMAGE || "hello:latest";
const tag = image.includes(":") ? image.slice(image.lastIndexOf(":") + 1) : "latest";
const version = process.env.VERSION || tag;

const server = createServer((req, res) => {
  if (req.url === "/healthz") {
    res.end("ok\n");
    return;
  }
  res.setHeader("content-type", "text/plain");
  res.end(`hello from ${pod} (version ${version})\n`);
});
server.listen(port, host, () => {
  process.stdout.write(`hello ${version} serving on ${host}:${port} as ${pod}\n`);
});
process.on("SIGTERM", () => {
  server.close(() => process.exit(0));
  server.closeIdleConnections();
});
