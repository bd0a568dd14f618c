/**
 * The agent's authenticated endpoint, the kubelet's :10250: HTTPS with the
 * agent's serving certificate (serving-cert.ts), client certificates requested
 * and verified against the cluster's CA, and only the apiserver let in
 * (authenticate.ts). It serves GET /containerLogs/{namespace}/{pod}/{container}
 * (container-logs.ts), and upgrades (upgrade.ts): WebSockets to
 * /exec/{namespace}/{pod}/{container} (exec.ts) and
 * /attach/{namespace}/{pod}/{container} (attach.ts), SPDY to
 * /portForward/{namespace}/{pod} (port-forward.ts, spdy.ts).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import type { Duplex } from "node:stream";
import { containerOf, type PodRecord } from "../pods/index.ts";
import { checkCaller } from "./authenticate.ts";
import { LogRequestError, logOptions, serveContainerLog } from "./container-logs.ts";
import type { ExecContext, ExecSessions } from "./exec.ts";
import type { ServingCert } from "./serving-cert.ts";
import { serveUpgrade } from "./upgrade.ts";

export interface EndpointOptions {
  cert: ServingCert;
  /** PEM CAs whose client certificates are verified; none: every caller is refused. */
  clientCa: string | undefined;
  dataDir: string;
  /** The Pod record of namespace/name on this node, if it runs here. */
  pod(namespace: string, name: string): PodRecord | undefined;
  /** The environment and working directory of a running container of the Pod `uid`. */
  execContext(uid: string, container: string): ExecContext | undefined;
  /** The commands running for `kubectl exec`. */
  sessions: ExecSessions;
}

function plain(res: ServerResponse, code: number, text: string): void {
  if (res.headersSent) {
    if (!res.writableEnded) res.end();
    return;
  }
  res.writeHead(code, { "Content-Type": "text/plain; charset=utf-8" });
  res.end(`${text}\n`);
}

async function handle(
  opts: EndpointOptions,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const url = new URL(req.url ?? "/", "https://agent");
  const parts = url.pathname.split("/").filter(Boolean).map(decodeURIComponent);
  const isLogs = parts[0] === "containerLogs";
  const caller = opts.clientCa
    ? checkCaller(req, "proxy")
    : ({ ok: false, code: 401, message: "Unauthorized" } as const);
  if (!caller.ok) return plain(res, caller.code, caller.message);
  if (!isLogs || parts.length !== 4) return plain(res, 404, "404 page not found");
  if (req.method !== "GET") return plain(res, 405, "405: Method Not Allowed");
  const [, namespace, podName, container] = parts;
  const record = opts.pod(namespace, podName);
  if (!record) return plain(res, 404, `pod ${JSON.stringify(podName)} does not exist`);
  if (!containerOf(record, container)) {
    return plain(
      res,
      404,
      `container ${JSON.stringify(container)} not found in pod ${JSON.stringify(podName)}`,
    );
  }
  const logOpts = logOptions(url.searchParams);
  await serveContainerLog(res, opts.dataDir, record, container, logOpts, () =>
    containerOf(opts.pod(namespace, podName), container),
  );
}

/** Creates the endpoint's server (not yet listening). */
export function createEndpointServer(opts: EndpointOptions): Server {
  const server = createServer(
    {
      cert: opts.cert.cert,
      key: opts.cert.key,
      requestCert: true,
      rejectUnauthorized: false,
      ...(opts.clientCa ? { ca: opts.clientCa } : {}),
    },
    (req, res) => {
      handle(opts, req, res).catch((err: unknown) => {
        if (err instanceof LogRequestError) plain(res, err.code, err.message);
        else plain(res, 500, err instanceof Error ? err.message : String(err));
      });
    },
  );
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    serveUpgrade(opts, req, socket, head);
  });
  return server;
}
