/**
 * Plain HTTP(S) requests to the apiserver from a test (what a controller or curl
 * would send), without going through any project client.
 */
import http, { type IncomingHttpHeaders } from "node:http";
import https from "node:https";

export interface Target {
  url: string;
  /** PEM of the CA to trust (https). */
  ca?: string;
  /** Bearer token. */
  token?: string;
}

export interface HttpResult {
  code: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: unknown;
}

export interface HttpOptions {
  /** Sent as is when a string or Buffer, else as JSON. */
  body?: unknown;
  headers?: Record<string, string>;
  /** Send the request without the target's token. */
  anonymous?: boolean;
}

/** Sends one request and reads the whole response. */
export function request(
  target: Target,
  method: string,
  path: string,
  opts: HttpOptions = {},
): Promise<HttpResult> {
  const url = new URL(path, target.url);
  const data =
    opts.body === undefined
      ? undefined
      : typeof opts.body === "string" || Buffer.isBuffer(opts.body)
        ? opts.body
        : JSON.stringify(opts.body);
  const headers: Record<string, string> = { Accept: "application/json", ...opts.headers };
  if (data !== undefined && !headers["Content-Type"]) headers["Content-Type"] = "application/json";
  if (target.token && !opts.anonymous) headers.Authorization = `Bearer ${target.token}`;
  const options: https.RequestOptions = { method, headers, agent: false };
  if (target.ca) options.ca = target.ca;
  const send = url.protocol === "https:" ? https.request : http.request;
  return new Promise((resolve, reject) => {
    const req = send(url, options, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ code: res.statusCode ?? 0, headers: res.headers, text, json });
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(data);
  });
}

/** How a streamed response ended. */
export type StreamEnd = "end" | "aborted" | "error";

/** An open watch: the lines received so far and how the stream ended. */
export interface OpenStream {
  code: number;
  lines: string[];
  /** Resolves when the response ends: "end" for a clean end, "aborted"/"error" for a cut. */
  ended: Promise<StreamEnd>;
  close(): void;
}

/** Opens a streaming GET (a watch) and resolves once the response headers arrived. */
export function openStream(target: Target, path: string): Promise<OpenStream> {
  const url = new URL(path, target.url);
  const headers: Record<string, string> = { Accept: "application/json" };
  if (target.token) headers.Authorization = `Bearer ${target.token}`;
  const options: https.RequestOptions = { method: "GET", headers, agent: false };
  if (target.ca) options.ca = target.ca;
  const send = url.protocol === "https:" ? https.request : http.request;
  return new Promise((resolve, reject) => {
    const req = send(url, options, (res) => {
      const lines: string[] = [];
      let partial = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        partial += chunk;
        const parts = partial.split("\n");
        partial = parts.pop() ?? "";
        for (const p of parts) if (p) lines.push(p);
      });
      const ended = new Promise<StreamEnd>((done) => {
        res.on("end", () => done("end"));
        res.on("aborted", () => done("aborted"));
        res.on("error", () => done("error"));
        res.on("close", () => done(res.complete ? "end" : "aborted"));
      });
      resolve({ code: res.statusCode ?? 0, lines, ended, close: () => req.destroy() });
    });
    req.on("error", reject);
    req.end();
  });
}

/** Waits until `check()` is true, polling; throws `what` on timeout. */
export async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 15_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
