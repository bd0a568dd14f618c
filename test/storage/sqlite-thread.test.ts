import { afterAll, afterEach, describe, expect, it } from "vitest";
import {
  ClosedError,
  type KeyValue,
  UnavailableError,
  type WatchEvent,
} from "../../src/storage/index.ts";
import {
  currentWriterThread,
  SqliteStore,
  type SqliteStoreOptions,
  WRITER_THREAD_LINGER_MS,
} from "../../src/storage/sqlite/index.ts";
import { tempDir } from "./fixtures/files.ts";

const tmp = tempDir("setpoint-sqlite-thread-");
afterAll(() => tmp.remove());
let n = 0;
const nextFile = () => tmp.file(`store-${n++}.db`);

/** Resolves with how `promise` settled. */
function settled<T>(promise: Promise<T>): Promise<{ value?: T; error?: unknown }> {
  return promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
}

describe("SqliteStore writer thread", () => {
  const opened: SqliteStore[] = [];
  function open(opts: SqliteStoreOptions = {}, file = nextFile()): SqliteStore {
    const store = SqliteStore.open(file, opts);
    opened.push(store);
    return store;
  }
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
  });

  it("commits file stores on the thread, :memory: and writerThread: false on the caller's", async () => {
    const threaded = open();
    const local = open({ writerThread: false });
    const memory = open({}, ":memory:");
    for (const store of [threaded, local, memory]) {
      expect(await store.create("/k", "v")).toBe(1);
      expect((await store.get("/k"))?.value).toBe("v");
    }
    expect(threaded.stats().writerThread).toBe(true);
    expect(local.stats().writerThread).toBe(false);
    expect(memory.stats().writerThread).toBe(false);
    expect(currentWriterThread()).not.toBeNull();
  });

  it("serves several stores from one thread, each with its own file and revisions", async () => {
    const a = open();
    const b = open();
    const thread = currentWriterThread();
    const [ra, rb] = await Promise.all([
      Promise.all(Array.from({ length: 50 }, (_, i) => a.create(`/a/${i}`, "a"))),
      Promise.all(Array.from({ length: 30 }, (_, i) => b.create(`/b/${i}`, "b"))),
    ]);
    expect(ra).toEqual(ra.map((_, i) => i + 1));
    expect(rb).toEqual(rb.map((_, i) => i + 1));
    expect(currentWriterThread()).toBe(thread);
    expect((await a.list("/")).items).toHaveLength(50);
    expect((await b.list("/")).items).toHaveLength(30);
  });

  it("fails pending and later writes with UnavailableError when the thread dies", async () => {
    const file = nextFile();
    const store = open({}, file);
    const r1 = await store.create("/alive", "v");
    const watch = store.watch("/", r1);
    const consumed = settled(
      (async () => {
        const events: WatchEvent[] = [];
        for await (const ev of watch) events.push(ev);
        return events;
      })(),
    );
    const thread = currentWriterThread()!;
    const inFlight = Array.from({ length: 20 }, (_, i) => settled(store.create(`/lost/${i}`, "v")));
    await thread.terminate();
    const outcomes = await Promise.all(inFlight);
    // Each write either committed before the thread went, or failed as unavailable.
    for (const outcome of outcomes) {
      if (outcome.error !== undefined) expect(outcome.error).toBeInstanceOf(UnavailableError);
    }
    expect(outcomes.some((o) => o.error !== undefined)).toBe(true);
    const later = await settled(store.create("/later", "v"));
    expect(later.error).toBeInstanceOf(UnavailableError);
    expect(later.error).not.toBeInstanceOf(ClosedError);
    expect((later.error as Error).message).toMatch(/writer stopped/);
    expect((await settled(store.compact(r1))).error).toBeInstanceOf(UnavailableError);
    expect((await consumed).error).toBeInstanceOf(UnavailableError);
    // What committed is still readable; closing works and reopening starts a new thread.
    expect((await store.get("/alive"))?.value).toBe("v");
    await store.close();
    opened.pop();
    const reopened = open({}, file);
    expect(currentWriterThread()).not.toBe(thread);
    const committed = outcomes.filter((o) => o.value !== undefined).length;
    expect(await reopened.currentRevision()).toBe(r1 + committed);
    expect(await reopened.create("/later", "v")).toBe(r1 + committed + 1);
  });

  it(
    "stops the thread once its last store is closed",
    async () => {
      const store = open();
      await store.create("/k", "v");
      const thread = currentWriterThread()!;
      const exit = new Promise<number>((resolve) => thread.once("exit", resolve));
      await store.close();
      opened.pop();
      // It lingers for a store opened right after, then stops.
      expect(currentWriterThread()).toBe(thread);
      await exit;
      expect(currentWriterThread()).toBeNull();
    },
    5 * WRITER_THREAD_LINGER_MS,
  );

  it("reads exactly the reported revision while the thread commits ahead of it", async () => {
    const store = open({ durable: false });
    const keys = Array.from({ length: 12 }, (_, i) => `/r/${String(i).padStart(2, "0")}`);
    const events: WatchEvent[] = [];
    const watch = store.watch("/r/", 0);
    const watching = (async () => {
      for await (const ev of watch) {
        events.push(ev);
        if (ev.key === "/r/~end") break;
      }
    })();
    const reads: {
      revision: number;
      items: KeyValue[];
      key: string;
      one: KeyValue | null;
      oneAt: number;
    }[] = [];
    let writing = true;
    const reader = (async () => {
      while (writing) {
        const page = await store.list("/r/");
        const key = keys[reads.length % keys.length];
        const oneAt = await store.currentRevision();
        const one = await store.get(key);
        reads.push({ revision: page.revision, items: page.items, key, one, oneAt });
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    // Writers create, update and delete the same keys over and over.
    await Promise.all(
      keys.map(async (key, k) => {
        for (let round = 0; round < 15; round++) {
          const created = await store.create(key, `${round}`);
          const updated = await store.update(key, `${round}+`, created);
          if ((round + k) % 3 !== 0) await store.delete(key, updated);
          else await store.delete(key);
        }
      }),
    );
    writing = false;
    await reader;
    await store.create("/r/~end", "");
    await watching;
    expect(reads.length).toBeGreaterThan(10);

    // The state at every revision, rebuilt from the events.
    const state = new Map<string, KeyValue>();
    const states = new Map<number, Map<string, KeyValue>>([[0, new Map()]]);
    for (const ev of events) {
      if (ev.value === null) state.delete(ev.key);
      else {
        state.set(ev.key, {
          key: ev.key,
          value: ev.value,
          createRevision: ev.createRevision,
          modRevision: ev.revision,
        });
      }
      states.set(ev.revision, new Map(state));
    }
    for (const read of reads) {
      const at = states.get(read.revision)!;
      expect(at, `state at ${read.revision}`).toBeDefined();
      expect(read.items, `list at ${read.revision}`).toEqual(
        [...at.values()].sort((x, y) => (x.key < y.key ? -1 : 1)),
      );
      expect(read.one, `get at ${read.oneAt}`).toEqual(
        states.get(read.oneAt)!.get(read.key) ?? null,
      );
    }
  });
});
