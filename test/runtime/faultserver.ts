/**
 * An HTTP reverse proxy in front of the real apiserver that records every request
 * and, when a test asks, answers one itself with a fault the real server does not
 * produce on demand: an HTTP 410 or 500 on a watch or list, a watch that ends at
 * once, a stream of garbage, a connection hung up before any answer. Everything
 * else is forwarded to the real server unchanged (streams included).
 */
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import { failure, type StatusReason } from "../../packages/api/src/status.ts";
import { forward, type Listening, listenHttp } from "../helpers/http-proxy.ts";

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  /** list, watch, get, discovery (GET of /api/v1 or /apis/...), or the method for writes. */
  verb: string;
  at: number;
}

/** A fault to answer with instead of forwarding. */
export type Fault =
  | { status: number; body?: unknown; headers?: Record<string, string> }
  | { hangup: true }
  | { neverAnswer: true }
  | { endAtOnce: true }
  | { garbage: string };

function verbOf(method: string, path: string, query: URLSearchParams): string {
  if (method !== "GET") return method.toLowerCase();
  if (query.get("watch") === "true" || query.get("watch") === "1") return "watch";
  const parts = path.split("/").filter(Boolean);
  // /api/v1 or /apis/g/v: discovery.
  if ((parts[0] === "api" && parts.length <= 2) || (parts[0] === "apis" && parts.length <= 3)) {
    return "discovery";
  }
  const rest = parts[0] === "api" ? parts.slice(2) : parts.slice(3);
  const inNs = rest[0] === "namespaces" && rest.length >= 3;
  const tail = inNs ? rest.slice(2) : rest;
  return tail.length === 1 ? "list" : "get";
}

export class FaultServer {
  readonly requests: RecordedRequest[] = [];
  /** Decides a fault for a request; undefined forwards it. */
  onRequest: ((r: RecordedRequest) => Fault | undefined) | undefined;
  private readonly agent = new http.Agent({ keepAlive: true });
  /** Set by start(). */
  private listening!: Listening;

  private constructor(private readonly target: URL) {}

  static async start(target: string): Promise<FaultServer> {
    const fs = new FaultServer(new URL(target));
    fs.listening = await listenHttp(
      (req, res) => fs.handle(req, res),
      () => fs.agent.destroy(),
    );
    return fs;
  }

  get url(): string {
    return this.listening.url;
  }

  /** Recorded requests of one verb. */
  of(verb: string): RecordedRequest[] {
    return this.requests.filter((r) => r.verb === verb);
  }

  async close(): Promise<void> {
    await this.listening.close();
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const u = new URL(req.url ?? "/", "http://x");
    const rec: RecordedRequest = {
      method: req.method ?? "GET",
      path: u.pathname,
      query: u.searchParams,
      verb: verbOf(req.method ?? "GET", u.pathname, u.searchParams),
      at: Date.now(),
    };
    this.requests.push(rec);
    const fault = this.onRequest?.(rec);
    if (!fault) {
      forward(req, res, this.target, { agent: this.agent });
      return;
    }
    req.resume();
    if ("hangup" in fault) {
      req.socket.destroy();
    } else if ("neverAnswer" in fault) {
      // Keep the request open until the client gives up (or the proxy closes).
    } else if ("endAtOnce" in fault) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end();
    } else if ("garbage" in fault) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(fault.garbage);
    } else {
      const text = fault.body === undefined ? "" : JSON.stringify(fault.body);
      res.writeHead(fault.status, { "content-type": "application/json", ...fault.headers });
      res.end(text);
    }
  }
}

/** A metav1.Status body. */
export function statusBody(code: number, reason: StatusReason, message: string): object {
  return failure(code, reason, message).status;
}
