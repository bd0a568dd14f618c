/**
 * Admission handlers for controller authors, as controller-runtime's admission
 * package gives them: a validating handler decides allowed or denied (with
 * warnings), a defaulting (mutating) handler changes the object and the JSON
 * patch the apiserver needs is computed from the change. Both take and give
 * AdmissionReview v1 (and v1beta1, answered in the version asked).
 */
import { createJsonPatch, deepClone, type KubeObject } from "@setpoint/api";

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

export interface GroupVersionResource {
  group: string;
  version: string;
  resource: string;
}

/** What the apiserver asks of a webhook (AdmissionReview's request). */
export interface AdmissionRequest<T extends KubeObject = KubeObject> {
  uid: string;
  kind: GroupVersionKind;
  resource: GroupVersionResource;
  subResource?: string;
  requestKind?: GroupVersionKind;
  requestResource?: GroupVersionResource;
  requestSubResource?: string;
  name?: string;
  namespace?: string;
  operation: "CREATE" | "UPDATE" | "DELETE" | "CONNECT";
  userInfo: {
    username?: string;
    uid?: string;
    groups?: string[];
    extra?: Record<string, string[]>;
  };
  /** The object to be stored; null on DELETE. */
  object: T | null;
  /** The stored object; null on CREATE. */
  oldObject: T | null;
  dryRun?: boolean;
  options?: Record<string, unknown>;
}

/** A webhook's answer, before it is put in an AdmissionReview. */
export interface AdmissionResponse {
  allowed: boolean;
  /** Why it was refused: the message kubectl shows after "denied the request: ". */
  status?: { code?: number; reason?: string; message?: string };
  patch?: string;
  patchType?: "JSONPatch";
  warnings?: string[];
}

/** Decides one request. */
export type AdmissionHandler = (req: AdmissionRequest) => Promise<AdmissionResponse>;

/** The answer that allows a request (with warnings, which kubectl prints). */
export function allowed(...warnings: string[]): AdmissionResponse {
  return warnings.length ? { allowed: true, warnings } : { allowed: true };
}

/** The answer that refuses a request with `message` (code 403 Forbidden by default). */
export function denied(message: string, code = 403): AdmissionResponse {
  const reason = code === 403 ? "Forbidden" : code === 422 ? "Invalid" : "BadRequest";
  return { allowed: false, status: { code, reason, message } };
}

/**
 * A validating handler: `validate` returns undefined (allowed), a message
 * (denied with it), or a full response.
 */
export function validatingHandler<T extends KubeObject>(
  validate: (
    req: AdmissionRequest<T>,
  ) => string | undefined | AdmissionResponse | Promise<string | undefined | AdmissionResponse>,
): AdmissionHandler {
  return async (req) => {
    const verdict = await validate(req as AdmissionRequest<T>);
    if (verdict === undefined) return allowed();
    if (typeof verdict === "string") return denied(verdict);
    return verdict;
  };
}

/**
 * A defaulting (mutating) handler: `mutate` changes a copy of the request's
 * object in place; the answer carries the JSON patch from the object as sent to
 * the changed copy (none when nothing changed). A thrown error denies the request
 * with its message.
 */
export function defaultingHandler<T extends KubeObject>(
  mutate: (obj: T, req: AdmissionRequest<T>) => void | Promise<void>,
): AdmissionHandler {
  return async (req) => {
    if (!req.object) return allowed();
    const changed = deepClone(req.object) as T;
    try {
      await mutate(changed, req as AdmissionRequest<T>);
    } catch (err) {
      return denied(err instanceof Error ? err.message : String(err), 400);
    }
    const ops = createJsonPatch(req.object, changed);
    if (ops.length === 0) return allowed();
    return {
      allowed: true,
      patchType: "JSONPatch",
      patch: Buffer.from(JSON.stringify(ops)).toString("base64"),
    };
  };
}
