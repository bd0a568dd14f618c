/**
 * The client's transport: sending a request to the server and reading its
 * answer, with credentials, keep-alive connections, the rate limit, deadlines,
 * bounded response bodies, request counts, and retries after 429 (Retry-After)
 * and 401 (re-read token file). A non-2xx answer becomes an ApiError carrying
 * the server's Status.
 *
 * Fail-over. Given several addresses of one API (RestConfig.servers: apiservers on
 * the same storage), requests go to the one in use until it cannot be reached; then
 * the request goes to the next address, which becomes the one in use. Any request
 * moves on when the connection could not be made (it surely never reached a
 * server); a read (GET, HEAD: lists, gets, watches) also when the connection broke
 * before an answer. A write whose connection broke after it was sent is not sent
 * again: it may have been applied, and repeating a create or a compare-and-swap
 * could report a conflict that is not one; its error goes to the caller, which
 * retries as it retries any failure.
 */
import { setMaxListeners } from "node:events";
import { readFileSync } from "node:fs";
import http, { type IncomingMessage } from "node:http";
import https from "node:https";
import type { Duplex, Readable } from "node:stream";
import { createSecureContext } from "node:tls";
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
/** Connection errors that say the request never reached a server: any request may go elsewhere. */
export const UNSENT_ERROR_CODES: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EADDRNOTAVAIL",
]);
/** Connection errors after which a read (never a write) may go to another server. */
export const BROKEN_ERROR_CODES: ReadonlySet<string> = new Set([
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "ERR_SSL_WRONG_VERSION_NUMBER",
]);
/**
 * Requests a client has in flight to one apiserver at once (its keep-alive
 * connections); more wait in the client for a connection to be free. Watches
 * are not counted (each has a connection of its own). A controller that starts
 * hundreds of writes at once (a ReplicaSet's slow-start batch) so stays within
 * the server's in-flight seats (kube-apiserver's 200 mutating) instead of being
 * answered 429 and sent again a second later, and reuses its connections
 * instead of opening one per request.
 */
export const MAX_REQUESTS_IN_FLIGHT = 32;
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
 * token file or a refreshed token source).
 */
export class Transport {
  /** Request counts, for benchmarks and tests that count API calls. */
  readonly stats: ClientStats = { requests: 0, byVerb: {} };
  /** Every address of the API, `config.server` first. */
  private readonly bases: URL[];
  /** Index in `bases` of the address in use. */
  private current = 0;
  /** Ordinary requests: at most MAX_REQUESTS_IN_FLIGHT connections per apiserver. */
  private readonly agent: http.Agent;
  /** Watches: a connection each, not counted against the requests' bound. */
  private readonly streamAgent: http.Agent;
  private readonly protocol: typeof http | typeof https;
  private readonly bucket: TokenBucket | undefined;
  private fileToken: { value: string; readAt: number } | undefined;

  constructor(private readonly config: RestConfig) {
    const addresses = [config.server, ...(config.connect ? [] : (config.servers ?? []))].filter(
      (a, i, all) => all.indexOf(a) === i,
    );
    this.bases = addresses.map((a) => new URL(a));
    const protocol = this.bases[0].protocol;
    if (this.bases.some((b) => b.protocol !== protocol)) {
      throw new Error(`the servers must all be http or all https: ${addresses.join(", ")}`);
    }
    const connect = config.connect;
    if (connect) {
      // Plain HTTP over the connections `connect` opens, whatever the URL's scheme.
      this.protocol = http;
      this.agent = new ConnectingAgent(connect, {
        keepAlive: true,
        maxSockets: MAX_REQUESTS_IN_FLIGHT,
      });
      this.streamAgent = new ConnectingAgent(connect, { keepAlive: true });
    } else if (protocol === "https:") {
      this.protocol = https;
      // One TLS context for every connection (otherwise each new connection
      // parses the CA and the client key pair again).
      const tls = {
        keepAlive: true,
        secureContext: createSecureContext({ ca: config.ca, cert: config.cert, key: config.key }),
        rejectUnauthorized: config.insecureSkipTLSVerify !== true,
        servername: config.tlsServerName,
      };
      this.agent = new https.Agent({ ...tls, maxSockets: MAX_REQUESTS_IN_FLIGHT });
      this.streamAgent = new https.Agent(tls);
    } else if (protocol === "http:") {
      this.protocol = http;
      this.agent = new http.Agent({ keepAlive: true, maxSockets: MAX_REQUESTS_IN_FLIGHT });
      this.streamAgent = new http.Agent({ keepAlive: true });
    } else {
      throw new Error(`server URL must be http or https: ${config.server}`);
    }
    if (config.qps !== undefined && config.qps > 0) {
      this.bucket = new TokenBucket(config.qps, config.burst ?? Math.ceil(config.qps));
    }
  }

