/**
 * The client's transport: sending a request to the server and reading its
 * answer, with credentials, keep-alive connections, the rate limit, deadlines,
 * bounded response bodies, request counts, and retries after 429 (Retry-After)
 * and 401 (re-read token file). A non-2xx answer becomes an ApiError carrying
 * the server's Status.
 */
import { readFileSync } from "node:fs";
import http, { type IncomingMessage } from "node:http";
import https from "node:https";
import type { Readable } from "node:stream";
import { isStatus, type Status } from "@setpoint/api";
import {
  ApiError,
  isTooManyRequests,
  isUnauthorized,
  RequestTimeoutError,
  retryAfterMs,
  sleep,
  synthesizeStatus,
} from "./errors.ts";
import type { RestConfig } from "./kubeconfig.ts";
import { TokenBucket } from "./throttle.ts";

/** Deadline of a non-watch request when the config sets none. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/** How often a token file is re-read (service account tokens are rotated in place). */
export const TOKEN_FILE_REFRESH_MS = 60_000;
/** Times a request rejected with 429 and a Retry-After is sent again. */
export const MAX_RETRY_AFTER_ATTEMPTS = 3;
/** Longest Retry-After honoured before giving the 429 to the caller, in ms. */
export const MAX_RETRY_AFTER_MS = 10_000;
/** Largest response body read into memory for a non-watch request. */
export const MAX_RESPONSE_BYTES = 512 * 1024 * 1024;
/** User-Agent when the config sets none. */
export const DEFAULT_USER_AGENT = "setpoint-runtime/0.1.0";

/** Request counts, for benchmarks and tests that count API calls. */
export interface ClientStats {
  requests: number;
  byVerb: Record<string, number>;
}

/** One request, as the client's verbs describe it. */
export interface RequestSpec {
  /** For stats: get, list, watch, create, update, patch, delete, deletecollection, discovery, raw. */
  verb: string;
  method: string;
  path: string;
  query?: URLSearchParams | undefined;
  body?: unknown | undefined;
  contentType?: string | undefined;
  accept?: string | undefined;
  signal?: AbortSignal | undefined;
  /** 0: no deadline (watches). */
  timeoutMs?: number | undefined;
}

/**
 * Sends the client's requests: one keep-alive agent per client, credentials
 * (bearer token, token file re-read every TOKEN_FILE_REFRESH_MS, basic auth,
 * client certificates), the rate limit, deadlines, request counts, and the
 * retries (after a 429 with Retry-After, and once after a 401 with a re-read
 * token file).
 */
export class Transport {
  /** Request counts, for benchmarks and tests that count API calls. */
  readonly stats: ClientStats = { requests: 0, byVerb: {} };
  private readonly base: URL;
  private readonly agent: http.Agent;
  private readonly protocol: typeof http | typeof https;
  private readonly bucket: TokenBucket | undefined;
  private fileToken: { value: string; readAt: number } | undefined;

  constructor(private readonly config: RestConfig) {
    this.base = new URL(config.server);
    if (this.base.protocol === "https:") {
      this.protocol = https;
      this.agent = new https.Agent({
        keepAlive: true,
        ca: config.ca,
        cert: config.cert,
        key: config.key,
        rejectUnauthorized: config.insecureSkipTLSVerify !== true,
        servername: config.tlsServerName,
      });
    } else if (this.base.protocol === "http:") {
      this.protocol = http;
      this.agent = new http.Agent({ keepAlive: true });
    } else {
      throw new Error(`server URL must be http or https: ${config.server}`);
    }
    if (config.qps !== undefined && config.qps > 0) {
      this.bucket = new TokenBucket(config.qps, config.burst ?? Math.ceil(config.qps));
    }
  }

  /** Closes idle keep-alive connections; in-flight requests and watches are cut. */
  close(): void {
    this.agent.destroy();
  }

  private async bearer(): Promise<string | undefined> {
    if (this.config.token) return this.config.token;
    const file = this.config.tokenFile;
    if (!file) return undefined;
    const now = Date.now();
    if (!this.fileToken || now - this.fileToken.readAt > TOKEN_FILE_REFRESH_MS) {
      this.fileToken = { value: readFileSync(file, "utf8").trim(), readAt: now };
    }
    return this.fileToken.value;
  }

  private async headers(
    spec: RequestSpec,
    body: string | undefined,
  ): Promise<http.OutgoingHttpHeaders> {
    const h: http.OutgoingHttpHeaders = {
      accept: spec.accept ?? "application/json",
      "user-agent": this.config.userAgent ?? DEFAULT_USER_AGENT,
    };
    const token = await this.bearer();
    if (token) h.authorization = `Bearer ${token}`;
    else if (this.config.username !== undefined) {
      const pair = `${this.config.username}:${this.config.password ?? ""}`;
      h.authorization = `Basic ${Buffer.from(pair).toString("base64")}`;
    }
    if (body !== undefined) {
      h["content-type"] = spec.contentType ?? "application/json";
      h["content-length"] = Buffer.byteLength(body);
    }
    return h;
  }

  private count(verb: string): void {
    this.stats.requests++;
    this.stats.byVerb[verb] = (this.stats.byVerb[verb] ?? 0) + 1;
  }

