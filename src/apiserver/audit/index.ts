/**
 * The audit log, as kube-apiserver keeps it (--audit-policy-file,
 * --audit-log-path): the policy decides each request's level and omitted stages,
 * the record writes one `audit.k8s.io/v1` Event per stage as a JSON line, and the
 * writer appends and rotates the file without ever holding up a request.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";
import { type AuditRoute, requestAttributes } from "./attributes.ts";
import {
  type AuditRecord,
  type AuditUser,
  auditIdOf,
  beginRecord,
  failedAuthenticationRecord,
  type OtherBodyDecoder,
} from "./event.ts";
import { type AuditLogOptions, AuditLogWriter } from "./log-writer.ts";
import { evaluatePolicy, type Policy } from "./policy.ts";

export type { AuditRoute } from "./attributes.ts";
export {
  type AuditUser,
  auditAnnotate,
  auditImpersonated,
  auditRequestBody,
  auditResponseStatus,
  failedAuthenticationMessage,
  microTime,
  type OtherBodyDecoder,
} from "./event.ts";
export { type AuditLogOptions, AuditLogWriter, DEFAULT_MAX_SIZE_MB } from "./log-writer.ts";
export {
  type AuditAttributes,
  type AuditDecision,
  evaluatePolicy,
  LEVELS,
  type Level,
  type Policy,
  PolicyError,
  parsePolicy,
  STAGES,
  type Stage,
  validatePolicy,
} from "./policy.ts";

export interface AuditOptions extends Omit<AuditLogOptions, "logger"> {
  policy: Policy;
}

export class Auditor {
  readonly #policy: Policy;
  readonly #writer: AuditLogWriter;
  readonly #decodeOther: OtherBodyDecoder | undefined;

  private constructor(policy: Policy, writer: AuditLogWriter, decodeOther?: OtherBodyDecoder) {
    this.#policy = policy;
    this.#writer = writer;
    this.#decodeOther = decodeOther;
  }

  /**
   * Opens the log (creating its directory) and returns the auditor. `decodeOther`
   * reads bodies that are neither JSON nor YAML (protobuf) for the events.
   */
  static async start(
    opts: AuditOptions,
    logger?: Logger,
    decodeOther?: OtherBodyDecoder,
  ): Promise<Auditor> {
    const { policy, ...log } = opts;
    const writer = new AuditLogWriter({ ...log, ...(logger ? { logger } : {}) });
    await writer.open();
    return new Auditor(policy, writer, decodeOther);
  }

  /**
   * Begins auditing a request: sets its Audit-Id header and, when the policy's level
   * for it is above None, writes its RequestReceived event and arranges the others.
   */
  begin(
    req: IncomingMessage,
    res: ServerResponse,
    user: AuditUser | undefined,
    path: string,
    query: URLSearchParams,
    route: AuditRoute,
    longRunning: boolean,
  ): AuditRecord | undefined {
    const auditID = auditIdOf(req);
    res.setHeader("Audit-Id", auditID);
    const attrs = requestAttributes(req, path, query, user, route);
    const decision = evaluatePolicy(this.#policy, attrs);
    if (decision.level === "None") return undefined;
    return beginRecord(
      {
        writer: this.#writer,
        decision,
        req,
        res,
        attrs,
        user,
        longRunning,
        ...(this.#decodeOther ? { decodeOther: this.#decodeOther } : {}),
      },
      auditID,
    );
  }

  /** The event of a request whose credentials were refused (answered 401). */
  failedAuthentication(
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    query: URLSearchParams,
    route: AuditRoute,
    message: string,
  ): void {
    const auditID = auditIdOf(req);
    res.setHeader("Audit-Id", auditID);
    const attrs = requestAttributes(req, path, query, undefined, route);
    const decision = evaluatePolicy(this.#policy, attrs);
    if (decision.level === "None" || decision.omitStages.has("ResponseStarted")) return;
    failedAuthenticationRecord(
      { writer: this.#writer, decision, req, res, attrs },
      auditID,
      message,
    );
  }

  /** Waits for the events written so far to reach the log. */
  flush(): Promise<void> {
    return this.#writer.flush();
  }

  close(): Promise<void> {
    return this.#writer.close();
  }
}
