/**
 * Reading a request: its URL, the body (bounded), and the typed query
 * options Kubernetes defines (booleans and integers parsed the way Go parses them).
 */
import type { IncomingMessage } from "node:http";
import { errors } from "@setpoint/api";
import { auditRequestBody } from "../audit/event.ts";

/** The parts of a request's URL the handler reads. */
export interface RequestUrl {
  pathname: string;
  searchParams: URLSearchParams;
}

/**
 * A request path WHATWG URL parsing leaves as it is: no dot segments, percent
 * escapes, backslashes or characters it would encode, and not starting with "//".
 */
const PLAIN_PATH = /^\/(?!\/)[A-Za-z0-9\-_.~/:@]*$/;
const DOT_SEGMENT = /\/\.\.?(\/|$)/;
/** A "." or ".." segment, also percent-encoded (which WHATWG URL parsing resolves too). */
const ANY_DOT_SEGMENT = /\/(?:\.|%2e){1,2}(?:[/\\]|$)/i;
/** A query WHATWG URL parsing reads as it stands: printable ASCII, no fragment. */
const PLAIN_QUERY = /^[!-"$-~]*$/;

/**
 * The path and query of a request target, as `new URL(target, base)` reads them;
 * plain paths (nearly all of them) are split directly, which is much cheaper.
 * Null when the target is not a URL.
 */
export function requestUrl(target: string): RequestUrl | null {
  const q = target.indexOf("?");
  const path = q < 0 ? target : target.slice(0, q);
  const query = q < 0 ? "" : target.slice(q + 1);
  if (PLAIN_PATH.test(path) && !DOT_SEGMENT.test(path) && PLAIN_QUERY.test(query)) {
    // The constructor drops one leading "?": give it the one the target had.
    return { pathname: path, searchParams: new URLSearchParams(`?${query}`) };
  }
  if (ANY_DOT_SEGMENT.test(path)) {
    // Never resolved: `.../configmaps/..` must not reach the namespace. The route
    // parser refuses dot segments, so such a path names nothing (404).
    try {
      return { pathname: path, searchParams: new URLSearchParams(`?${query}`) };
    } catch {
      return null;
    }
  }
  try {
    return new URL(target, "http://localhost");
  } catch {
    return null;
  }
}

/** The request entity is larger than the limit: answer 413 and close the connection. */
export function bodyTooLarge(limit: number) {
  return errors.tooLarge(`Request entity too large: limit is ${limit}`);
}

/**
 * Reads the whole body, refusing (413) anything over `limit` bytes, whether the
 * client declared its length or streams it.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) {
    return Promise.reject(bodyTooLarge(limit));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (err: Error | null, body?: Buffer) => {
      if (done) return;
      done = true;
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("aborted", onAborted);
      if (err) reject(err);
      else resolve(body ?? Buffer.alloc(0));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        finish(bodyTooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    // A body that came in one piece is used as it is.
    const onEnd = () => {
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
      auditRequestBody(req, body);
      finish(null, body);
    };
    const onError = (err: Error) => finish(err);
    const onAborted = () => finish(new Error("request aborted"));
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("aborted", onAborted);
  });
}

/** Go's strconv.ParseBool, which Kubernetes uses for boolean query parameters. */
export function parseGoBool(s: string): boolean | undefined {
  switch (s) {
    case "1":
    case "t":
    case "T":
    case "true":
    case "TRUE":
    case "True":
      return true;
    case "0":
    case "f":
    case "F":
    case "false":
    case "FALSE":
    case "False":
      return false;
    default:
      return undefined;
  }
}

/** Typed access to a request's query parameters; malformed values are 400s. */
export class Query {
  constructor(readonly params: URLSearchParams) {}

  /** The parameter's value, or undefined when absent. */
  string(name: string): string | undefined {
    const v = this.params.get(name);
    return v === null ? undefined : v;
  }

  /** Every value of a repeated parameter (e.g. dryRun=All&dryRun=All). */
  strings(name: string): string[] {
    return this.params.getAll(name);
  }

  has(name: string): boolean {
    return this.params.has(name);
  }

  /** A boolean parameter; an empty value counts as absent. */
  bool(name: string): boolean | undefined {
    const v = this.params.get(name);
    if (v === null || v === "") return undefined;
    const b = parseGoBool(v);
    if (b === undefined) {
      throw errors.badRequest(`strconv.ParseBool: parsing ${JSON.stringify(v)}: invalid syntax`);
    }
    return b;
  }

  /** An integer parameter; an empty value counts as absent. */
  int(name: string): number | undefined {
    const v = this.params.get(name);
    if (v === null || v === "") return undefined;
    if (!/^[+-]?\d+$/.test(v) || !Number.isSafeInteger(Number(v))) {
      throw errors.badRequest(`strconv.ParseInt: parsing ${JSON.stringify(v)}: invalid syntax`);
    }
    return Number(v);
  }
}
