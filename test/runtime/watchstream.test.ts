import { Readable } from "node:stream";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../packages/api/src/meta.ts";
import {
  JsonObjectSplitter,
  WATCH_BUFFER_HIGH_WATER,
  WatchDecodeError,
  type WatchEvent,
  WatchIdleError,
  WatchStream,
} from "../../packages/runtime/src/client/watch-stream.ts";

/** Cuts `bytes` at the given offsets (sorted, deduplicated, inside the buffer). */
function cut(bytes: Buffer, offsets: number[]): Buffer[] {
  const points = [...new Set(offsets.map((o) => o % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let prev = 0;
  for (const p of points) {
    if (p > prev) out.push(bytes.subarray(prev, p));
    prev = p;
  }
  if (prev < bytes.length) out.push(bytes.subarray(prev));
  return out;
}

async function collect<T extends KubeObject>(s: WatchStream<T>): Promise<WatchEvent<T>[]> {
  const out: WatchEvent<T>[] = [];
  for await (const ev of s) out.push(ev);
  return out;
}

function streamOf(chunks: Buffer[]): WatchStream {
  return new WatchStream(async () => Readable.from(chunks, { objectMode: false }));
}

const arbObject = fc.record({
  apiVersion: fc.constant("v1"),
  kind: fc.constant("ConfigMap"),
  metadata: fc.record({
    name: fc.string({ minLength: 1, maxLength: 12 }),
    resourceVersion: fc.nat().map(String),
  }),
  data: fc.dictionary(
    fc.string({ maxLength: 8 }),
    // Strings with braces, quotes, backslashes, newlines and multi-byte characters.
    fc.string({
      unit: fc.constantFrom("{", "}", "[", "]", '"', "\\", "\n", "a", "é", "字", "😀", " "),
      maxLength: 20,
    }),
  ),
});

const arbEvent = fc.record({
  type: fc.constantFrom("ADDED", "MODIFIED", "DELETED", "BOOKMARK"),
  object: arbObject,
});

describe("JsonObjectSplitter", () => {
  it("cuts objects however the text is chunked, with or without newlines", () => {
    fc.assert(
      fc.property(
        fc.array(arbEvent, { maxLength: 8 }),
        fc.constantFrom("\n", "", "\r\n", "  \n\n"),
        fc.array(fc.nat(), { maxLength: 12 }),
        (events, sep, offsets) => {
          const text = events.map((e) => JSON.stringify(e) + sep).join("");
          const s = new JsonObjectSplitter();
          const out: unknown[] = [];
          const points = [...new Set(offsets.map((o) => o % (text.length + 1)))].sort(
            (a, b) => a - b,
          );
          let prev = 0;
          for (const p of [...points, text.length]) {
            out.push(...s.push(text.slice(prev, p)));
            prev = p;
          }
          expect(out).toEqual(events);
          expect(s.pending).toBe(0);
        },
      ),
    );
  });

  it("refuses text that is not a sequence of objects", () => {
    expect(() => new JsonObjectSplitter().push("not json")).toThrow(WatchDecodeError);
    expect(() => new JsonObjectSplitter().push('{"a":tru}')).toThrow(WatchDecodeError);
  });

  it("bounds the size of one object", () => {
    const s = new JsonObjectSplitter(100);
    expect(() => s.push(`{"a":"${"x".repeat(200)}`)).toThrow(/exceeds 100/);
  });
});

describe("WatchStream", () => {
  it("decodes events from byte chunks cut anywhere, including inside UTF-8 characters", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(arbEvent, { maxLength: 6 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        async (events, offsets) => {
          const bytes = Buffer.from(events.map((e) => `${JSON.stringify(e)}\n`).join(""));
          const got = await collect(streamOf(cut(bytes, offsets)));
          expect(got).toEqual(events);
        },
      ),
      { numRuns: 60 },
    );
  });

  it("applies the transform to objects but not to ERROR statuses", async () => {
    const status = { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", code: 410 };
    const body = [
      JSON.stringify({ type: "ADDED", object: { metadata: { name: "a" } } }),
      JSON.stringify({ type: "ERROR", object: status }),
    ].join("\n");
    const s = new WatchStream(async () => Readable.from([Buffer.from(body)]), {
      transform: (o) => ({ ...o, kind: "Thing" }),
    });
    const got = await collect(s);
    expect(got[0]).toEqual({ type: "ADDED", object: { kind: "Thing", metadata: { name: "a" } } });
    expect(got[1]).toEqual({ type: "ERROR", object: status });
  });

  it("fails on an unknown event type, and on a stream cut inside an event", async () => {
    const bad = streamOf([Buffer.from('{"type":"WEIRD","object":{}}\n')]);
    await expect(collect(bad)).rejects.toBeInstanceOf(WatchDecodeError);
    const truncated = streamOf([Buffer.from('{"type":"ADDED","object":{"metadata":')]);
    await expect(collect(truncated)).rejects.toThrow(/middle of an event/);
  });

  it("surfaces the error of the request that opened it", async () => {
    const s = new WatchStream(async () => {
      throw new Error("refused");
    });
    await expect(collect(s)).rejects.toThrow("refused");
  });

  it("fails with WatchIdleError when nothing arrives within the idle deadline", async () => {
    const body = new Readable({ read() {} });
    body.push(`${JSON.stringify({ type: "ADDED", object: { metadata: { name: "a" } } })}\n`);
    const s = new WatchStream(async () => body, { idleTimeoutMs: 80 });
    const got: WatchEvent[] = [];
    await expect(
      (async () => {
        for await (const ev of s) got.push(ev);
      })(),
    ).rejects.toBeInstanceOf(WatchIdleError);
    expect(got).toHaveLength(1);
    expect(body.destroyed).toBe(true);
  });

  it("ends quietly on close(), and breaking out of the loop destroys the body", async () => {
    const body = new Readable({ read() {} });
    const s = new WatchStream(async () => body);
    setTimeout(() => s.close(), 20);
    expect(await collect(s)).toEqual([]);
    expect(body.destroyed).toBe(true);

    const body2 = new Readable({ read() {} });
    body2.push(`${JSON.stringify({ type: "ADDED", object: { metadata: { name: "a" } } })}\n`);
    const s2 = new WatchStream(async () => body2);
    for await (const _ of s2) break;
    expect(body2.destroyed).toBe(true);
    expect(s2.done).toBe(true);
  });

  it("pauses the body while the consumer lags and resumes it as it catches up", async () => {
    const total = WATCH_BUFFER_HIGH_WATER * 3;
    const line = (i: number): string =>
      `${JSON.stringify({ type: "ADDED", object: { metadata: { name: `o${i}` } } })}\n`;
    let produced = 0;
    let sawPause = false;
    const body = new Readable({
      read() {
        // One event per read; the stream only keeps reading while not paused.
        if (produced < total) this.push(line(produced++));
        else this.push(null);
      },
    });
    body.on("pause", () => {
      sawPause = true;
    });
    const s = new WatchStream(async () => body);
    let n = 0;
    for await (const ev of s) {
      if (ev.type !== "ERROR") expect(ev.object.metadata.name).toBe(`o${n}`);
      n++;
      if (n % 100 === 0) await new Promise((r) => setTimeout(r, 1));
    }
    expect(n).toBe(total);
    expect(sawPause).toBe(true);
  });
});

describe("WatchStream faults", () => {
  it("delivers the events that arrived before malformed input, then fails", async () => {
    const good = JSON.stringify({ type: "ADDED", object: { metadata: { name: "a" } } });
    const s = streamOf([Buffer.from(`${good}\n${good}\ngarbage{}`)]);
    const got: WatchEvent[] = [];
    await expect(
      (async () => {
        for await (const ev of s) got.push(ev);
      })(),
    ).rejects.toBeInstanceOf(WatchDecodeError);
    expect(got).toHaveLength(2);
    const split = new JsonObjectSplitter();
    expect(split.push(`${good}x`)).toHaveLength(1);
    expect(split.fault).toBeInstanceOf(WatchDecodeError);
    expect(() => split.push("{}")).toThrow(WatchDecodeError);
  });
});
