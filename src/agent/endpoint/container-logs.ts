/**
 * GET /containerLogs/{namespace}/{pod}/{container}: a container's log, as the
 * kubelet serves it to the apiserver. The run is the current one (or, with
 * `previous`, the one before), chosen from the container's record as the kubelet
 * chooses it from the container's status, with its refusals worded as the
 * kubelet's (400, plain text). The run's file and its rotated copies (.4 oldest
 * ... .1, then the file itself) are read in order; `tailLines` keeps the last
 * lines, `limitBytes` stops after that many bytes, and `follow` keeps sending what
 * is appended (across a rotation) until the run ends or the caller goes.
 *
 * The files are in the CRI format (the log relay writes them, ../log-relay/):
 * each record is turned back into its line as the kubelet does, `timestamps`
 * prefixes the line with its time (nine fraction digits), `sinceSeconds` and
 * `sinceTime` skip the records written before, and `tailLines` counts records.
 * A run started without the relay (by an agent from before it, and adopted; or
 * with the relay switched off) has a file of the process's raw output: it is
 * served as it is, and `timestamps`, `sinceSeconds` and `sinceTime` are refused
 * for it with a 400 that says why, rather than answered wrongly. Which format a
 * file holds is read from its first line, as the kubelet picks its parser.
 */
import { closeSync, existsSync, openSync, readSync, statSync } from "node:fs";
import type { ServerResponse } from "node:http";
import { fixedTimestamp, parseRecord, parseTimestamp, pipesLeft } from "../log-relay/index.ts";
import {
  type ContainerRecord,
  containerLogPath,
  LOG_MAX_FILES,
  type PodRecord,
  podLogDir,
} from "../pods/index.ts";

/** How often a followed log is looked at for new lines. */
export const FOLLOW_POLL_MS = 100;
/** How long a followed log waits, once its run ended, for the relay to write the rest. */
export const RELAY_DRAIN_MS = 2_000;
/** Bytes read from a log file at once. */
const CHUNK_BYTES = 64 * 1024;

/** A refusal, answered with its code and text. */
export class LogRequestError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export interface LogOptions {
  follow: boolean;
  previous: boolean;
  timestamps?: boolean;
  /** Records written before this (ns since the epoch) are skipped. */
  sinceNs?: bigint;
  tailLines?: number;
  limitBytes?: number;
}

function intParam(query: URLSearchParams, name: string, min: number): number | undefined {
  const v = query.get(name);
  if (v === null || v === "") return undefined;
  const n = Number(v);
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(n) || n < min) {
    throw new LogRequestError(400, `${name} must be an integer of at least ${min}, got ${v}`);
  }
  return n;
}

function boolParam(query: URLSearchParams, name: string): boolean {
  const v = query.get(name);
  return v === "true" || v === "1" || v === "True" || v === "TRUE" || v === "t" || v === "T";
}

/** The options of a request's query (`now`: ms since the epoch, for sinceSeconds). */
export function logOptions(query: URLSearchParams, now: number = Date.now()): LogOptions {
  const opts: LogOptions = {
    follow: boolParam(query, "follow"),
    previous: boolParam(query, "previous"),
  };
  if (boolParam(query, "timestamps")) opts.timestamps = true;
  const seconds = intParam(query, "sinceSeconds", 1);
  if (seconds !== undefined) opts.sinceNs = BigInt(now - seconds * 1000) * 1_000_000n;
  const time = query.get("sinceTime");
  if (time) {
    const ns = parseTimestamp(time);
    if (ns === undefined) {
      throw new LogRequestError(400, `sinceTime must be an RFC 3339 time, got ${time}`);
    }
    // As the kubelet: the later of the two.
    if (opts.sinceNs === undefined || ns > opts.sinceNs) opts.sinceNs = ns;
  }
  const tail = intParam(query, "tailLines", 0);
  if (tail !== undefined) opts.tailLines = tail;
  const limit = intParam(query, "limitBytes", 1);
  if (limit !== undefined) opts.limitBytes = limit;
  return opts;
}

