/**
 * Writing responses: objects in the negotiated media type (JSON, YAML or
 * Kubernetes protobuf), errors as full
 * metav1.Status bodies, and warnings as `Warning: 299 - "..."` headers.
 */
import type { ServerResponse } from "node:http";
import { type Status, StatusError } from "@setpoint/api";
import { stringify as toYaml } from "yaml";
import { auditResponseStatus } from "../audit/event.ts";
import { encodeProtobufObject, PROTOBUF_CONTENT_TYPE } from "./protobuf/index.ts";

/** Warnings sent on one response at most; more are summarised in a last one. */
export const MAX_WARNINGS = 50;
/** Longest warning text sent, in characters; longer ones are truncated. */
export const MAX_WARNING_LENGTH = 1024;

/** Quotes text for a Warning header value: printable ASCII, with \" and \\ escaped. */
function quoteWarning(text: string): string {
  let out = '"';
  for (const ch of text) {
    const c = ch.codePointAt(0)!;
    if (ch === '"' || ch === "\\") out += `\\${ch}`;
    else if (c >= 0x20 && c < 0x7f) out += ch;
    else if (c === 0x0a) out += "\\n";
    else if (c === 0x09) out += "\\t";
    else if (c <= 0xffff) out += `\\u${c.toString(16).padStart(4, "0")}`;
    else out += `\\U${c.toString(16).padStart(8, "0")}`;
  }
  return `${out}"`;
}

/** The Warning header values for `warnings` (deduplicated, bounded). */
export function warningHeaders(warnings: readonly string[]): string[] {
  const unique = [...new Set(warnings)];
  const shown = unique.slice(0, MAX_WARNINGS).map((w) => {
    const text = w.length > MAX_WARNING_LENGTH ? `${w.slice(0, MAX_WARNING_LENGTH)}...` : w;
    return `299 - ${quoteWarning(text)}`;
  });
  if (unique.length > MAX_WARNINGS) {
    shown.push(`299 - ${quoteWarning(`${unique.length - MAX_WARNINGS} more warnings omitted`)}`);
  }
  return shown;
}

/** Sets the Warning headers (if any) on a response whose headers are not yet sent. */
export function setWarnings(res: ServerResponse, warnings: readonly string[]): void {
  if (warnings.length > 0 && !res.headersSent) res.setHeader("Warning", warningHeaders(warnings));
}

function byteLength(body: string | Buffer): number {
  return typeof body === "string" ? Buffer.byteLength(body) : body.length;
}

/** Serializes a body in a media type (protobuf: undefined when the body's kind has no encoding). */
export function serialize(body: unknown, mediaType: string): string | Buffer | undefined {
  if (mediaType === PROTOBUF_CONTENT_TYPE) return encodeProtobufObject(body);
  return mediaType === "application/yaml" ? toYaml(body) : JSON.stringify(body);
}

/** Writes a complete response with a body already serialized (text, or its UTF-8 bytes). */
export function writeRaw(
  res: ServerResponse,
  code: number,
  contentType: string,
  text: string | Buffer,
  warnings: readonly string[] = [],
): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  if (res.getHeaderNames().length === 0) {
    // Nothing set before: the headers go as one list, without the per-header
    // bookkeeping of setHeader.
    const headers: (string | string[] | number)[] = [
      "Content-Type",
      contentType,
      "Content-Length",
      byteLength(text),
      "Cache-Control",
      "no-cache, private",
    ];
    if (warnings.length > 0) headers.push("Warning", warningHeaders(warnings));
    res.writeHead(code, headers as string[]);
    res.end(text);
    return;
  }
  setWarnings(res, warnings);
  res.statusCode = code;
  res.setHeader("Content-Type", contentType);
  res.setHeader("Content-Length", byteLength(text));
  if (!res.hasHeader("Cache-Control")) res.setHeader("Cache-Control", "no-cache, private");
  res.end(text);
}

/** Writes `body` as JSON (or YAML when `mediaType` says so). */
export function writeObject(
  res: ServerResponse,
  code: number,
  body: unknown,
  opts: { mediaType?: string; contentType?: string; warnings?: readonly string[] } = {},
): void {
  const mediaType = opts.mediaType ?? "application/json";
  const text = serialize(body, mediaType);
  if (text === undefined) {
    // A kind without a protobuf encoding inside a protobuf answer (none is known): JSON.
    writeRaw(res, code, "application/json", JSON.stringify(body), opts.warnings);
    return;
  }
  writeRaw(res, code, opts.contentType ?? mediaType, text, opts.warnings);
}

/** Writes a metav1.Status (an error or a success status) with its code. */
export function writeStatus(
  res: ServerResponse,
  status: Status,
  warnings: readonly string[] = [],
  mediaType = "application/json",
): void {
  const body: Status = {
    kind: "Status",
    apiVersion: "v1",
    metadata: status.metadata ?? {},
    status: status.status,
    message: status.message,
    reason: status.reason,
    details: status.details,
    code: status.code,
  };
  if (body.message === undefined) delete body.message;
  if (!body.reason) delete body.reason;
  if (body.details === undefined) delete body.details;
  auditResponseStatus(res, body);
  // As Kubernetes does: a Status that says when to retry says it in the header too,
  // which is what clients (client-go's checkWait) act on for 429 and 5xx answers.
  const retryAfter = status.details?.retryAfterSeconds;
  if (retryAfter && retryAfter > 0 && !res.headersSent) res.setHeader("Retry-After", retryAfter);
  writeObject(res, status.code, body, { mediaType, warnings });
}

/** Writes a StatusError's Status. */
export function writeError(
  res: ServerResponse,
  err: StatusError,
  warnings: readonly string[] = [],
  mediaType = "application/json",
): void {
  writeStatus(res, err.status, warnings, mediaType);
}

export { StatusError };