  /** Sends one request and answers its response once the status line and headers arrived. */
  async send(spec: RequestSpec): Promise<{ res: IncomingMessage; describe: string }> {
    if (this.bucket) await this.bucket.take(spec.signal);
    const body =
      spec.body === undefined
        ? undefined
        : typeof spec.body === "string"
          ? spec.body
          : JSON.stringify(spec.body);
    const headers = await this.headers(spec, body);
    const basePath = this.base.pathname.replace(/\/+$/, "");
    const qs = spec.query?.toString();
    const path = `${basePath}${spec.path}${qs ? `?${qs}` : ""}`;
    const describe = `${spec.method} ${spec.path}`;
    const timeoutMs = spec.timeoutMs ?? this.config.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.count(spec.verb);
    return new Promise((resolve, reject) => {
      const req = this.protocol.request({
        protocol: this.base.protocol,
        hostname: this.base.hostname.replace(/^\[|\]$/g, ""),
        port: this.base.port || undefined,
        method: spec.method,
        path,
        headers,
        agent: this.agent,
        signal: spec.signal,
      });
      if (timeoutMs > 0) {
        const timer = setTimeout(() => {
          req.destroy(new RequestTimeoutError(`${describe} timed out after ${timeoutMs} ms`));
        }, timeoutMs);
        const clear = (): void => clearTimeout(timer);
        req.once("close", clear);
        req.once("response", (res) => res.once("close", clear));
      }
      req.once("response", (res) => resolve({ res, describe }));
      req.on("error", (e) => reject(spec.signal?.aborted ? (spec.signal.reason ?? e) : e));
      req.end(body);
    });
  }

  /** A request whose JSON answer is returned; a non-2xx answer throws its ApiError. */
  async request<R>(spec: RequestSpec): Promise<R> {
    const r = await this.exchange(spec);
    if (r.error) throw r.error;
    return parseJson<R>(r.text, r.describe, r.headers["content-type"]);
  }

  /**
   * Sends a request and reads its whole answer, whatever the status (`error`
   * is set for a non-2xx one). Sends again after a 429 with Retry-After (up to
   * MAX_RETRY_AFTER_ATTEMPTS times) and once after a 401 with a re-read token file.
   */
  async exchange(spec: RequestSpec): Promise<Exchange> {
    for (let attempt = 0; ; attempt++) {
      const { res, describe } = await this.send(spec);
      const text = await readBody(res);
      const status = res.statusCode ?? 0;
      const r: Exchange = { status, headers: res.headers, text, describe };
      if (status >= 200 && status < 300) return r;
      r.error = toApiError(status, text, res.headers["retry-after"], describe);
      if (attempt < MAX_RETRY_AFTER_ATTEMPTS && isTooManyRequests(r.error)) {
        const wait = retryAfterMs(r.error);
        if (wait !== undefined && wait <= MAX_RETRY_AFTER_MS) {
          await sleep(wait, spec.signal);
          continue;
        }
      }
      if (attempt === 0 && isUnauthorized(r.error) && this.config.tokenFile && !this.config.token) {
        this.fileToken = undefined;
        continue;
      }
      return r;
    }
  }

  /** A streaming request (watch): resolves with the body once the server answered 2xx. */
  async openStream(spec: RequestSpec): Promise<Readable> {
    const { res, describe } = await this.send(spec);
    const code = res.statusCode ?? 0;
    if (code >= 200 && code < 300) return res;
    const text = await readBody(res);
    throw toApiError(code, text, res.headers["retry-after"], describe);
  }
}

/** A whole answer, as `exchange` reads it. */
export interface Exchange {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** "METHOD /path", for messages. */
  describe: string;
  /** The ApiError of a non-2xx answer. */
  error?: ApiError | undefined;
}

export function toApiError(
  code: number,
  text: string,
  retryAfter: string | undefined,
  describe: string,
): ApiError {
  const seconds = retryAfter !== undefined ? Number.parseInt(retryAfter, 10) : Number.NaN;
  const retry = Number.isFinite(seconds) ? seconds : undefined;
  let status: Status | undefined;
  try {
    const parsed = JSON.parse(text) as unknown;
    if (isStatus(parsed)) status = parsed;
  } catch {
    // not JSON: synthesized below
  }
  if (!status) status = synthesizeStatus(code, text, retry);
  else if (retry !== undefined && status.details?.retryAfterSeconds === undefined) {
    status.details = { ...status.details, retryAfterSeconds: retry };
  }
  return new ApiError(status, describe);
}

/** The server answered 2xx with a body that is not JSON. */
export class UnexpectedResponseError extends Error {
  override name = "UnexpectedResponseError";
}

function parseJson<R>(text: string, describe: string, contentType: string | undefined): R {
  if (!text) return undefined as R;
  try {
    return JSON.parse(text) as R;
  } catch {
    throw new UnexpectedResponseError(
      `${describe}: the server answered ${contentType ?? "without a content type"}, not JSON: ${JSON.stringify(text.slice(0, 80))}`,
    );
  }
}

function readBody(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    res.on("data", (c: Buffer) => {
      size += c.length;
      if (size > MAX_RESPONSE_BYTES) {
        res.destroy(new Error(`response larger than ${MAX_RESPONSE_BYTES} bytes`));
        return;
      }
      chunks.push(c);
    });
    res.once("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    res.on("error", reject);
    res.once("aborted", () =>
      reject(Object.assign(new Error("response aborted"), { code: "ECONNRESET" })),
    );
  });
}
