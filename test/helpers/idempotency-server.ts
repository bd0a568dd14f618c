/**
 * An HTTP endpoint that honours `Idempotency-Key` as payment APIs do: the first
 * request with a key performs the action and its answer is kept; a request with
 * the same key and the same body gets that answer again (with
 * `Idempotent-Replayed: true`) and performs nothing; the same key with a
 * different body is refused with 422; a request while the first with its key is
 * still running gets 409. `performed` lists every action actually performed.
 * `/plain` is an endpoint that ignores keys: every request performs the action.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface Performed {
  key: string;
  body: string;
  id: string;
}

export interface IdempotencyServer {
  /** Base URL; actions are POSTed to `${url}/charges` (or `${url}/plain`, which ignores keys). */
  url: string;
  /** The actions performed, in order. */
  performed: Performed[];
  /** Every request answered, replays and refusals included. */
  requests: number;
  close(): Promise<void>;
}

interface Kept {
  body: string;
  status: number;
  answer: string;
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => {
      text += c;
    });
    req.on("end", () => resolve(text));
    req.on("error", reject);
  });
}

export async function startIdempotencyServer(): Promise<IdempotencyServer> {
  const kept = new Map<string, Kept>();
  const running = new Set<string>();
  const state: IdempotencyServer = {
    url: "",
    performed: [],
    requests: 0,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const send = (res: http.ServerResponse, status: number, body: unknown, replayed = false) => {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (replayed) headers["idempotent-replayed"] = "true";
    res.writeHead(status, headers).end(typeof body === "string" ? body : JSON.stringify(body));
  };
  const server = http.createServer(async (req, res) => {
    state.requests++;
    const body = await readBody(req);
    if (req.method === "POST" && req.url === "/plain") {
      const id = `plain_${state.performed.length + 1}`;
      state.performed.push({ key: "", body, id });
      return send(res, 200, { id });
    }
    if (req.method !== "POST" || req.url !== "/charges")
      return send(res, 404, { error: "not found" });
    const key = req.headers["idempotency-key"];
    if (typeof key !== "string" || key === "") {
      return send(res, 400, { error: "an Idempotency-Key header is required" });
    }
    const first = kept.get(key);
    if (first) {
      if (first.body !== body) {
        return send(res, 422, {
          error: `Idempotency-Key ${key} was first used with a different request body`,
        });
      }
      return send(res, first.status, first.answer, true);
    }
    if (running.has(key))
      return send(res, 409, { error: `a request with key ${key} is in progress` });
    running.add(key);
    const id = `ch_${state.performed.length + 1}`;
    state.performed.push({ key, body, id });
    const answer = JSON.stringify({ id });
    kept.set(key, { body, status: 200, answer });
    running.delete(key);
    send(res, 200, answer);
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = state.close;
  state.close = () => {
    server.closeAllConnections();
    return close();
  };
  return state;
}
