/**
 * The CRI container log format, as container runtimes write it for the kubelet:
 * one record a line, `<time> <stream> <tag> <content>`, where the time is
 * RFC 3339 with nanoseconds (trailing zeros dropped, as Go's RFC3339Nano writes
 * it), the stream `stdout` or `stderr`, and the tag `F` for a full line or `P`
 * for a part of a longer one (the rest follows in the next records). Example:
 * `2016-10-06T00:17:09.669794202Z stdout F log line`.
 *
 * Reading it back is the kubelet's job: a record's content is its line (a full
 * line keeps its newline, a part does not), and `kubectl logs --timestamps`
 * prefixes each with its time written with all nine digits (RFC3339NanoFixed).
 */

/** The longest line written as one record; longer lines are split into `P` records. */
export const MAX_LINE_BYTES = 16 * 1024;

export type LogStream = "stdout" | "stderr";

/** The wall clock in nanoseconds since the epoch (hrtime's resolution on Date's origin). */
const originNs = BigInt(Date.now()) * 1_000_000n - process.hrtime.bigint();
export function nowNs(): bigint {
  return originNs + process.hrtime.bigint();
}

/** `ns` (since the epoch) as RFC 3339 in UTC with its fraction; `fixed`: all nine digits. */
export function formatTimestamp(ns: bigint, fixed = false): string {
  const ms = Number(ns / 1_000_000n);
  const seconds = new Date(ms - (ms % 1000)).toISOString().slice(0, 19);
  let frac = (ns % 1_000_000_000n).toString().padStart(9, "0");
  if (!fixed) frac = frac.replace(/0+$/, "");
  return `${seconds}${frac ? `.${frac}` : ""}Z`;
}

const TIMESTAMP = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/;

/** Nanoseconds since the epoch of an RFC 3339 time (any number of fraction digits); undefined if not one. */
export function parseTimestamp(text: string): bigint | undefined {
  const m = TIMESTAMP.exec(text);
  if (!m) return undefined;
  const ms = Date.parse(`${m[1]}${m[3]}`);
  if (Number.isNaN(ms)) return undefined;
  return BigInt(ms) * 1_000_000n + BigInt((m[2] ?? "").padEnd(9, "0"));
}

/** A time read from a log as the kubelet writes it out: nine fraction digits, the same zone. */
export function fixedTimestamp(text: string): string {
  const m = TIMESTAMP.exec(text);
  if (!m) return text;
  return `${m[1]}.${(m[2] ?? "").padEnd(9, "0")}${m[3]}`;
}

/** One record of a log. */
export interface LogRecord {
  /** The time as written in the file. */
  time: string;
  stream: LogStream;
  partial: boolean;
  /** The content: with its newline for a full line, without for a part. */
  content: Buffer;
}

const SPACE = 0x20;
const NEWLINE = 0x0a;

/** Parses one line of a CRI log (with or without its newline); undefined when it is not one. */
export function parseRecord(line: Buffer): LogRecord | undefined {
  const a = line.indexOf(SPACE);
  if (a < 0) return undefined;
  const time = line.toString("latin1", 0, a);
  if (!TIMESTAMP.test(time)) return undefined;
  const b = line.indexOf(SPACE, a + 1);
  if (b < 0) return undefined;
  const stream = line.toString("latin1", a + 1, b);
  if (stream !== "stdout" && stream !== "stderr") return undefined;
  const c = line.indexOf(SPACE, b + 1);
  if (c < 0) return undefined;
  // Tags are separated by ':'; the first says full or partial (forward compatible, as the kubelet reads it).
  const partial = line.toString("latin1", b + 1, c).split(":")[0] === "P";
  let content = line.subarray(c + 1);
  if (partial && content.length && content[content.length - 1] === NEWLINE) {
    content = content.subarray(0, content.length - 1);
  }
  return { time, stream, partial, content };
}

/** Whether a log's first line is a CRI record (else the file holds a process's raw output). */
export function isCriLog(firstLine: Buffer): boolean {
  return parseRecord(firstLine) !== undefined;
}

/**
 * Turns a stream's output into records as it arrives: whole lines become `F`
 * records stamped with the time they arrived; a line longer than MAX_LINE_BYTES
 * is cut into `P` records; the rest of a line waits for its end (or `end()`).
 */
export class LineFramer {
  private pending: Buffer = Buffer.alloc(0);

  constructor(private readonly stream: LogStream) {}

  /** The records of `chunk` (with what was pending before it), as one buffer to append. */
  push(chunk: Buffer, ns: bigint = nowNs()): Buffer {
    const data = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    const out: Buffer[] = [];
    const head = Buffer.from(`${formatTimestamp(ns)} ${this.stream} `, "latin1");
    let start = 0;
    for (;;) {
      const nl = data.indexOf(NEWLINE, start);
      const end = nl < 0 ? data.length : nl;
      if (end - start >= MAX_LINE_BYTES) {
        // Too long for one record: this part now, the rest continues.
        out.push(head, PARTIAL, data.subarray(start, start + MAX_LINE_BYTES), NEWLINE_BUF);
        start += MAX_LINE_BYTES;
        continue;
      }
      if (nl < 0) break;
      out.push(head, FULL, data.subarray(start, nl + 1));
      start = nl + 1;
    }
    this.pending = Buffer.from(data.subarray(start));
    return Buffer.concat(out);
  }

  /** What is left of an unfinished last line, as a full record (the stream ended). */
  end(ns: bigint = nowNs()): Buffer {
    if (!this.pending.length) return Buffer.alloc(0);
    const rest = this.pending;
    this.pending = Buffer.alloc(0);
    return Buffer.concat([
      Buffer.from(`${formatTimestamp(ns)} ${this.stream} F `, "latin1"),
      rest,
      NEWLINE_BUF,
    ]);
  }
}

const FULL = Buffer.from("F ");
const PARTIAL = Buffer.from("P ");
const NEWLINE_BUF = Buffer.from("\n");
