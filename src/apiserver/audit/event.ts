/**
 * Audit events: one `audit.k8s.io/v1` Event per stage of a request, built as
 * kube-apiserver builds them. The server begins a record once a request is
 * authenticated; the handler reports what only it knows (the authorization
 * decision, the impersonated user, the request body, an error Status) through the
 * functions below, keyed by the request or response; the record writes its
 * RequestReceived, ResponseStarted (long-running requests), ResponseComplete or Panic
 * events as the request goes.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { parse as parseYaml } from "yaml";
import { type RequestAttributes, sourceIPs } from "./attributes.ts";
import type { AuditLogWriter } from "./log-writer.ts";
import { type AuditDecision, atLeast, type Level, type Stage } from "./policy.ts";

export interface AuditUser {
  name: string;
  groups: readonly string[];
  uid?: string;
  extra?: Record<string, string[]>;
}

/** Response bodies longer than this are not kept for the event (it says so instead). */
export const MAX_RESPONSE_OBJECT_BYTES = 8 * 1024 * 1024;

interface ObjectRef {
  resource?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  apiGroup?: string;
  apiVersion?: string;
  resourceVersion?: string;
  subresource?: string;
}

interface ResponseStatus {
  metadata: Record<string, unknown>;
  status?: string;
  message?: string;
  reason?: string;
  details?: unknown;
  code?: number;
}

/** MicroTime: RFC 3339 with microseconds, UTC. */
export function microTime(epochMs: number): string {
  const ms = Math.floor(epochMs);
  const micros = Math.floor((epochMs - ms) * 1000);
  return new Date(ms)
    .toISOString()
    .replace(/\.(\d{3})Z$/, `.$1${String(micros).padStart(3, "0")}Z`);
}

function now(): number {
  return performance.timeOrigin + performance.now();
}

