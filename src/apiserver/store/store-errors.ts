/**
 * Storage errors in Kubernetes' words: what a client sees when the store refuses
 * or fails an operation.
 */
import { type ErrorSubject, errors, failure, type StatusError } from "@setpoint/api";
import {
  AlreadyExistsError,
  CompactedError,
  ConflictError,
  FutureRevisionError,
  InvalidKeyError,
  NoSpaceError,
  NotFoundError,
  TooLargeError,
  UnavailableError,
} from "../../storage/errors.ts";

/** Kubernetes' message for a lost optimistic-concurrency race. */
export const CONFLICT_MESSAGE =
  "the object has been modified; please apply your changes to the latest version and try again";

/** Kubernetes' message for a list at a compacted resourceVersion. */
export const LIST_EXPIRED_MESSAGE = "The resourceVersion for the provided list is too old.";

/** 504 for a resourceVersion newer than the store has, with Kubernetes' cause. */
export function tooLargeResourceVersion(requested: number, current: number): StatusError {
  return failure(504, "Timeout", `Too large resource version: ${requested}, current: ${current}`, {
    causes: [{ reason: "ResourceVersionTooLarge", message: "Too large resource version" }],
    retryAfterSeconds: 1,
  });
}

/** The conflict error for `subject`. */
export function conflictError(subject: ErrorSubject, why = CONFLICT_MESSAGE): StatusError {
  return errors.conflict(subject, why);
}

/** Maps a storage error (or anything thrown) to the StatusError a client gets. */
export function statusFromStorage(err: unknown, subject: ErrorSubject): StatusError {
  if (err instanceof Error && err.name === "StatusError") return err as StatusError;
  if (err instanceof NotFoundError) return errors.notFound(subject);
  if (err instanceof AlreadyExistsError) return errors.alreadyExists(subject);
  if (err instanceof ConflictError) return conflictError(subject);
  if (err instanceof CompactedError) return errors.expired(LIST_EXPIRED_MESSAGE);
  if (err instanceof FutureRevisionError) {
    return tooLargeResourceVersion(err.requestedRevision, err.currentRevision);
  }
  // No object can have a name this long (names are validated far shorter): nothing
  // is there, as kube-apiserver answers.
  if (err instanceof TooLargeError && err.what === "key") return errors.notFound(subject);
  if (err instanceof TooLargeError) {
    return errors.tooLarge(`Request entity too large: ${err.message}`);
  }
  if (err instanceof InvalidKeyError) return errors.badRequest(err.message);
  if (err instanceof NoSpaceError) {
    // kube-apiserver answers etcd's error as an internal error; the Retry-After makes
    // clients (client-go, kubectl, the runtime) send the write again later.
    return failure(500, "InternalError", `Internal error occurred: ${err.message}`, {
      causes: [{ message: err.message }],
      retryAfterSeconds: 1,
    });
  }
  if (err instanceof UnavailableError) {
    return errors.unavailable(`storage is unavailable: ${err.message}`);
  }
  return errors.internal(err instanceof Error ? err.message : String(err));
}
