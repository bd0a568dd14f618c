/**
 * Typed errors of the runtime client. Every non-2xx answer from the API server
 * becomes an ApiError carrying the server's metav1.Status (or one synthesized from
 * the HTTP code when the body is not a Status), so callers branch on the reason
 * with the predicates below instead of parsing messages.
 */
import { failure, type Status, StatusError, type StatusReason } from "@setpoint/api";

/** A non-2xx answer from the API server. `status` is the Status the server sent (or an equivalent). */
export class ApiError extends StatusError {
  override name = "ApiError";
  constructor(
    status: Status,
    /** The request that failed, for messages: "GET /api/v1/namespaces/a/configmaps/b". */
    readonly request?: string,
  ) {
    super(status);
  }
}

/** Reasons Kubernetes clients infer from an HTTP code when the body is not a Status. */
const REASON_FOR_CODE: Record<number, StatusReason> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  405: "MethodNotAllowed",
  406: "NotAcceptable",
  409: "Conflict",
  410: "Gone",
  413: "RequestEntityTooLarge",
  415: "UnsupportedMediaType",
  422: "Invalid",
  429: "TooManyRequests",
  500: "InternalError",
  503: "ServiceUnavailable",
  504: "Timeout",
};

/** Longest piece of a non-Status body quoted in a synthesized message. */
const MAX_QUOTED_BODY = 512;

/** A Status for an answer whose body is not one (an HTML error page, a proxy's text...). */
export function synthesizeStatus(code: number, body: string, retryAfterSeconds?: number): Status {
  const reason = REASON_FOR_CODE[code] ?? (code >= 500 ? "InternalError" : "");
  const text = body.trim().slice(0, MAX_QUOTED_BODY);
  const message = text
    ? `the server responded with HTTP ${code}: ${text}`
    : `the server responded with HTTP ${code} and no body`;
  const details = retryAfterSeconds !== undefined ? { retryAfterSeconds } : undefined;
  return failure(code, reason, message, details).status;
}

function statusOf(e: unknown): Status | undefined {
  return e instanceof StatusError ? e.status : undefined;
}

function hasReason(e: unknown, reason: StatusReason, code?: number): boolean {
  const s = statusOf(e);
  if (!s) return false;
  if (s.reason === reason) return true;
  return code !== undefined && s.code === code && !s.reason;
}

/** 404 NotFound. */
export function isNotFound(e: unknown): boolean {
  return hasReason(e, "NotFound", 404);
}

/** 409 Conflict: a stale resourceVersion on update, or a server-side apply field conflict. */
export function isConflict(e: unknown): boolean {
  return hasReason(e, "Conflict", 409);
}

/** 409 AlreadyExists on create. */
export function isAlreadyExists(e: unknown): boolean {
  return hasReason(e, "AlreadyExists");
}

/** 410: Gone or Expired (a resourceVersion or continue token older than the server's history). */
export function isGone(e: unknown): boolean {
  const s = statusOf(e);
  return s !== undefined && (s.code === 410 || s.reason === "Gone" || s.reason === "Expired");
}

/** 422 Invalid: the object failed validation; `status.details.causes` names the fields. */
export function isInvalid(e: unknown): boolean {
  return hasReason(e, "Invalid", 422);
}

/** 403 Forbidden. */
export function isForbidden(e: unknown): boolean {
  return hasReason(e, "Forbidden", 403);
}

/** 401 Unauthorized. */
export function isUnauthorized(e: unknown): boolean {
  return hasReason(e, "Unauthorized", 401);
}

/** 429 TooManyRequests. */
export function isTooManyRequests(e: unknown): boolean {
  return hasReason(e, "TooManyRequests", 429);
}

/** 400 BadRequest. */
export function isBadRequest(e: unknown): boolean {
  return hasReason(e, "BadRequest", 400);
}

/** Any 5xx answer. */
export function isServerError(e: unknown): boolean {
  const s = statusOf(e);
  return s !== undefined && s.code >= 500 && s.code <= 599;
}

/** Network error codes after which the same request may succeed. */
const TRANSIENT_NETWORK_CODES = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENETDOWN",
  "UND_ERR_SOCKET",
  "ERR_STREAM_PREMATURE_CLOSE",
]);

/** A request that ran past its deadline (the client's own `timeoutMs`). */
export class RequestTimeoutError extends Error {
  override name = "RequestTimeoutError";
  readonly code = "ETIMEDOUT";
}

/**
 * Whether retrying the same request later may succeed: 429, 5xx (except 501),
 * 504 Timeout, and network errors (reset, refused, timed out...).
 */
export function isTransient(e: unknown): boolean {
  const s = statusOf(e);
  if (s) {
    if (s.code === 429 || s.reason === "TooManyRequests") return true;
    if (s.reason === "ServiceUnavailable" || s.reason === "Timeout") return true;
    return s.code >= 500 && s.code <= 599 && s.code !== 501;
  }
  const code = (e as { code?: unknown | undefined } | null)?.code;
  return typeof code === "string" && TRANSIENT_NETWORK_CODES.has(code);
}

/** The server's Retry-After hint in milliseconds, if it sent one. */
export function retryAfterMs(e: unknown): number | undefined {
  const s = statusOf(e)?.details?.retryAfterSeconds;
  return typeof s === "number" && s >= 0 ? s * 1000 : undefined;
}

/** Backoff of retryOnConflict. Defaults match client-go's DefaultRetry. */
export interface RetryOptions {
  /** Attempts in total, including the first. Default 5. */
  steps?: number | undefined;
  /** Delay before the second attempt, in ms. Default 10. */
  delayMs?: number | undefined;
  /** Each delay is the previous one times this. Default 1. */
  factor?: number | undefined;
  /** Up to this fraction of each delay is added at random. Default 0.1. */
  jitter?: number | undefined;
  /** Stop waiting and rethrow when aborted. */
  signal?: AbortSignal | undefined;
}

/** Defaults of RetryOptions. */
export const DEFAULT_RETRY = { steps: 5, delayMs: 10, factor: 1, jitter: 0.1 } as const;

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Runs `fn` (which should read the latest object, modify it and write it) again
 * whenever it fails with 409 Conflict, with a short backoff, up to `steps` attempts.
 * Any other error, or the last conflict, is rethrown.
 */
export async function retryOnConflict<T>(fn: () => Promise<T>, opts?: RetryOptions): Promise<T> {
  const steps = Math.max(1, opts?.steps ?? DEFAULT_RETRY.steps);
  let delay = opts?.delayMs ?? DEFAULT_RETRY.delayMs;
  const factor = opts?.factor ?? DEFAULT_RETRY.factor;
  const jitter = opts?.jitter ?? DEFAULT_RETRY.jitter;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (!isConflict(e) || attempt >= steps) throw e;
    }
    await sleep(delay * (1 + Math.random() * jitter), opts?.signal);
    delay *= factor;
  }
}

/** The server does not serve the asked-for kind (its CRD may not exist yet). */
export class NoKindMatchError extends Error {
  override name = "NoKindMatchError";
  readonly code = "NO_KIND_MATCH";
  constructor(
    readonly apiVersion: string,
    readonly kind: string,
  ) {
    super(`no matches for kind "${kind}" in version "${apiVersion}"`);
  }
}

/** Whether the server does not (yet) serve the asked-for kind. */
export function isNoKindMatch(e: unknown): boolean {
  return e instanceof NoKindMatchError;
}
