/**
 * The request path: matches a request against the current compiled table (one
 * reference, swapped whole), picks an endpoint round-robin among those not
 * ejected, and forwards over keep-alive pools, streaming both bodies. Nothing
 * here calls the apiserver.
 *
 * - A connect failure (refused, reset before a response, unreachable, connect
 *   timeout) ejects the endpoint for a while (doubling on each consecutive
 *   ejection, up to a cap) and retries on another endpoint: any method when the
 *   request body was never sent, idempotent methods without a body otherwise.
 *   When every endpoint is ejected they are all tried anyway.
 * - 404 when no route matches, 503 when the backend has no endpoint (or there is
 *   no table yet), 502 when every attempt failed.
 * - WebSocket (and other) upgrades are passed through, retried the same way.
 * - X-Forwarded-For/Proto/Host/Port are set; hop-by-hop headers are dropped.
 */
import {
  Agent,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  request,
  type ServerResponse,
} from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { Logger } from "@setpoint/runtime";
import { EndpointPicker, endpointId } from "../dataplane/index.ts";
import type { GatewayMetrics } from "./metrics.ts";
import type { CompiledTable, Endpoint } from "./table.ts";

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);
const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"]);
const CONNECT_ERRORS = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ETIMEDOUT",
  "EPIPE",
  "ECONNABORTED",
]);

export interface ReverseProxyOptions {
  logger: Logger;
  metrics: GatewayMetrics;
  /** Base ejection time of a failing endpoint, ms (default 5000; doubles, up to 60 s). */
  ejectMs?: number;
  /** Connect timeout to an endpoint, ms (default 3000). */
  connectTimeoutMs?: number;
  /** Attempts per request (default 3). */
  attempts?: number;
  /** Log every request (default true). */
  accessLog?: boolean;
}