function userInfo(u: AuditUser | undefined): Record<string, unknown> {
  if (!u) return {};
  return {
    username: u.name,
    ...(u.uid ? { uid: u.uid } : {}),
    groups: [...u.groups],
    ...(u.extra && Object.keys(u.extra).length > 0 ? { extra: u.extra } : {}),
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function stripManagedFields(v: unknown): unknown {
  if (!isObject(v)) return v;
  const meta = v.metadata;
  if (isObject(meta) && "managedFields" in meta) {
    const { managedFields: _, ...rest } = meta;
    v = { ...v, metadata: rest };
  }
  const o = v as Record<string, unknown>;
  if (Array.isArray(o.items)) return { ...o, items: o.items.map(stripManagedFields) };
  return o;
}

/**
 * Reads a body of another encoding than JSON or YAML (the server's Kubernetes
 * protobuf) into its JSON form; undefined when it cannot. `response`: an answer of
 * the server rather than a request's body.
 */
export type OtherBodyDecoder = (body: Buffer, contentType: string, response: boolean) => unknown;

/**
 * A body as an object for the event (JSON, YAML, or what `other` reads, shown as
 * JSON as kube-apiserver shows it); undefined when it cannot be read.
 */
function decodeBody(
  body: Buffer,
  contentType: string | undefined,
  response: boolean,
  other: OtherBodyDecoder | undefined,
): unknown {
  if (body.length === 0) return undefined;
  const type = (contentType ?? "application/json").toLowerCase();
  try {
    if (type.includes("json")) return JSON.parse(body.toString("utf8"));
    if (type.includes("yaml")) return parseYaml(body.toString("utf8"));
    return other?.(body, type, response);
  } catch {
    return undefined;
  }
}

const records = new WeakMap<object, AuditRecord>();

/** Adds an annotation to the request's event (when it is audited). */
export function auditAnnotate(req: IncomingMessage, key: string, value: string): void {
  records.get(req)?.annotate(key, value);
}

/** The request is served as `user` (impersonation). */
export function auditImpersonated(req: IncomingMessage, user: AuditUser): void {
  records.get(req)?.impersonated(user);
}

/** The request's body as read. */
export function auditRequestBody(req: IncomingMessage, body: Buffer): void {
  records.get(req)?.requestBody(body, req.headers["content-type"]);
}

/** What a metav1.Status carries that an event keeps. */
export interface StatusLike {
  status?: string;
  message?: string;
  reason?: string;
  details?: unknown;
  code?: number;
}

/**
 * The Status the response carries (an error, or a success Status): its bounded
 * fields, as kube-apiserver copies them into the event.
 */
export function auditResponseStatus(res: ServerResponse, status: StatusLike): void {
  const record = records.get(res);
  if (!record) return;
  const out: ResponseStatus = { metadata: {} };
  if (status.status) out.status = status.status;
  if (status.message) out.message = status.message;
  if (status.reason) out.reason = status.reason;
  if (status.details !== undefined) out.details = status.details;
  if (status.code !== undefined) out.code = status.code;
  record.responseStatus(out);
}

/** kube-apiserver's message in the event of a request whose credentials were refused. */
export function failedAuthenticationMessage(req: IncomingMessage): string {
  const methods: string[] = [];
  const auth = String(req.headers.authorization ?? "").trim();
  const scheme = auth.split(" ")[0]?.toLowerCase();
  if (scheme === "basic") methods.push("basic");
  if (scheme === "bearer" && auth.split(" ").length > 1) methods.push("bearer");
  const q = (req.url ?? "").indexOf("?");
  if (q >= 0 && new URLSearchParams((req.url ?? "").slice(q + 1)).get("access_token")?.trim()) {
    methods.push("access_token");
  }
  const socket = req.socket as { getPeerCertificate?: () => { raw?: Buffer } };
  if (socket.getPeerCertificate?.()?.raw) methods.push("x509");
  return methods.length > 0
    ? `Authentication failed, attempted: ${methods.join(", ")}`
    : "Authentication failed, no credentials provided";
}

/** One audited request. */
export class AuditRecord {
  readonly #writer: AuditLogWriter;
  readonly #decodeOther: OtherBodyDecoder | undefined;
  readonly #decision: AuditDecision;
  readonly #event: Record<string, unknown>;
  readonly #objectRef: ObjectRef | undefined;
  readonly #received: string;
  readonly #annotations: Record<string, string> = {};
  #impersonated: AuditUser | undefined;
  #requestBody: { body: Buffer; contentType: string | undefined } | undefined;
  #status: ResponseStatus | undefined;
  #chunks: Buffer[] | undefined;
  #chunkBytes = 0;
  #done = false;

  constructor(
    writer: AuditLogWriter,
    decision: AuditDecision,
    auditID: string,
    req: IncomingMessage,
    attrs: RequestAttributes,
    user: AuditUser | undefined,
    decodeOther?: OtherBodyDecoder,
  ) {
    this.#writer = writer;
    this.#decodeOther = decodeOther;
    this.#decision = decision;
    this.#received = microTime(now());
    if (attrs.resourceRequest) {
      this.#objectRef = {
        resource: attrs.resource,
        ...(attrs.namespace ? { namespace: attrs.namespace } : {}),
        ...(attrs.name ? { name: attrs.name } : {}),
        ...(attrs.apiGroup ? { apiGroup: attrs.apiGroup } : {}),
        apiVersion: attrs.apiVersion,
        ...(attrs.subresource ? { subresource: attrs.subresource } : {}),
      };
    }
    const ua = req.headers["user-agent"];
    this.#event = {
      level: decision.level,
      auditID,
      requestURI: req.url ?? "/",
      verb: attrs.verb,
      user: userInfo(user),
      sourceIPs: sourceIPs(req),
      ...(ua ? { userAgent: ua } : {}),
    };
  }

  get level(): Level {
    return this.#decision.level;
  }

  annotate(key: string, value: string): void {
    this.#annotations[key] = value;
  }

  impersonated(user: AuditUser): void {
    this.#impersonated = user;
  }

  requestBody(body: Buffer, contentType: string | undefined): void {
    this.#requestBody = { body, contentType };
  }

  responseStatus(status: ResponseStatus): void {
    this.#status = status;
  }

  /** The handler failed unexpectedly: the Panic event, instead of ResponseComplete. */
  panic(err: unknown): void {
    this.#status = {
      metadata: {},
      status: "Failure",
      message: `APIServer panic'd: ${err instanceof Error ? err.message : String(err)}`,
      reason: "InternalError",
      code: 500,
    };
    this.emit("Panic");
  }

  /** Starts keeping the response's body (RequestResponse). */
  captureResponse(res: ServerResponse): void {
    this.#chunks = [];
    const keep = (chunk: unknown, encoding: unknown) => {
      if (!this.#chunks || chunk === undefined || chunk === null || typeof chunk === "function") {
        return;
      }
      const buf =
        typeof chunk === "string"
          ? Buffer.from(chunk, typeof encoding === "string" ? (encoding as BufferEncoding) : "utf8")
          : Buffer.isBuffer(chunk)
            ? chunk
            : Buffer.from(chunk as Uint8Array);
      this.#chunkBytes += buf.length;
      if (this.#chunkBytes > MAX_RESPONSE_OBJECT_BYTES) this.#chunks = undefined;
      else this.#chunks.push(buf);
    };
    const write = res.write;
    const end = res.end;
    res.write = function (this: ServerResponse, chunk: unknown, ...rest: unknown[]) {
      keep(chunk, rest[0]);
      return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
    } as typeof res.write;
    res.end = function (this: ServerResponse, chunk?: unknown, ...rest: unknown[]) {
      keep(chunk, rest[0]);
      return (end as (...a: unknown[]) => ServerResponse).call(this, chunk, ...rest);
    } as typeof res.end;
  }

  /** Writes the event of `stage` (unless the policy omits it). */
  emit(stage: Stage, res?: ServerResponse): void {
    if (this.#done) return;
    if (stage === "ResponseComplete" || stage === "Panic") this.#done = true;
    if (this.#decision.omitStages.has(stage)) return;
    const level = this.#decision.level;
    const ev: Record<string, unknown> = {
      kind: "Event",
      apiVersion: "audit.k8s.io/v1",
      level,
      auditID: this.#event.auditID,
      stage,
      requestURI: this.#event.requestURI,
      verb: this.#event.verb,
      user: this.#event.user,
    };
    if (this.#impersonated && stage !== "RequestReceived") {
      ev.impersonatedUser = userInfo(this.#impersonated);
    }
    ev.sourceIPs = this.#event.sourceIPs;
    if (this.#event.userAgent) ev.userAgent = this.#event.userAgent;
    const objectRef = this.#objectRef ? { ...this.#objectRef } : undefined;
    let requestObject: unknown;
    if (stage !== "RequestReceived" && this.#requestBody) {
      const decoded = decodeBody(
        this.#requestBody.body,
        this.#requestBody.contentType,
        false,
        this.#decodeOther,
      );
      if (objectRef && isObject(decoded) && isObject(decoded.metadata) && this.#isObjectBody()) {
        // As kube-apiserver fills in what the URL leaves out (a create's name).
        const m = decoded.metadata;
        if (!objectRef.namespace && typeof m.namespace === "string" && m.namespace) {
          objectRef.namespace = m.namespace;
        }
        if (!objectRef.name && typeof m.name === "string" && m.name) objectRef.name = m.name;
        if (typeof m.uid === "string" && m.uid) objectRef.uid = m.uid;
        if (typeof m.resourceVersion === "string" && m.resourceVersion) {
          objectRef.resourceVersion = m.resourceVersion;
        }
      }
      if (atLeast(level, "Request") && decoded !== undefined) {
        requestObject = this.#decision.omitManagedFields ? stripManagedFields(decoded) : decoded;
      }
    }
    if (objectRef) ev.objectRef = sortedRef(objectRef);
    if (stage === "Panic") {
      ev.responseStatus = this.#status ?? { metadata: {}, code: 500 };
    } else if (stage !== "RequestReceived" && res) {
      ev.responseStatus = this.#status
        ? { ...this.#status, code: this.#status.code ?? res.statusCode }
        : { metadata: {}, code: res.statusCode };
    }
    if (requestObject !== undefined) ev.requestObject = requestObject;
    if (stage === "ResponseComplete" && atLeast(level, "RequestResponse") && this.#chunks) {
      const body = Buffer.concat(this.#chunks);
      const type = String(res?.getHeader("content-type") ?? "");
      const decoded = decodeBody(body, type, true, this.#decodeOther);
      if (decoded !== undefined) {
        ev.responseObject = this.#decision.omitManagedFields
          ? stripManagedFields(decoded)
          : decoded;
      }
    }
    ev.requestReceivedTimestamp = this.#received;
    ev.stageTimestamp = microTime(now());
    if (stage !== "RequestReceived" && Object.keys(this.#annotations).length > 0) {
      ev.annotations = { ...this.#annotations };
    }
    let line: string;
    try {
      line = JSON.stringify(ev);
    } catch {
      return;
    }
    this.#writer.write(line);
  }

  /** A create's or update's body is the object; a patch's is not. */
  #isObjectBody(): boolean {
    return this.#event.verb === "create" || this.#event.verb === "update";
  }
}

const REF_ORDER: (keyof ObjectRef)[] = [
  "resource",
  "namespace",
  "name",
  "uid",
  "apiGroup",
  "apiVersion",
  "resourceVersion",
  "subresource",
];

function sortedRef(ref: ObjectRef): ObjectRef {
  const out: ObjectRef = {};
  for (const k of REF_ORDER) if (ref[k] !== undefined) out[k] = ref[k];
  return out;
}

export interface BeginOptions {
  writer: AuditLogWriter;
  decision: AuditDecision;
  req: IncomingMessage;
  res: ServerResponse;
  attrs: RequestAttributes;
  user: AuditUser | undefined;
  longRunning: boolean;
  decodeOther?: OtherBodyDecoder;
}

/** The request's audit ID: the client's `Audit-ID` header, or a new one. */
export function auditIdOf(req: IncomingMessage): string {
  const given = req.headers["audit-id"];
  const id = Array.isArray(given) ? given[0] : given;
  return id && id.length <= 128 ? id : randomUUID();
}

/**
 * The one event of a request whose credentials were refused, as kube-apiserver
 * writes it: stage ResponseStarted, no user, the methods tried in its status.
 */
export function failedAuthenticationRecord(
  o: Omit<BeginOptions, "user" | "longRunning">,
  auditID: string,
  message: string,
): void {
  const record = new AuditRecord(o.writer, o.decision, auditID, o.req, o.attrs, undefined);
  record.responseStatus({ metadata: {}, message, code: 401 });
  record.emit("ResponseStarted", o.res);
}

/**
 * Begins the record of an audited request (level above None): writes its
 * RequestReceived event and arranges the others.
 */
export function beginRecord(o: BeginOptions, auditID: string): AuditRecord {
  const record = new AuditRecord(
    o.writer,
    o.decision,
    auditID,
    o.req,
    o.attrs,
    o.user,
    o.decodeOther,
  );
  records.set(o.req, record);
  records.set(o.res, record);
  record.emit("RequestReceived");
  const { res } = o;
  if (o.longRunning) {
    const writeHead = res.writeHead;
    let started = false;
    res.writeHead = function (this: ServerResponse, ...args: unknown[]) {
      const out = (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args);
      if (!started) {
        started = true;
        record.emit("ResponseStarted", res);
      }
      return out;
    } as typeof res.writeHead;
  } else if (atLeast(o.decision.level, "RequestResponse")) {
    record.captureResponse(res);
  }
  res.once("close", () => record.emit("ResponseComplete", res));
  return record;
}
