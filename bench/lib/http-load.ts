/**
 * HTTP(S) load for the API benchmark: keep-alive clients that send the same
 * requests to any server, and many concurrent watch streams that count and time
 * their events without parsing whole JSON objects (so the load stays cheap next
 * to what it measures).
 */
import http from "node:http";
import https from "node:https";

export interface Reply {
  code: number;
  body: Buffer;
}

/** Keep-alive requests to one server through one agent. */
export class HttpClient {
  readonly agent: http.Agent;
  readonly #request: typeof http.request;
  readonly #base: URL;
  readonly #token: string | undefined;

  constructor(
    readonly url: string,
    opts: { ca?: string; sockets: number; token?: string },
  ) {
    this.#base = new URL(url);
    this.#token = opts.token;
    const agentOpts = { keepAlive: true, maxSockets: opts.sockets, maxFreeSockets: opts.sockets };
    if (this.#base.protocol === "https:") {
      this.agent = new https.Agent({ ...agentOpts, ...(opts.ca ? { ca: opts.ca } : {}) });
      this.#request = https.request as unknown as typeof http.request;
    } else {
      this.agent = new http.Agent(agentOpts);
      this.#request = http.request;
    }
  }

  /** One request; resolves with the status and the whole body (sent as `contentType`). */
  send(
    method: string,
    path: string,
    body?: string | Buffer,
    contentType = "application/json",
  ): Promise<Reply> {
    const headers: Record<string, string | number> = { Accept: "application/json" };
    if (this.#token) headers.Authorization = `Bearer ${this.#token}`;
    if (body !== undefined) {
      headers["Content-Type"] = contentType;
      headers["Content-Length"] = Buffer.byteLength(body);
    }
    return new Promise((resolve, reject) => {
      const req = this.#request(
        {
          host: this.#base.hostname,
          port: this.#base.port,
          method,
          path,
          headers,
          agent: this.agent,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => resolve({ code: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  }

  /** Sends and throws unless the status is `expect`. */
  async expect(code: number, method: string, path: string, body?: string | Buffer): Promise<Reply> {
    const r = await this.send(method, path, body);
    if (r.code !== code) {
      throw new Error(
        `${method} ${path}: HTTP ${r.code}, wanted ${code}: ${r.body.toString().slice(0, 300)}`,
      );
    }
    return r;
  }

  close(): void {
    this.agent.destroy();
  }
}

const NEWLINE = 0x0a;
const DASH = 0x2d;

/**
 * One watch stream. Counts event lines (a JSON line holds no raw newline), and for
 * each event whose object is named `<prefix><seq>-<µs>` hands µs (the time the
 * writer sent the create, in microseconds since the epoch) and seq to `onEvent`.
 */
export class CountingWatch {
  events = 0;
  /** Chunks of data received (each a read from the socket). */
  chunks = 0;
  ended: "no" | "end" | "error" = "no";
  #tail: Buffer | undefined;
  readonly #marker: Buffer;
  #req: http.ClientRequest | undefined;

  constructor(
    namePrefix: string,
    readonly onEvent: (sentMicros: number, seq: number) => void,
  ) {
    this.#marker = Buffer.from(`"name":"${namePrefix}`);
  }

  /** Opens the stream; resolves once the response headers arrived. */
  open(client: HttpClient, path: string): Promise<void> {
    const base = new URL(client.url);
    const request = (
      base.protocol === "https:" ? https.request : http.request
    ) as typeof http.request;
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: base.hostname,
          port: base.port,
          path,
          headers: { Accept: "application/json" },
          agent: client.agent,
        },
        (res) => {
          if (res.statusCode !== 200) {
            reject(new Error(`watch ${path}: HTTP ${res.statusCode}`));
            res.resume();
            return;
          }
          res.on("data", (chunk: Buffer) => this.#data(chunk));
          res.on("end", () => {
            this.ended = "end";
          });
          res.on("error", () => {
            this.ended = "error";
          });
          resolve();
        },
      );
      req.on("error", (err) => {
        this.ended = "error";
        reject(err);
      });
      req.end();
      this.#req = req;
    });
  }

  #data(chunk: Buffer): void {
    this.chunks++;
    let start = 0;
    if (this.#tail) {
      // Only the line cut at the previous chunk's end is copied to be joined.
      const nl = chunk.indexOf(NEWLINE);
      if (nl < 0) {
        this.#tail = Buffer.concat([this.#tail, chunk]);
        return;
      }
      const line = Buffer.concat([this.#tail, chunk.subarray(0, nl + 1)]);
      this.#tail = undefined;
      this.#line(line, 0, line.length - 1);
      start = nl + 1;
    }
    for (;;) {
      const nl = chunk.indexOf(NEWLINE, start);
      if (nl < 0) break;
      this.#line(chunk, start, nl);
      start = nl + 1;
    }
    if (start < chunk.length) this.#tail = Buffer.from(chunk.subarray(start));
  }

  /** One event line: buf[start..nl). */
  #line(buf: Buffer, start: number, nl: number): void {
    this.events++;
    const at = buf.indexOf(this.#marker, start);
    if (at < 0 || at >= nl) return;
    let i = at + this.#marker.length;
    let seq = 0;
    for (; i < nl && buf[i] !== DASH; i++) seq = seq * 10 + (buf[i] - 48);
    let micros = 0;
    for (i++; i < nl; i++) {
      const d = buf[i] - 48;
      if (d < 0 || d > 9) break;
      micros = micros * 10 + d;
    }
    this.onEvent(micros, seq);
  }

  close(): void {
    this.#req?.destroy();
  }
}
