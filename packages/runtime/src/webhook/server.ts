/**
 * The webhook server: HTTPS (the apiserver calls webhooks only over TLS), one
 * admission handler per path, AdmissionReview in and out. A request that is not
 * an AdmissionReview gets 400; a handler that throws answers "not allowed" with
 * a 500 status, so a bug refuses writes instead of letting them through (the
 * webhook's failurePolicy decides only for calls that fail).
 */
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import type { AdmissionHandler, AdmissionRequest, AdmissionResponse } from "./admission.ts";

export interface WebhookServerOptions {
  /** PEM of the serving certificate (its names must include what the apiserver calls). */
  cert: string;
  /** PEM of its private key. */
  key: string;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: any free port (see `port` after start). */
  port?: number;
  /** Largest request body accepted (default 3 MiB, the apiserver's own bound). */
  maxBodyBytes?: number;
}

const DEFAULT_MAX_BODY = 3 * 1024 * 1024;

export class WebhookServer {
  readonly #handlers = new Map<string, AdmissionHandler>();
  readonly #server: Server;
  readonly #opts: WebhookServerOptions;

  constructor(opts: WebhookServerOptions) {
    this.#opts = opts;
    this.#server = createServer({ cert: opts.cert, key: opts.key }, (req, res) => {
      const path = new URL(req.url ?? "/", "https://webhook").pathname;
      const handler = this.#handlers.get(path);
      if (!handler) {
        res.writeHead(404, { "content-type": "text/plain" }).end(`no webhook at ${path}\n`);
        return;
      }
      if (req.method !== "POST") {
        res.writeHead(405, { "content-type": "text/plain" }).end("webhooks take POST\n");
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      const max = this.#opts.maxBodyBytes ?? DEFAULT_MAX_BODY;
      req.on("data", (c: Buffer) => {
        size += c.length;
        if (size > max) {
          res.writeHead(413, { "content-type": "text/plain" }).end("request body too large\n");
          req.destroy();
          return;
        }
        chunks.push(c);
      });
      req.on("end", () => {
        if (res.headersSent) return;
        void this.#serve(handler, Buffer.concat(chunks).toString("utf8")).then(({ code, body }) => {
          res.writeHead(code, { "content-type": "application/json" }).end(body);
        });
      });
    });
  }

  /** Serves `handler` at `path` (for example "/validate-webapp"). */
  register(path: string, handler: AdmissionHandler): this {
    this.#handlers.set(path, handler);
    return this;
  }

  /** Starts listening; resolves once it does. */
  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#server.once("error", reject);
      this.#server.listen(this.#opts.port ?? 0, this.#opts.host ?? "127.0.0.1", () => {
        this.#server.off("error", reject);
        resolve();
      });
    });
  }

  /** The port it listens on (after start). */
  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  /** The URL of `path` on this server, for a webhook configuration's clientConfig.url. */
  url(path: string): string {
    return `https://${this.#opts.host ?? "127.0.0.1"}:${this.port}${path}`;
  }

  /** Stops accepting and closes open connections. */
  stop(): Promise<void> {
    return new Promise((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }

  async #serve(handler: AdmissionHandler, text: string): Promise<{ code: number; body: string }> {
    let review: { apiVersion?: string; kind?: string; request?: AdmissionRequest };
    try {
      review = JSON.parse(text);
    } catch {
      return { code: 400, body: JSON.stringify({ error: "the body is not JSON" }) };
    }
    const request = review?.request;
    if (review?.kind !== "AdmissionReview" || !request?.uid) {
      return { code: 400, body: JSON.stringify({ error: "the body is not an AdmissionReview" }) };
    }
    let response: AdmissionResponse;
    try {
      response = await handler(request);
    } catch (err) {
      response = {
        allowed: false,
        status: { code: 500, message: err instanceof Error ? err.message : String(err) },
      };
    }
    return {
      code: 200,
      body: JSON.stringify({
        apiVersion: review.apiVersion ?? "admission.k8s.io/v1",
        kind: "AdmissionReview",
        response: { uid: request.uid, ...response },
      }),
    };
  }
}
