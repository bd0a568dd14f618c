/**
 * The deadline of a request that is not long-running, as kube-apiserver sets it:
 * `--request-timeout` (60 s by default), shortened by the client's `?timeout=` (a
 * Go duration; 0, a negative one or one past the maximum leaves the maximum; a
 * malformed one is a 400). A request still being worked on at its deadline is
 * answered 504 with the Status kube-apiserver's timeout filter writes, while its
 * work goes on in the background and whatever it writes later is dropped; one
 * whose answer had already started is cut off (its connection closed). Watches and
 * the streams of exec, attach, port-forward, logs and proxy have no deadline.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { errors } from "@setpoint/api";
import { closeAfterDraining } from "./drain.ts";

/** What kube-apiserver says for a request past its deadline (after "Timeout: "). */
export const TIMED_OUT_MESSAGE = "request did not complete within the allotted timeout";

/** kube-apiserver's message for a `?timeout=` that is not a Go duration. */
export const INVALID_TIMEOUT_MESSAGE = "invalid timeout specified in the request URL";

/**
 * The timeout filter's answer: apierrors.NewTimeoutError(message, 0) encoded as it
 * encodes it (a bare metav1.Status, without kind and apiVersion, a newline after),
 * which Go's server sends as text/plain (TIMED_OUT_CONTENT_TYPE).
 */
export const TIMED_OUT_BODY = `${JSON.stringify({
  metadata: {},
  status: "Failure",
  message: `Timeout: ${TIMED_OUT_MESSAGE}`,
  reason: "Timeout",
  details: {},
  code: 504,
})}\n`;

/** The content type Go's server gives TIMED_OUT_BODY (sniffed: no type was set). */
export const TIMED_OUT_CONTENT_TYPE = "text/plain; charset=utf-8";

/** Nanoseconds per unit of a Go duration. */
const UNITS: Record<string, number> = {
  ns: 1,
  us: 1e3,
  µs: 1e3,
  μs: 1e3,
  ms: 1e6,
  s: 1e9,
  m: 60e9,
  h: 3600e9,
};

/** Go's strconv-style quoting of a string in an error message. */
function quote(s: string): string {
  return JSON.stringify(s);
}

/**
 * A Go duration (time.ParseDuration: "300ms", "1.5h", "2h45m", "-1s", "0") in
 * milliseconds; throws an Error with Go's message when it is not one.
 */
export function parseGoDuration(text: string): number {
  const invalid = () => new Error(`time: invalid duration ${quote(text)}`);
  let s = text;
  let sign = 1;
  if (s.startsWith("-") || s.startsWith("+")) {
    if (s[0] === "-") sign = -1;
    s = s.slice(1);
  }
  if (s === "0") return 0;
  if (s === "") throw invalid();
  let nanos = 0;
  while (s !== "") {
    const m = /^([0-9]*)(?:\.([0-9]*))?/.exec(s)!;
    const whole = m[1];
    const frac = m[2];
    if (whole === "" && (frac === undefined || frac === "")) throw invalid();
    s = s.slice(m[0].length);
    const unitEnd = s.search(/[0-9.]/);
    const unit = unitEnd < 0 ? s : s.slice(0, unitEnd);
    if (unit === "") throw new Error(`time: missing unit in duration ${quote(text)}`);
    const scale = UNITS[unit];
    if (scale === undefined) {
      throw new Error(`time: unknown unit ${quote(unit)} in duration ${quote(text)}`);
    }
    s = s.slice(unit.length);
    nanos += Number(`${whole || "0"}.${frac || "0"}`) * scale;
    if (!Number.isFinite(nanos) || nanos > 2 ** 63) throw invalid();
  }
  return (sign * nanos) / 1e6;
}

/**
 * The time a request may take, in ms: `maximumMs`, or the client's `?timeout=`
 * when it is shorter and positive. Throws a 400 StatusError for a malformed one.
 */
export function requestDeadlineMs(query: URLSearchParams, maximumMs: number): number {
  const asked = query.get("timeout");
  if (!asked) return maximumMs;
  let ms: number;
  try {
    ms = parseGoDuration(asked);
  } catch (err) {
    throw errors.badRequest(`${INVALID_TIMEOUT_MESSAGE} - ${(err as Error).message}`);
  }
  return ms > 0 && ms < maximumMs ? ms : maximumMs;
}

/** Responses answered 504 at their deadline while their handler went on. */
const timedOut = new WeakSet<ServerResponse>();

/** Whether `res` was answered at its deadline (what its handler does later is dropped). */
export function isTimedOut(res: ServerResponse): boolean {
  return timedOut.has(res);
}

/**
 * Answers `res` with kube-apiserver's 504 Timeout if it is still unanswered in `ms`
 * (or cuts its connection if its answer started and has not ended); returns what
 * disarms it, called once the request's work is done. A request whose body has not
 * all arrived then has its connection closed after the answer, gracefully.
 */
export function armDeadline(req: IncomingMessage, res: ServerResponse, ms: number): () => void {
  // The headers set before the work began (Audit-Id) stay; the work's own do not.
  const before = res.getHeaderNames().map((name) => [name, res.getHeader(name)!] as const);
  const timer = setTimeout(() => {
    if (res.writableEnded || res.destroyed) return;
    timedOut.add(res);
    if (res.headersSent) {
      res.destroy();
      return;
    }
    for (const name of res.getHeaderNames()) res.removeHeader(name);
    for (const [name, value] of before) res.setHeader(name, value);
    if (!req.complete) {
      res.setHeader("Connection", "close");
      closeAfterDraining(req);
    }
    res.writeHead(504, {
      "Content-Type": TIMED_OUT_CONTENT_TYPE,
      "Content-Length": Buffer.byteLength(TIMED_OUT_BODY),
    });
    res.end(TIMED_OUT_BODY);
  }, ms);
  return () => clearTimeout(timer);
}