export class ReverseProxy {
  table: CompiledTable | undefined;
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64 });
  private readonly picker: EndpointPicker;
  private readonly connectTimeoutMs: number;
  private readonly attempts: number;
  private readonly accessLog: boolean;
  /** Requests and upgrades being served. */
  inFlight = 0;
  /** Shutting down: every response closes its connection. */
  draining = false;

  constructor(private readonly opts: ReverseProxyOptions) {
    this.picker = new EndpointPicker(opts.ejectMs ?? 5000);
    this.connectTimeoutMs = opts.connectTimeoutMs ?? 3000;
    this.attempts = opts.attempts ?? 3;
    this.accessLog = opts.accessLog ?? true;
  }

  close(): void {
    this.agent.destroy();
  }

  /** The next endpoint of `backend` not in `tried`: not ejected if any such, else any. */
  private pick(backend: string, eps: Endpoint[], tried: Set<string>): Endpoint | undefined {
    return this.picker.pick(backend, eps, tried);
  }

  private fail(ep: Endpoint, backend: string, err: Error): void {
    const ms = this.picker.fail(ep);
    this.opts.metrics.ejections.inc({ backend });
    this.opts.logger.warn(
      { backend, endpoint: endpointId(ep), err: err.message, ejectMs: ms },
      "endpoint failed; ejected",
    );
  }

  private ok(ep: Endpoint): void {
    this.picker.ok(ep);
  }

  private route(req: IncomingMessage) {
    const table = this.table;
    if (!table) return { status: 503 as const, why: "no route table yet" };
    const host = hostOf(req);
    const path = (req.url ?? "/").split("?", 1)[0];
    const m = table.match(host, path);
    if (!m) return { status: 404 as const, why: "no route" };
    const eps = table.table.backends[m.backend] ?? [];
    if (eps.length === 0) return { status: 503 as const, why: "no endpoint", ...m };
    return { status: 0 as const, eps, ...m };
  }

  private forwardedHeaders(req: IncomingMessage, tls: boolean): OutgoingHttpHeaders {
    const out: OutgoingHttpHeaders = {};
    const connTokens = new Set(
      String(req.headers.connection ?? "")
        .toLowerCase()
        .split(",")
        .map((s) => s.trim()),
    );
    for (const [k, v] of Object.entries(req.headers)) {
      if (v === undefined || HOP_BY_HOP.has(k) || connTokens.has(k)) continue;
      out[k] = v;
    }
    const remote = req.socket.remoteAddress ?? "";
    const prior = req.headers["x-forwarded-for"];
    out["x-forwarded-for"] = prior ? `${prior}, ${remote}` : remote;
    out["x-forwarded-proto"] = tls ? "https" : "http";
    out["x-forwarded-host"] = req.headers.host ?? "";
    out["x-forwarded-port"] = String(req.socket.localPort ?? "");
    return out;
  }

  /** Serves one HTTP request. */
  handle(req: IncomingMessage, res: ServerResponse, tls: boolean): void {
    const started = process.hrtime.bigint();
    this.inFlight++;
    if (this.draining) res.setHeader("connection", "close");
    let endpoint = "";
    const r = this.route(req);
    const ingress = "ingress" in r ? (r.ingress ?? "") : "";
    const backend = "backend" in r ? (r.backend ?? "") : "";
    res.once("close", () => {
      this.inFlight--;
      const secs = Number(process.hrtime.bigint() - started) / 1e9;
      const code = String(res.statusCode);
      this.opts.metrics.requests.inc({ ingress, backend, code });
      this.opts.metrics.duration.observe({ ingress, backend }, secs);
      if (this.accessLog) {
        this.opts.logger.info(
          {
            method: req.method,
            host: req.headers.host,
            path: req.url,
            status: res.statusCode,
            ingress,
            backend,
            endpoint,
            remote: req.socket.remoteAddress,
            ms: Math.round(secs * 1e6) / 1e3,
          },
          "request",
        );
      }
    });
    if (r.status !== 0) {
      res.writeHead(r.status, { "content-type": "text/plain; charset=utf-8" });
      res.end(`${r.status === 404 ? "404 Not Found" : "503 Service Unavailable"}: ${r.why}\n`);
      return;
    }
    const headers = this.forwardedHeaders(req, tls);
    const noBody =
      !req.headers["transfer-encoding"] &&
      (req.headers["content-length"] === undefined || req.headers["content-length"] === "0");
    const retryAfterSend = IDEMPOTENT.has(req.method ?? "") && noBody;
    const tried = new Set<string>();
    let bodySent = false;
    const attempt = (n: number): void => {
      const ep = this.pick(r.backend, r.eps, tried);
      if (!ep) {
        badGateway(res);
        return;
      }
      const id = `${ep.ip}:${ep.port}`;
      tried.add(id);
      endpoint = id;
      let answered = false;
      const up = request({
        host: ep.ip,
        port: ep.port,
        method: req.method,
        path: req.url,
        headers,
        agent: this.agent,
      });
      const onConnected = () => {
        if (noBody) up.end();
        else {
          bodySent = true;
          req.pipe(up);
        }
      };
      up.once("socket", (s: Socket) => {
        if (!s.connecting) {
          onConnected();
          return;
        }
        const t = setTimeout(() => {
          const e = new Error(`connect to ${id} timed out`) as NodeJS.ErrnoException;
          e.code = "ETIMEDOUT";
          up.destroy(e);
        }, this.connectTimeoutMs);
        s.once("connect", () => {
          clearTimeout(t);
          onConnected();
        });
        s.once("close", () => clearTimeout(t));
      });
      up.once("response", (ures) => {
        answered = true;
        this.ok(ep);
        const out: OutgoingHttpHeaders = {};
        for (const [k, v] of Object.entries(ures.headers)) {
          if (v !== undefined && !HOP_BY_HOP.has(k)) out[k] = v;
        }
        res.writeHead(ures.statusCode ?? 502, ures.statusMessage, out);
        ures.pipe(res);
        ures.once("error", () => res.destroy());
      });
      up.once("error", (err: NodeJS.ErrnoException) => {
        if (answered) {
          res.destroy(err);
          return;
        }
        if (res.destroyed) return;
        const connectFailure = CONNECT_ERRORS.has(err.code ?? "");
        if (connectFailure) this.fail(ep, r.backend, err);
        if (connectFailure && (!bodySent || retryAfterSend) && n + 1 < this.attempts) {
          this.opts.metrics.retries.inc({ backend: r.backend });
          if (bodySent) req.unpipe(up);
          attempt(n + 1);
          return;
        }
        this.opts.logger.warn(
          { backend: r.backend, endpoint: id, err: err.message },
          "backend failed",
        );
        badGateway(res);
      });
      res.once("close", () => {
        if (!answered || !res.writableFinished) up.destroy();
      });
    };
    attempt(0);
  }

  /** Passes an upgrade (WebSocket) through to an endpoint. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, tls: boolean): void {
    const r = this.route(req);
    socket.on("error", () => socket.destroy());
    if (r.status !== 0) {
      socket.end(
        `HTTP/1.1 ${r.status} ${r.status === 404 ? "Not Found" : "Service Unavailable"}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`,
      );
      return;
    }
    this.inFlight++;
    socket.once("close", () => this.inFlight--);
    const headers = this.forwardedHeaders(req, tls);
    headers.connection = "Upgrade";
    headers.upgrade = req.headers.upgrade;
    const tried = new Set<string>();
    const attempt = (n: number): void => {
      const ep = this.pick(r.backend, r.eps, tried);
      if (!ep) {
        socket.end("HTTP/1.1 502 Bad Gateway\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
        return;
      }
      tried.add(`${ep.ip}:${ep.port}`);
      const up = request({
        host: ep.ip,
        port: ep.port,
        method: req.method,
        path: req.url,
        headers,
        agent: false,
        timeout: this.connectTimeoutMs,
      });
      up.once("timeout", () =>
        up.destroy(Object.assign(new Error("timeout"), { code: "ETIMEDOUT" })),
      );
      up.once("upgrade", (ures, usock, uhead) => {
        up.setTimeout(0);
        this.ok(ep);
        let text = `HTTP/1.1 ${ures.statusCode} ${ures.statusMessage}\r\n`;
        for (let i = 0; i < ures.rawHeaders.length; i += 2) {
          text += `${ures.rawHeaders[i]}: ${ures.rawHeaders[i + 1]}\r\n`;
        }
        socket.write(`${text}\r\n`);
        if (uhead.length) socket.write(uhead);
        if (head.length) usock.write(head);
        usock.on("error", () => socket.destroy());
        usock.pipe(socket).pipe(usock);
        socket.once("close", () => usock.destroy());
        usock.once("close", () => socket.destroy());
      });
      up.once("response", (ures) => {
        // The backend declined the upgrade: relay its answer and close.
        let text = `HTTP/1.1 ${ures.statusCode} ${ures.statusMessage}\r\n`;
        for (let i = 0; i < ures.rawHeaders.length; i += 2) {
          const k = ures.rawHeaders[i].toLowerCase();
          if (k === "connection" || k === "transfer-encoding") continue;
          text += `${ures.rawHeaders[i]}: ${ures.rawHeaders[i + 1]}\r\n`;
        }
        socket.write(`${text}connection: close\r\n\r\n`);
        ures.pipe(socket);
      });
      up.once("error", (err: NodeJS.ErrnoException) => {
        if (CONNECT_ERRORS.has(err.code ?? "")) {
          this.fail(ep, r.backend, err);
          if (n + 1 < this.attempts) {
            this.opts.metrics.retries.inc({ backend: r.backend });
            attempt(n + 1);
            return;
          }
        }
        socket.end("HTTP/1.1 502 Bad Gateway\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
      });
      up.end();
    };
    attempt(0);
  }
}

function badGateway(res: ServerResponse): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(502, { "content-type": "text/plain; charset=utf-8" });
  res.end("502 Bad Gateway: no endpoint answered\n");
}

/** The request's host without its port. */
function hostOf(req: IncomingMessage): string {
  const h = req.headers.host ?? "";
  if (h.startsWith("[")) return h.slice(0, h.indexOf("]") + 1);
  const colon = h.indexOf(":");
  return colon < 0 ? h : h.slice(0, colon);
}