/**
 * Which run's file answers (its restart count), as the kubelet's
 * validateContainerLogStatus picks the container; a LogRequestError when none does.
 */
export function logRun(rec: ContainerRecord, podName: string, previous: boolean): number {
  const term = rec.terminated;
  const who = `container ${JSON.stringify(rec.name)} in pod ${JSON.stringify(podName)}`;
  // What the Pod's status shows: running (lastState: term), waiting (lastState:
  // term), or terminated (state: term).
  const lastRun = rec.process ? rec.restartCount - 1 : rec.restartCount;
  if (previous) {
    if ((rec.process || rec.waiting) && term?.containerID) return lastRun;
    throw new LogRequestError(
      400,
      `previous terminated container ${JSON.stringify(rec.name)} in pod ${JSON.stringify(podName)} not found`,
    );
  }
  if (rec.process) return rec.restartCount;
  if (!rec.waiting && term) {
    if (!term.containerID) throw new LogRequestError(400, `${who} is terminated`);
    return rec.restartCount;
  }
  if (term?.containerID) return lastRun;
  const reason = rec.waiting?.reason;
  if (reason === "ErrImagePull") {
    throw new LogRequestError(400, `${who} is waiting to start: image can't be pulled`);
  }
  if (reason === "ImagePullBackOff") {
    throw new LogRequestError(400, `${who} is waiting to start: trying and failing to pull image`);
  }
  if (reason) throw new LogRequestError(400, `${who} is waiting to start: ${reason}`);
  throw new LogRequestError(400, `${who} is waiting to start - no logs yet`);
}

/** The files of one run, oldest first (rotated copies, then the file itself). */
function runFiles(path: string): string[] {
  const out: string[] = [];
  for (let i = LOG_MAX_FILES - 1; i >= 1; i--) {
    if (existsSync(`${path}.${i}`)) out.push(`${path}.${i}`);
  }
  if (existsSync(path)) out.push(path);
  return out;
}

