/**
 * Large JSON bodies parsed on a worker thread (job-thread.ts). JSON.parse of a
 * body of megabytes (a CRD whose schema has an enum of 100,000 values) takes tens
 * of milliseconds, all on the thread that runs it; on the worker only its own
 * request waits, and the event loop takes the parsed value as a structured clone,
 * which it reads in a fraction of that time.
 *
 * The worker also walks the value as decode.ts does on the event loop: it counts
 * the strings (keys and string values) and the quoted strings of the text, which
 * tell whether a key may repeat, and refuses a value nested deeper than the bound
 * before the value is sent (so no clone recurses deeper than that).
 */
import { JobThread } from "./job-thread.ts";

/** What the worker answers. */
export type JsonThreadResult =
  /**
   * The value; for an object or list, its number of strings and half the number
   * of quotes in its text (equal when no key repeats; see decode.ts).
   */
  | { ok: true; value: unknown; strings: number; quoted: number }
  /** Not JSON: JSON.parse's message. */
  | { ok: false; stage: "parse"; message: string }
  /** Nested deeper than the bound. */
  | { ok: false; stage: "depth" };

/** The worker's code (runs in the thread, self-contained: see job-thread.ts). */
function jsonWorkerMain(): void {
  const threads = require("node:worker_threads") as typeof import("node:worker_threads");
  const port = threads.parentPort;
  if (!port) return;
  /** Strings in `v` (keys and string values); -1 when it is nested deeper than `max`. */
  const countStrings = (v: unknown, depth: number, max: number): number => {
    if (depth > max) return -1;
    let n = 0;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const c: unknown = v[i];
        if (typeof c === "string") n++;
        else if (c !== null && typeof c === "object") {
          const k = countStrings(c, depth + 1, max);
          if (k < 0) return -1;
          n += k;
        }
      }
      return n;
    }
    const obj = v as Record<string, unknown>;
    for (const key in obj) {
      n++;
      const c = obj[key];
      if (typeof c === "string") n++;
      else if (c !== null && typeof c === "object") {
        const k = countStrings(c, depth + 1, max);
        if (k < 0) return -1;
        n += k;
      }
    }
    return n;
  };
  port.on("message", (m: { id: number; body: Uint8Array | string; maxDepth: number }) => {
    const text =
      typeof m.body === "string"
        ? m.body
        : Buffer.from(m.body.buffer, m.body.byteOffset, m.body.byteLength).toString("utf8");
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      port.postMessage({ id: m.id, ok: false, stage: "parse", message: (err as Error).message });
      return;
    }
    if (value === null || typeof value !== "object") {
      port.postMessage({ id: m.id, ok: true, value, strings: 0, quoted: 0 });
      return;
    }
    const strings = countStrings(value, 0, m.maxDepth);
    if (strings < 0) {
      port.postMessage({ id: m.id, ok: false, stage: "depth" });
      return;
    }
    let quotes = 0;
    for (let i = text.indexOf('"'); i >= 0; i = text.indexOf('"', i + 1)) quotes++;
    port.postMessage({ id: m.id, ok: true, value, strings, quoted: quotes / 2 });
  });
}

const jsonThread = new JobThread<{ body: Uint8Array | string; maxDepth: number }, JsonThreadResult>(
  "setpoint-json",
  jsonWorkerMain,
);

/** Parses `body` (JSON text, or its UTF-8 bytes) on the worker thread. */
export function parseJsonOffThread(
  body: Uint8Array | string,
  maxDepth: number,
): Promise<JsonThreadResult> {
  return jsonThread.run({ body, maxDepth });
}
