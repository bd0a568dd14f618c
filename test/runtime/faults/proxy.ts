/**
 * A fault-injecting HTTP proxy in front of a real API server: the network and
 * server faults a controller meets in a real cluster, injected at random from a
 * seed, only into the requests of the client under test (recognised by its
 * User-Agent). Everyone else's requests pass untouched. Faults:
 *
 * - `error500`: a request answered 500 without reaching the server;
 * - `conflict409`: a write answered 409 Conflict without reaching the server;
 * - `lostAnswer`: a write reaches the server and commits, then the answer is
 *   replaced by a 500 (the client believes it failed);
 * - `expireResume`: a watch that resumes from a resourceVersion is answered
 *   410 Expired (the server's history moved on: the client must re-list);
 * - `loseEvent`: a watch event is lost in transit: it is cut off mid-line and
 *   the connection dropped, so neither it nor anything after it on that stream
 *   arrives;
 * - `cutWatchEveryMs`: now and then an open watch of the subject is cut.
 *
 * Every write that the server committed (2xx to POST, PUT, PATCH, DELETE) is
 * recorded, by whom, with the object's UID, resourceVersion and resulting
 * content, so a test can tell whether a write changed anything.
 */
import http from "node:http";
import type { KubeObject } from "../../../packages/api/src/meta.ts";
import { failure, type StatusReason } from "../../../packages/api/src/status.ts";
import { forward, listenHttp } from "../../helpers/http-proxy.ts";

export interface FaultPlan {
  /** Seed of the random choices (same seed, same sequence of choices). */
  seed: number;
  error500?: number;
  conflict409?: number;
  lostAnswer?: number;
  expireResume?: number;
  loseEvent?: number;
  cutWatchEveryMs?: number;
}

/** A write the server committed. */
export interface CommittedWrite {
  /** By the client under test. */
  subject: boolean;
  method: string;
  /** Request path without the query. */
  path: string;
  /** The resource (plural) the path names: "configmaps", "configmapsets". */
  resource: string;
  uid: string;
  /** After the write; "" for a delete (the last write of its object). */
  resourceVersion: string;
  /**
   * The object after the write without resourceVersion and managedFields, as
   * canonical JSON; "(deleted)" for a delete.
   */
  content: string;
  /** The server committed it but the client was told it failed (`lostAnswer`). */
  answerLost: boolean;
}

export interface FaultCounts {
  error500: number;
  conflict409: number;
  lostAnswer: number;
  expireResume: number;
  loseEvent: number;
  cutWatch: number;
}

export interface FaultProxy {
  readonly url: string;
  readonly writes: readonly CommittedWrite[];
  readonly injected: Readonly<FaultCounts>;
  /** Changes the fault rates from now on (the seed stays). */
  setPlan(plan: Partial<Omit<FaultPlan, "seed">>): void;
  close(): Promise<void>;
}

/** Counts with nothing injected yet. */
export function noFaults(): FaultCounts {
  return {
    error500: 0,
    conflict409: 0,
    lostAnswer: 0,
    expireResume: 0,
    loseEvent: 0,
    cutWatch: 0,
  };
}

const WRITE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** A small, fast seeded generator (mulberry32) returning numbers in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** JSON with object keys sorted, so equal objects print equally. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  if (v !== null && typeof v === "object") {
    const entries = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonicalJson(x)}`).join(",")}}`;
  }
  return JSON.stringify(v);
}

function contentOf(obj: KubeObject): string {
  const { resourceVersion: _rv, managedFields: _mf, ...metadata } = obj.metadata;
  return canonicalJson({ ...obj, metadata });
}

/**
 * The resource a request path names: /api/v1/namespaces/n/configmaps/x,
 * /apis/g/v/configmapsets/x/status, and collections (POST).
 */
export function resourceOf(method: string, path: string): string {
  const parts = path.split("/").filter(Boolean);
  let rest = parts[0] === "api" ? parts.slice(2) : parts.slice(3);
  if (rest[0] === "namespaces" && rest.length > 2) rest = rest.slice(2);
  if (rest[0] === "namespaces" && rest.length <= 2 && method !== "POST") return "namespaces";
  return rest[0] ?? "";
}

/**
 * Starts a proxy to `target` injecting `plan`'s faults into requests whose
 * User-Agent contains `subjectAgent`.
 */