  /** The address requests go to now (the one in use). */
  get server(): string {
    return this.bases[this.current].href;
  }

  /** Closes idle keep-alive connections; in-flight requests and watches are cut. */
  close(): void {
    this.agent.destroy();
    this.streamAgent.destroy();
  }

  private async bearer(): Promise<string | undefined> {
    if (this.config.token) return this.config.token;
    if (this.config.tokenSource) return this.config.tokenSource({ refresh: false });
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

  /**
   * Sends one request and answers its response once the status line and headers
   * arrived; on a connection failure, to the next address (see the module comment).
   */
  async send(spec: RequestSpec): Promise<{ res: IncomingMessage; describe: string }> {
    if (this.bucket) await this.bucket.take(spec.signal);
    const body =
      spec.body === undefined
        ? undefined
        : typeof spec.body === "string"
          ? spec.body
          : JSON.stringify(spec.body);
    const headers = await this.headers(spec, body);
    this.count(spec.verb);
    const first = this.current;
    for (let tried = 0; ; tried++) {
      const index = (first + tried) % this.bases.length;
      try {
        const answer = await this.sendTo(this.bases[index], spec, headers, body);
        this.current = index;
        return answer;
      } catch (err) {
        const last = tried + 1 >= this.bases.length;
        if (last || spec.signal?.aborted || !mayFailOver(err, spec.method)) throw err;
        // Later requests start at the next address too, until it fails in turn.
        if (this.current === index) this.current = (index + 1) % this.bases.length;
      }
    }
  }

  private sendTo(
    base: URL,
    spec: RequestSpec,
    headers: http.OutgoingHttpHeaders,
    body: string | undefined,
  ): Promise<{ res: IncomingMessage; describe: string }> {
    const basePath = base.pathname.replace(/\/+$/, "");
    const qs = spec.query?.toString();
    const path = `${basePath}${spec.path}${qs ? `?${qs}` : ""}`;
    const describe = `${spec.method} ${spec.path}`;
    const timeoutMs = spec.timeoutMs ?? this.config.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    // A signal shared by many requests in flight (an informer's, a manager's) gets one
    // abort listener per request: that is not a leak, so Node is told not to warn of it.
    if (spec.signal) setMaxListeners(0, spec.signal);
    return new Promise((resolve, reject) => {
      const req = this.protocol.request({
        protocol: this.config.connect ? "http:" : base.protocol,
        hostname: base.hostname.replace(/^\[|\]$/g, ""),
        port: base.port || undefined,
        method: spec.method,
        path,
        headers,
        // A request with no deadline (a watch) lasts as long as it likes: it
        // never holds one of the requests' connections.
        agent: spec.timeoutMs === 0 ? this.streamAgent : this.agent,
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
      if (attempt === 0 && isUnauthorized(r.error) && !this.config.token) {
        if (this.config.tokenSource) {
          await this.config.tokenSource({ refresh: true });
          continue;
        }
        if (this.config.tokenFile) {
          this.fileToken = undefined;
          continue;
        }
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

/** An agent whose connections come from RestConfig.connect instead of the network. */
class ConnectingAgent extends http.Agent {
  constructor(
    private readonly open: () => Duplex,
    opts: http.AgentOptions,
  ) {
    super(opts);
  }
  override createConnection(): Duplex {
    return this.open();
  }
}

/** Whether a request that failed with `err` may be sent to another address. */
function mayFailOver(err: unknown, method: string): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return false;
  if (UNSENT_ERROR_CODES.has(code)) return true;
  return (method === "GET" || method === "HEAD") && BROKEN_ERROR_CODES.has(code);
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
