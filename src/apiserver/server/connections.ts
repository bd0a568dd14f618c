/**
 * How long a client may take to send a request, and how many connections the
 * server holds, as Kubernetes' server bounds them: a connection that has not sent
 * its request headers within 32 s (Go's ReadHeaderTimeout in kube-apiserver,
 * counted from the connection's start, so a connection that sends nothing is
 * closed too) is closed; a request whose body has not arrived within 60 s
 * (kube-apiserver's --request-timeout) is answered 504 Timeout and its connection
 * closed; an idle keep-alive connection is closed after 90 s (IdleTimeout). These
 * bound only what the client sends: a watch, or any long answer, is not cut off
 * here (the work of a request that is not long-running is bounded by its deadline,
 * endpoints/request-deadline.ts, which answers a body still arriving the same way).
 * Past MAX_CONNECTIONS open connections, new ones are closed at once.
 */
import type { Server as HttpServer, ServerResponse } from "node:http";
import type { Server as HttpsServer } from "node:https";
import type { Duplex } from "node:stream";
import { TIMED_OUT_BODY, TIMED_OUT_CONTENT_TYPE } from "../endpoints/request-deadline.ts";

export interface ConnectionLimits {
  /** Time from a connection's start (or a keep-alive request's first byte) to its complete headers, in ms. */
  headersTimeoutMs: number;
  /** Time to receive a whole request (headers and body), in ms; past it the answer is 504. */
  requestTimeoutMs: number;
  /** Time an idle keep-alive connection is kept, in ms. */
  idleTimeoutMs: number;
  /** Most connections open at once; more are closed as soon as they are accepted. */
  maxConnections: number;
}

/** Go's ReadHeaderTimeout in kube-apiserver: 32 s. */
export const HEADERS_TIMEOUT_MS = 32_000;
/** kube-apiserver's --request-timeout default: 60 s. */
export const REQUEST_TIMEOUT_MS = 60_000;
/** Go's IdleTimeout in kube-apiserver: 90 s. */
export const IDLE_TIMEOUT_MS = 90_000;
/** Most open connections (half the 20,000 descriptors a process gets here by default). */
export const MAX_CONNECTIONS = 10_000;

export const DEFAULT_CONNECTION_LIMITS: Readonly<ConnectionLimits> = Object.freeze({
  headersTimeoutMs: HEADERS_TIMEOUT_MS,
  requestTimeoutMs: REQUEST_TIMEOUT_MS,
  idleTimeoutMs: IDLE_TIMEOUT_MS,
  maxConnections: MAX_CONNECTIONS,
});

/** The defaults with `overrides` applied. */
export function resolveConnectionLimits(
  overrides: Partial<ConnectionLimits> | undefined,
): ConnectionLimits {
  return { ...DEFAULT_CONNECTION_LIMITS, ...(overrides ?? {}) };
}

/**
 * How often the server looks for connections past their time (Node checks on an
 * interval, 30 s by default): often enough that a timeout is late by a fraction
 * of itself at most.
 */
export function checkingIntervalMs(limits: ConnectionLimits): number {
  return Math.max(
    50,
    Math.min(1_000, Math.floor(Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 4)),
  );
}

/** The TLS handshake must end within the headers' time, as in Go's server. */
export function handshakeTimeoutMs(limits: ConnectionLimits): number {
  return limits.headersTimeoutMs;
}

function rawResponse(status: string, body = "", contentType = ""): string {
  const head = [`HTTP/1.1 ${status}`, "Connection: close"];
  if (body) {
    head.push(`Content-Type: ${contentType}`, `Content-Length: ${Buffer.byteLength(body)}`);
  }
  return `${head.join("\r\n")}\r\n\r\n${body}`;
}

/**
 * Kubernetes' answer to a request that did not arrive in time: its request deadline
 * passed while the body was being read (as the handler's deadline answers it).
 */
function timedOutResponse(): string {
  return rawResponse("504 Gateway Timeout", TIMED_OUT_BODY, TIMED_OUT_CONTENT_TYPE);
}

/** Node's own answers to requests it cannot parse (kept as they were). */
function parseErrorResponse(code: string | undefined): string {
  if (code === "HPE_HEADER_OVERFLOW") return rawResponse("431 Request Header Fields Too Large");
  if (code === "HPE_CHUNK_EXTENSIONS_OVERFLOW") return rawResponse("413 Payload Too Large");
  return rawResponse("400 Bad Request");
}

/** Sends `raw` and closes the connection once it is written (or at once if it cannot be). */
function answerAndClose(socket: Duplex, raw: string): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.end(raw, () => socket.destroy());
}

/**
 * Sets the limits on a server made with `connectionsCheckingInterval` from
 * checkingIntervalMs (and, for https, `handshakeTimeout` from handshakeTimeoutMs).
 */
export function applyConnectionLimits(
  server: HttpServer | HttpsServer,
  limits: ConnectionLimits,
): void {
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = limits.requestTimeoutMs;
  server.keepAliveTimeout = limits.idleTimeoutMs;
  server.maxConnections = limits.maxConnections;
  server.on("clientError", (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code !== "ERR_HTTP_REQUEST_TIMEOUT") {
      answerAndClose(socket, parseErrorResponse(err.code));
      return;
    }
    // A request being served (its headers came) whose body did not: 504, as
    // Kubernetes' request timeout answers. Headers that did not come: the
    // connection is closed without a word, as Go's server closes it.
    const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (inFlight && !inFlight.headersSent) answerAndClose(socket, timedOutResponse());
    else socket.destroy();
  });
}
