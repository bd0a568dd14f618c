/**
 * metav1.Status: the body of every error a client sees, and StatusError, the
 * exception that carries one through the server and the runtime client.
 */

export interface StatusCause {
  reason?: string | undefined;
  message?: string | undefined;
  field?: string | undefined;
}

export interface StatusDetails {
  name?: string | undefined;
  group?: string | undefined;
  kind?: string | undefined;
  uid?: string | undefined;
  causes?: StatusCause[] | undefined;
  retryAfterSeconds?: number | undefined;
}

export type StatusReason =
  | "BadRequest"
  | "Unauthorized"
  | "Forbidden"
  | "NotFound"
  | "AlreadyExists"
  | "Conflict"
  | "Gone"
  | "Expired"
  | "Invalid"
  | "MethodNotAllowed"
  | "NotAcceptable"
  | "RequestEntityTooLarge"
  | "UnsupportedMediaType"
  | "TooManyRequests"
  | "InternalError"
  | "ServiceUnavailable"
  | "Timeout"
  | "";

export interface Status {
  kind: "Status";
  apiVersion: "v1";
  metadata: { resourceVersion?: string | undefined; continue?: string | undefined };
  status: "Success" | "Failure";
  message?: string | undefined;
  reason?: StatusReason | undefined;
  details?: StatusDetails | undefined;
  code: number;
}

/** Field cause reasons Kubernetes uses in `details.causes[].reason`. */
export const CauseType = {
  NotFound: "FieldValueNotFound",
  Required: "FieldValueRequired",
  Duplicate: "FieldValueDuplicate",
  Invalid: "FieldValueInvalid",
  NotSupported: "FieldValueNotSupported",
  Forbidden: "FieldValueForbidden",
  TooLong: "FieldValueTooLong",
  TooMany: "FieldValueTooMany",
  TypeInvalid: "FieldValueTypeInvalid",
  UnknownField: "FieldValueUnknown",
  FieldManagerConflict: "FieldManagerConflict",
} as const;

/** An error that reaches the client as a Status with an HTTP code. */
export class StatusError extends Error {
  override name = "StatusError";
  constructor(readonly status: Status) {
    super(status.message ?? status.reason ?? `status ${status.code}`);
  }
  get code(): number {
    return this.status.code;
  }
  get reason(): StatusReason {
    return this.status.reason ?? "";
  }
}

export function failure(
  code: number,
  reason: StatusReason,
  message: string,
  details?: StatusDetails,
): StatusError {
  const status: Status = {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    code,
  };
  if (details) status.details = details;
  return new StatusError(status);
}

/** What an error is about: the resource ("configmaps"), its group, and the object's name. */
export interface ErrorSubject {
  group?: string | undefined;
  resource: string;
  name?: string | undefined;
}

function qualified(s: ErrorSubject): string {
  return s.group ? `${s.resource}.${s.group}` : s.resource;
}

function details(s: ErrorSubject, extra?: Partial<StatusDetails>): StatusDetails {
  const d: StatusDetails = { group: s.group ?? "", kind: s.resource, ...extra };
  if (s.name !== undefined) d.name = s.name;
  return d;
}

/** Constructors for the errors the API returns, with Kubernetes' messages. */
export const errors = {
  badRequest(message: string): StatusError {
    return failure(400, "BadRequest", message);
  },
  unauthorized(message = "Unauthorized"): StatusError {
    return failure(401, "Unauthorized", message);
  },
  forbidden(s: ErrorSubject, message: string): StatusError {
    const name = s.name ? ` "${s.name}"` : "";
    return failure(403, "Forbidden", `${qualified(s)}${name} is forbidden: ${message}`, details(s));
  },
  notFound(s: ErrorSubject): StatusError {
    const name = s.name ? ` "${s.name}"` : "";
    return failure(404, "NotFound", `${qualified(s)}${name} not found`, details(s));
  },
  alreadyExists(s: ErrorSubject): StatusError {
    return failure(
      409,
      "AlreadyExists",
      `${qualified(s)} "${s.name ?? ""}" already exists`,
      details(s),
    );
  },
  conflict(s: ErrorSubject, why: string): StatusError {
    return failure(
      409,
      "Conflict",
      `Operation cannot be fulfilled on ${qualified(s)} "${s.name ?? ""}": ${why}`,
      details(s),
    );
  },
  /**
   * 409 for server-side apply field ownership conflicts. Each cause names a field
   * (`.spec.replicas`) and, in its message, the manager (`conflict with "m" using v1`).
   * The message is Kubernetes': for one conflict `Apply failed with 1 conflict:
   * conflict with "m" using v1: .spec.replicas`; for several, grouped by manager in
   * the order the causes name them (`conflicts with "m" using v1:` then `- <field>` lines).
   */
  applyConflict(causes: StatusCause[]): StatusError {
    const n = causes.length;
    if (n === 1) {
      const c = causes[0];
      return failure(
        409,
        "Conflict",
        `Apply failed with 1 conflict: ${c.message ?? ""}: ${c.field ?? ""}`,
        { causes },
      );
    }
    const groups = new Map<string, string[]>();
    for (const c of causes) {
      const who = (c.message ?? "").replace(/^conflict with /, "");
      const fields = groups.get(who) ?? [];
      fields.push(c.field ?? "");
      groups.set(who, fields);
    }
    const lines: string[] = [];
    for (const [who, fields] of groups) {
      lines.push(`conflicts with ${who}:`);
      for (const f of fields) lines.push(`- ${f}`);
    }
    return failure(409, "Conflict", `Apply failed with ${n} conflicts: ${lines.join("\n")}`, {
      causes,
    });
  },
  gone(message: string): StatusError {
    return failure(410, "Gone", message);
  },
  /** 410 Expired: a watch or list from a compacted resourceVersion. */
  expired(message: string, continueToken?: string): StatusError {
    const e = failure(410, "Expired", message);
    if (continueToken) e.status.metadata.continue = continueToken;
    return e;
  },
  invalid(kind: string, name: string, causes: StatusCause[], group = ""): StatusError {
    const summary = causes
      .map((c) => (c.field ? `${c.field}: ${c.message ?? ""}` : (c.message ?? "")))
      .join(", ");
    const label = group ? `${kind}.${group}` : kind;
    return failure(422, "Invalid", `${label} "${name}" is invalid: ${summary}`, {
      name,
      group,
      kind,
      causes,
    });
  },
  methodNotAllowed(message: string): StatusError {
    return failure(405, "MethodNotAllowed", message);
  },
  notAcceptable(message: string): StatusError {
    return failure(406, "NotAcceptable", message);
  },
  tooLarge(message: string): StatusError {
    return failure(413, "RequestEntityTooLarge", message);
  },
  unsupportedMediaType(message: string): StatusError {
    return failure(415, "UnsupportedMediaType", message);
  },
  tooManyRequests(message: string, retryAfterSeconds = 1): StatusError {
    return failure(429, "TooManyRequests", message, { retryAfterSeconds });
  },
  internal(message: string): StatusError {
    return failure(500, "InternalError", `Internal error occurred: ${message}`);
  },
  unavailable(message: string): StatusError {
    return failure(503, "ServiceUnavailable", message);
  },
  timeout(message: string): StatusError {
    return failure(504, "Timeout", message);
  },
};

/** True if `v` looks like a metav1.Status body. */
export function isStatus(v: unknown): v is Status {
  return (
    typeof v === "object" &&
    v !== null &&
    (v as { kind?: unknown | undefined }).kind === "Status" &&
    typeof (v as { code?: unknown | undefined }).code === "number"
  );
}