export async function startFaultProxy(
  target: string,
  subjectAgent: string,
  plan: FaultPlan,
): Promise<FaultProxy> {
  const upstream = new URL(target);
  const agent = new http.Agent({ keepAlive: true });
  const random = seededRandom(plan.seed);
  const rates = { ...plan };
  const writes: CommittedWrite[] = [];
  const injected = noFaults();
  const watches = new Set<http.ServerResponse>();
  const chance = (p: number | undefined) => (p ?? 0) > 0 && random() < (p ?? 0);

  const proxy = await listenHttp(
    (req, res) => {
      const url = new URL(req.url ?? "/", "http://proxy");
      const isWatch =
        url.searchParams.get("watch") === "true" || url.searchParams.get("watch") === "1";
      const isWrite = WRITE_METHODS.has(req.method ?? "");
      const subject = (req.headers["user-agent"] ?? "").includes(subjectAgent);
      const fail = (code: number, reason: StatusReason, message: string) => {
        req.resume();
        res.writeHead(code, { "content-type": "application/json" });
        res.end(JSON.stringify(failure(code, reason, message).status));
      };
      if (subject && chance(rates.error500)) {
        injected.error500++;
        return fail(500, "InternalError", "injected: internal error");
      }
      if (subject && isWrite && chance(rates.conflict409)) {
        injected.conflict409++;
        return fail(
          409,
          "Conflict",
          "injected: the object has been modified; please apply your changes to the latest version and try again",
        );
      }
      if (
        subject &&
        isWatch &&
        url.searchParams.get("resourceVersion") &&
        chance(rates.expireResume)
      ) {
        injected.expireResume++;
        return fail(410, "Expired", "injected: too old resource version");
      }
      const loseAnswer = subject && isWrite && chance(rates.lostAnswer);
      forward(req, res, upstream, {
        agent,
        onResponse: (up) => {
          const code = up.statusCode ?? 502;
          if (isWatch && code === 200) {
            relayWatch(up, res, subject);
            return;
          }
          const chunks: Buffer[] = [];
          up.on("data", (c: Buffer) => chunks.push(c));
          up.on("error", () => res.destroy());
          up.on("end", () => {
            const body = Buffer.concat(chunks);
            if (isWrite && code >= 200 && code < 300) {
              record(req.method ?? "", url.pathname, body, subject, loseAnswer);
            }
            if (loseAnswer) {
              injected.lostAnswer++;
              return fail(500, "InternalError", "injected: the answer was lost");
            }
            res.writeHead(code, up.headers);
            res.end(body);
          });
        },
      });
    },
    () => {
      if (cutTimer) clearInterval(cutTimer);
      agent.destroy();
    },
  );

  function record(
    method: string,
    path: string,
    body: Buffer,
    subject: boolean,
    answerLost: boolean,
  ): void {
    let obj: KubeObject | undefined;
    try {
      obj = JSON.parse(body.toString("utf8")) as KubeObject;
    } catch {
      obj = undefined;
    }
    const meta = obj?.metadata;
    const deleted = method === "DELETE" || obj?.kind === "Status";
    const details = (obj as { details?: { uid?: string } } | undefined)?.details;
    writes.push({
      subject,
      method,
      path,
      resource: resourceOf(method, path),
      uid: meta?.uid ?? details?.uid ?? "",
      resourceVersion: deleted ? "" : (meta?.resourceVersion ?? ""),
      content: deleted || !obj ? "(deleted)" : contentOf(obj),
      answerLost,
    });
  }

  /** Relays a watch stream event by event, losing events (and the rest of the stream) at random. */
  function relayWatch(up: http.IncomingMessage, res: http.ServerResponse, subject: boolean): void {
    res.writeHead(200, up.headers);
    if (subject) watches.add(res);
    res.on("close", () => {
      watches.delete(res);
      up.destroy();
    });
    let pending = "";
    up.setEncoding("utf8");
    up.on("data", (chunk: string) => {
      pending += chunk;
      for (let nl = pending.indexOf("\n"); nl >= 0; nl = pending.indexOf("\n")) {
        const line = pending.slice(0, nl + 1);
        pending = pending.slice(nl + 1);
        if (subject && chance(rates.loseEvent)) {
          injected.loseEvent++;
          res.write(line.slice(0, Math.floor(line.length / 2)));
          res.destroy();
          return;
        }
        res.write(line);
      }
    });
    up.on("end", () => res.end(pending));
    up.on("error", () => res.destroy());
  }

  let cutTimer: NodeJS.Timeout | undefined;
  const scheduleCuts = () => {
    if (cutTimer) clearInterval(cutTimer);
    const every = rates.cutWatchEveryMs ?? 0;
    if (every <= 0) return;
    cutTimer = setInterval(() => {
      if (watches.size === 0 || random() < 0.5) return;
      const list = [...watches];
      injected.cutWatch++;
      list[Math.floor(random() * list.length)].destroy();
    }, every);
  };
  scheduleCuts();

  return {
    url: proxy.url,
    writes,
    injected,
    setPlan(next) {
      Object.assign(rates, next);
      if (next.cutWatchEveryMs !== undefined) scheduleCuts();
    },
    close: proxy.close,
  };
}