function readRange(path: string, from: number, to: number): Buffer {
  const fd = openSync(path, "r");
  try {
    const buf = Buffer.alloc(Math.max(0, to - from));
    let off = 0;
    while (off < buf.length) {
      const n = readSync(fd, buf, off, Math.min(CHUNK_BYTES, buf.length - off), from + off);
      if (n === 0) break;
      off += n;
    }
    return buf.subarray(0, off);
  } finally {
    closeSync(fd);
  }
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/** The last `lines` lines of `buf` (a last line without its newline counts). */
function tail(buf: Buffer, lines: number): Buffer {
  if (lines === 0) return buf.subarray(buf.length);
  let end = buf.length;
  if (end > 0 && buf[end - 1] === 0x0a) end--;
  let seen = 0;
  for (let i = end - 1; i >= 0; i--) {
    if (buf[i] === 0x0a && ++seen === lines) return buf.subarray(i + 1);
  }
  return buf;
}

/** Writes a chunk, waiting for the response to drain when it is full. */
function send(res: ServerResponse, chunk: Buffer): Promise<void> {
  if (res.write(chunk)) return Promise.resolve();
  return new Promise((done) => {
    const finish = () => {
      res.off("drain", finish);
      res.off("close", finish);
      done();
    };
    res.once("drain", finish);
    res.once("close", finish);
  });
}

/** The first line of a run's log (up to CHUNK_BYTES), empty when nothing is written yet. */
function firstLine(files: string[]): Buffer {
  for (const f of files) {
    const head = readRange(f, 0, Math.min(sizeOf(f), CHUNK_BYTES));
    if (!head.length) continue;
    const nl = head.indexOf(0x0a);
    return nl < 0 ? head : head.subarray(0, nl + 1);
  }
  return Buffer.alloc(0);
}

/**
 * Turns a CRI log's bytes into what the client reads: each record's line (with
 * its time first when asked), records before `since` left out. Bytes after the
 * last newline wait for the rest of their line.
 */
type LogStream = "stdout" | "stderr";

/** Bytes of one stream. */
interface StreamBytes {
  stream: LogStream;
  data: Buffer;
}

class CriLines {
  private rest: Buffer = Buffer.alloc(0);

  constructor(private readonly opts: LogOptions) {}

  /** The lines of `chunk`'s whole records, in runs of one stream each. */
  push(chunk: Buffer, final = false): StreamBytes[] {
    const data = this.rest.length ? Buffer.concat([this.rest, chunk]) : chunk;
    const runs: StreamBytes[] = [];
    let out: Buffer[] = [];
    let stream: LogStream | undefined;
    const flush = () => {
      if (out.length && stream) runs.push({ stream, data: Buffer.concat(out) });
      out = [];
    };
    let start = 0;
    for (;;) {
      const nl = data.indexOf(0x0a, start);
      if (nl < 0 && !(final && start < data.length)) break;
      const end = nl < 0 ? data.length : nl + 1;
      const rec = parseRecord(data.subarray(start, end));
      start = end;
      if (!rec) continue;
      if (this.opts.sinceNs !== undefined && (parseTimestamp(rec.time) ?? 0n) < this.opts.sinceNs) {
        continue;
      }
      if (rec.stream !== stream) {
        flush();
        stream = rec.stream;
      }
      if (this.opts.timestamps) out.push(Buffer.from(`${fixedTimestamp(rec.time)} `));
      out.push(rec.content);
    }
    flush();
    this.rest = Buffer.from(data.subarray(start));
    return runs;
  }
}

/** The inode of a file (0 when it is gone). */
function inodeOf(path: string): number {
  try {
    return statSync(path).ino;
  } catch {
    return 0;
  }
}

/**
 * Answers a log request for a container of `record` (the response's headers not
 * yet sent). `current` gives the container's record as it is now: a followed log
 * ends once the run being read is no longer the running one (and the relay has
 * written all it had of it).
 */
export async function serveContainerLog(
  res: ServerResponse,
  dataDir: string,
  record: PodRecord,
  container: string,
  opts: LogOptions,
  current: () => ContainerRecord | undefined,
): Promise<void> {
  await streamContainerLog(dataDir, record, container, opts, current, () => {
    res.writeHead(200, { "Content-Type": "text/plain", "Cache-Control": "no-cache" });
    res.flushHeaders();
    return {
      write: async (chunk) => {
        await send(res, chunk);
        return !res.destroyed;
      },
      gone: () => res.destroyed,
    };
  });
  if (!res.writableEnded) res.end();
}

/**
 * Where a log's lines go: `write` resolves once the chunk is taken, false when no
 * more is wanted; `stream` says whose lines they are (none: a raw file's bytes,
 * both streams as the process interleaved them).
 */
export interface LogSink {
  write(chunk: Buffer, stream?: "stdout" | "stderr"): Promise<boolean>;
  /** The reader went away. */
  gone(): boolean;
}

/**
 * Reads a container's log as serveContainerLog answers it, into the sink that
 * `open` gives once the request is known to be answerable (a LogRequestError is
 * thrown before). Attach follows a running container's output this way, from its
 * end (`tailLines: 0`).
 */
export async function streamContainerLog(
  dataDir: string,
  record: PodRecord,
  container: string,
  opts: LogOptions,
  current: () => ContainerRecord | undefined,
  open: () => LogSink,
): Promise<void> {
  const rec = current();
  if (!rec) throw new LogRequestError(404, `container ${JSON.stringify(container)} not found`);
  const meta = record.pod.metadata;
  const run = logRun(rec, meta.name ?? "", opts.previous);
  const path = containerLogPath(
    podLogDir(dataDir, meta.namespace ?? "default", meta.name ?? "", record.uid),
    container,
    run,
  );
  // What is there now: the rotated copies, then the file up to its current size.
  const files = runFiles(path);
  const head = firstLine(files);
  const cri = head.length
    ? parseRecord(head) !== undefined
    : !(rec.process && run === rec.restartCount && rec.process.logFormat !== "cri");
  if (!cri && (opts.timestamps || opts.sinceNs !== undefined)) {
    throw new LogRequestError(
      400,
      `container ${JSON.stringify(container)} in pod ${JSON.stringify(meta.name ?? "")}: this run's log was written without the log relay and does not record when each line was written (timestamps, sinceSeconds and sinceTime need a run started by this agent)`,
    );
  }
  const lines = cri ? new CriLines(opts) : undefined;
  const sink = open();
  let budget = opts.limitBytes ?? Number.POSITIVE_INFINITY;
  const write = async (chunk: Buffer, stream?: LogStream): Promise<boolean> => {
    if (sink.gone() || budget <= 0) return false;
    const part = chunk.length > budget ? chunk.subarray(0, budget) : chunk;
    budget -= part.length;
    if (part.length && !(await sink.write(part, stream))) return false;
    return budget > 0 && !sink.gone();
  };
  const emit = async (chunk: Buffer, final = false): Promise<boolean> => {
    if (!lines) return write(chunk);
    for (const run of lines.push(chunk, final)) {
      if (!(await write(run.data, run.stream))) return false;
    }
    return budget > 0 && !sink.gone();
  };

  let inode = inodeOf(path);
  let offset = sizeOf(path);
  const sizes = files.map((f) => (f === path ? offset : sizeOf(f)));
  let more = true;
  if (opts.tailLines !== undefined) {
    // Newest file first, until enough lines (records) are in hand.
    let buf = Buffer.alloc(0);
    for (let i = files.length - 1; i >= 0; i--) {
      buf = Buffer.concat([readRange(files[i], 0, sizes[i]), buf]);
      if (tail(buf, opts.tailLines).length < buf.length) break;
    }
    more = await emit(tail(buf, opts.tailLines), !opts.follow);
  } else {
    for (let i = 0; i < files.length && more; i++) {
      for (let from = 0; from < sizes[i] && more; from += CHUNK_BYTES) {
        const to = Math.min(sizes[i], from + CHUNK_BYTES);
        more = await emit(
          readRange(files[i], from, to),
          !opts.follow && i === files.length - 1 && to === sizes[i],
        );
      }
    }
  }

  const following = () => {
    const now = current();
    return Boolean(now?.process) && now?.restartCount === run;
  };
  let endedAt = 0;
  while (more && opts.follow && !opts.previous && !sink.gone()) {
    const alive = following();
    const ino = inodeOf(path);
    const size = sizeOf(path);
    if (ino !== inode && inode !== 0) {
      // Renamed away by the relay's rotation: the rest of what was read is now `.1`.
      const rotated = `${path}.1`;
      if (inodeOf(rotated) === inode) {
        const end = sizeOf(rotated);
        if (end > offset) more = await emit(readRange(rotated, offset, end));
      }
      inode = ino;
      offset = 0;
      continue;
    }
    if (size < offset) {
      // Copied and truncated (a file written without the relay): the rest is at the end of `.1`.
      const rotated = `${path}.1`;
      const end = sizeOf(rotated);
      if (end > offset) more = await emit(readRange(rotated, offset, end));
      offset = 0;
      continue;
    }
    inode ||= ino;
    if (size > offset) {
      const to = Math.min(size, offset + CHUNK_BYTES);
      more = await emit(readRange(path, offset, to));
      offset = to;
      continue;
    }
    if (!alive) {
      // The run ended: done once the relay has written all of it (its pipes are gone).
      endedAt ||= Date.now();
      if (!cri || !pipesLeft(path) || Date.now() - endedAt > RELAY_DRAIN_MS) break;
    }
    await new Promise((r) => setTimeout(r, FOLLOW_POLL_MS));
  }
  if (lines && more && !sink.gone()) await emit(Buffer.alloc(0), true);
}
