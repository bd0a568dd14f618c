/**
 * Plain requests to paths the runtime's typed Client does not cover: the health
 * endpoints (/livez, /readyz), the discovery roots (/api, /apis) and a
 * subresource PUT (a Namespace's /finalize). Same transport settings as the
 * Client: the kubeconfig's server, CA, client certificate, token or basic auth.
 */
import { readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import type { RestConfig } from "../../runtime/kubeconfig.ts";

/** Deadline of one raw request when the config sets none. */
export const RAW_REQUEST_TIMEOUT_MS = 10_000;
/** Largest body read from a raw request. */
export const RAW_MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

/** A server's answer: status code and body text. */
export interface RawResponse {
  code: number;
  text: string;
}

/** Issues raw HTTP requests with a RestConfig's credentials. */
export class RawHttp {
  private readonly base: URL;
  private readonly agent: http.Agent;

  constructor(private readonly config: RestConfig) {
    this.base = new URL(config.server);
    this.agent =
      this.base.protocol === "https:"
        ? new https.Agent({
            keepAlive: true,
            ca: config.ca,
            cert: config.cert,
            key: config.key,
            rejectUnauthorized: config.insecureSkipTLSVerify !== true,
            servername: config.tlsServerName,
          })
        : new http.Agent({ keepAlive: true });
  }

  /** Closes kept-alive connections. */
  close(): void {
    this.agent.destroy();
  }

  /** GET `path` (with query); any status is answered, network failures throw. */
  get(path: string, accept = "application/json"): Promise<RawResponse> {
    return this.request("GET", path, undefined, accept);
  }

  /** GET `path` and parse JSON; a non-2xx answer throws with the body's message. */
  async getJson<T>(path: string): Promise<T> {
    const r = await this.get(path);
    if (r.code < 200 || r.code >= 300) throw new Error(`GET ${path}: ${describe(r)}`);
    return JSON.parse(r.text) as T;
  }

  /** PUT a JSON body to `path`; a non-2xx answer throws with the body's message. */
  async putJson<T>(path: string, body: unknown): Promise<T> {
    const r = await this.request("PUT", path, JSON.stringify(body), "application/json");
    if (r.code < 200 || r.code >= 300) throw new Error(`PUT ${path}: ${describe(r)}`);
    return JSON.parse(r.text) as T;
  }

  private headers(body: string | undefined, accept: string): http.OutgoingHttpHeaders {
    const h: http.OutgoingHttpHeaders = {
      accept,
      "user-agent": this.config.userAgent ?? "setpoint-cli",
    };
    const token =
      this.config.token ??
      (this.config.tokenFile ? readFileSync(this.config.tokenFile, "utf8").trim() : undefined);
    if (token) h.authorization = `Bearer ${token}`;
    else if (this.config.username !== undefined) {
      const pair = `${this.config.username}:${this.config.password ?? ""}`;
      h.authorization = `Basic ${Buffer.from(pair).toString("base64")}`;
    }
    if (body !== undefined) {
      h["content-type"] = "application/json";
      h["content-length"] = Buffer.byteLength(body);
    }
    return h;
  }

  private request(
    method: string,
    path: string,
    body: string | undefined,
    accept: string,
  ): Promise<RawResponse> {
    const transport = this.base.protocol === "https:" ? https : http;
    const prefix = this.base.pathname.replace(/\/+$/, "");
    const timeoutMs = this.config.timeoutMs ?? RAW_REQUEST_TIMEOUT_MS;
    return new Promise((resolve, reject) => {
      const req = transport.request({
        protocol: this.base.protocol,
        hostname: this.base.hostname.replace(/^\[|\]$/g, ""),
        port: this.base.port || undefined,
        method,
        path: `${prefix}${path}`,
        headers: this.headers(body, accept),
        agent: this.agent,
        timeout: timeoutMs,
      });
      req.once("timeout", () =>
        req.destroy(new Error(`${method} ${path} timed out after ${timeoutMs} ms`)),
      );
      req.once("error", reject);
      req.once("response", (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (c: Buffer) => {
          size += c.length;
          if (size > RAW_MAX_RESPONSE_BYTES) {
            res.destroy(new Error(`${method} ${path}: response too large`));
            return;
          }
          chunks.push(c);
        });
        res.once("error", reject);
        res.once("end", () =>
          resolve({ code: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }),
        );
      });
      req.end(body);
    });
  }
}

/** "<code>: <message>" from a Status body, or the first bytes of the text. */
function describe(r: RawResponse): string {
  try {
    const s = JSON.parse(r.text) as { message?: unknown };
    if (typeof s.message === "string") return `${r.code}: ${s.message}`;
  } catch {
    // not JSON
  }
  return `${r.code}: ${r.text.slice(0, 200)}`;
}
