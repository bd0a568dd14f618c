/**
 * Requests the runtime Client has no verb for: discovery documents, DELETE on a
 * collection (deletecollection) and PUT on a Namespace's `/finalize`. Same
 * server, credentials and TLS settings as the Client it is built from; every
 * non-2xx answer becomes the runtime's ApiError carrying the server's Status.
 */
import { readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import { isStatus } from "../api/status.ts";
import { synthesizeStatus } from "../runtime/errors.ts";
import { ApiError, type RestConfig } from "../runtime/index.ts";

/** Deadline of one request when the config sets none (ms). */
export const RAW_REQUEST_TIMEOUT_MS = 30_000;
/** Largest answer read into memory (bytes). */
export const RAW_MAX_RESPONSE_BYTES = 64 * 1024 * 1024;
/** User-Agent of these requests when the config sets none. */
export const RAW_USER_AGENT = "setpoint-controller-manager/0.1.0";

export interface RawRequest {
  method: "GET" | "PUT" | "DELETE";
  /** Absolute API path, e.g. "/apis" or "/api/v1/namespaces/a/configmaps". */
  path: string;
  query?: URLSearchParams;
  body?: unknown;
  accept?: string;
  signal?: AbortSignal;
}

/** The answer: HTTP headers and the parsed JSON body (undefined when empty). */
export interface RawResponse<T> {
  headers: http.IncomingHttpHeaders;
  body: T;
}

export class RawClient {
  /** Requests sent, by method (for tests and benchmarks that count calls). */
  readonly stats: { requests: number; byMethod: Record<string, number> } = {
    requests: 0,
    byMethod: {},
  };
  private readonly base: URL;
  private readonly agent: http.Agent;
  private readonly transport: typeof http | typeof https;

  constructor(readonly config: RestConfig) {
    this.base = new URL(config.server);
    if (this.base.protocol === "https:") {
      this.transport = https;
      this.agent = new https.Agent({
        keepAlive: true,
        ca: config.ca,
        cert: config.cert,
        key: config.key,
        rejectUnauthorized: config.insecureSkipTLSVerify !== true,
        servername: config.tlsServerName,
      });
    } else {
      this.transport = http;
      this.agent = new http.Agent({ keepAlive: true });
    }
  }

  /** Closes keep-alive connections. */
  close(): void {
    this.agent.destroy();
  }

  /** GET of a JSON document. */
  async getJson<T>(path: string, accept?: string, signal?: AbortSignal): Promise<RawResponse<T>> {
    return this.request<T>({ method: "GET", path, accept, signal });
  }

  /** Sends one request; resolves with the parsed JSON answer or rejects with an ApiError. */
  request<T>(req: RawRequest): Promise<RawResponse<T>> {
    const body = req.body === undefined ? undefined : JSON.stringify(req.body);
    const headers: http.OutgoingHttpHeaders = {
      accept: req.accept ?? "application/json",
      "user-agent": this.config.userAgent ?? RAW_USER_AGENT,
    };
    const token = this.token();
    if (token) headers.authorization = `Bearer ${token}`;
    else if (this.config.username !== undefined) {
      const pair = `${this.config.username}:${this.config.password ?? ""}`;
      headers.authorization = `Basic ${Buffer.from(pair).toString("base64")}`;
    }
    if (body !== undefined) {
      headers["content-type"] = "application/json";
      headers["content-length"] = Buffer.byteLength(body);
    }
    const prefix = this.base.pathname.replace(/\/+$/, "");
    const qs = req.query?.toString();
    const path = `${prefix}${req.path}${qs ? `?${qs}` : ""}`;
    const describe = `${req.method} ${req.path}`;
    const timeoutMs = this.config.timeoutMs ?? RAW_REQUEST_TIMEOUT_MS;
    this.stats.requests++;
    this.stats.byMethod[req.method] = (this.stats.byMethod[req.method] ?? 0) + 1;
    return new Promise((resolve, reject) => {
      const r = this.transport.request({
        protocol: this.base.protocol,
        hostname: this.base.hostname.replace(/^\[|\]$/g, ""),
        port: this.base.port || undefined,
        method: req.method,
        path,
        headers,
        agent: this.agent,
        signal: req.signal,
      });
      const timer = setTimeout(
        () => r.destroy(new Error(`${describe} timed out after ${timeoutMs} ms`)),
        timeoutMs,
      );
      r.once("close", () => clearTimeout(timer));
      r.on("error", reject);
      r.once("response", (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (c: Buffer) => {
          size += c.length;
          if (size > RAW_MAX_RESPONSE_BYTES) {
            res.destroy(
              new Error(`${describe}: answer larger than ${RAW_MAX_RESPONSE_BYTES} bytes`),
            );
            return;
          }
          chunks.push(c);
        });
        res.on("error", reject);
        res.once("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          const code = res.statusCode ?? 0;
          let parsed: unknown;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            parsed = undefined;
          }
          if (code >= 200 && code < 300) {
            if (text && parsed === undefined) {
              reject(new Error(`${describe}: the server answered with a body that is not JSON`));
              return;
            }
            resolve({ headers: res.headers, body: parsed as T });
            return;
          }
          reject(new ApiError(isStatus(parsed) ? parsed : synthesizeStatus(code, text), describe));
        });
      });
      r.end(body);
    });
  }

  private token(): string | undefined {
    if (this.config.token) return this.config.token;
    if (this.config.tokenFile) return readFileSync(this.config.tokenFile, "utf8").trim();
    return undefined;
  }
}
