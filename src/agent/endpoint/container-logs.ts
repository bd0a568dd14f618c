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
 * The files hold what the process wrote and nothing else (the process writes
 * them directly, so it keeps logging while the agent is down): no line carries
 * the time it was written. `timestamps`, `sinceSeconds` and `sinceTime` are
 * therefore refused with a 400 that says so, rather than answered wrongly.
 */
import { closeSync, existsSync, openSync, readSync, statSync } from "node:fs";
import type { ServerResponse } from "node:http";
import {
  type ContainerRecord,
  containerLogPath,
  LOG_MAX_FILES,
  type PodRecord,
  podLogDir,
} from "../pods/index.ts";

/** How often a followed log is looked at for new lines. */
export const FOLLOW_POLL_MS = 100;
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

/** The options of a request's query; 400 for what the files cannot answer. */
export function logOptions(query: URLSearchParams): LogOptions {
  for (const name of ["timestamps", "sinceSeconds", "sinceTime"]) {
    const v = query.get(name);
    if (v !== null && v !== "" && !(name === "timestamps" && !boolParam(query, name))) {
      throw new LogRequestError(
        400,
        `${name} is not supported by this node: its container logs do not record when each line was written`,
      );
    }
  }
  const opts: LogOptions = {
    follow: boolParam(query, "follow"),
    previous: boolParam(query, "previous"),
  };
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

/**
 * Answers a log request for a container of `record` (the response's headers not
 * yet sent). `current` gives the container's record as it is now: a followed log
 * ends once the run being read is no longer the running one.
 */
export async function serveContainerLog(
  res: ServerResponse,
  dataDir: string,
  record: PodRecord,
  container: string,
  opts: LogOptions,
  current: () => ContainerRecord | undefined,
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
  res.writeHead(200, { "Content-Type": "text/plain", "Cache-Control": "no-cache" });
  res.flushHeaders();
  let budget = opts.limitBytes ?? Number.POSITIVE_INFINITY;
  const emit = async (chunk: Buffer): Promise<boolean> => {
    if (res.destroyed || budget <= 0) return false;
    const part = chunk.length > budget ? chunk.subarray(0, budget) : chunk;
    budget -= part.length;
    if (part.length) await send(res, part);
    return budget > 0 && !res.destroyed;
  };

  // What is there now: the rotated copies, then the file up to its current size.
  const files = runFiles(path);
  let offset = sizeOf(path);
  const sizes = files.map((f) => (f === path ? offset : sizeOf(f)));
  let more = true;
  if (opts.tailLines !== undefined) {
    // Newest file first, until enough lines are in hand.
    let buf = Buffer.alloc(0);
    for (let i = files.length - 1; i >= 0; i--) {
      buf = Buffer.concat([readRange(files[i], 0, sizes[i]), buf]);
      if (tail(buf, opts.tailLines).length < buf.length) break;
    }
    more = await emit(tail(buf, opts.tailLines));
  } else {
    for (let i = 0; i < files.length && more; i++) {
      for (let from = 0; from < sizes[i] && more; from += CHUNK_BYTES) {
        more = await emit(readRange(files[i], from, Math.min(sizes[i], from + CHUNK_BYTES)));
      }
    }
  }

  const following = () => {
    const now = current();
    return Boolean(now?.process) && now?.restartCount === run;
  };
  while (more && opts.follow && !opts.previous && !res.destroyed) {
    const alive = following();
    const size = sizeOf(path);
    if (size < offset) {
      // Rotated: what was appended before the truncation is at the end of `.1`.
      const rotated = `${path}.1`;
      const end = sizeOf(rotated);
      if (end > offset) more = await emit(readRange(rotated, offset, end));
      offset = 0;
      continue;
    }
    if (size > offset) {
      const to = Math.min(size, offset + CHUNK_BYTES);
      more = await emit(readRange(path, offset, to));
      offset = to;
      continue;
    }
    if (!alive) break;
    await new Promise((r) => setTimeout(r, FOLLOW_POLL_MS));
  }
  if (!res.writableEnded) res.end();
}
