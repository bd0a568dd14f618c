/**
 * The conformance suite every Store backend runs. `newStore()` must return a fresh,
 * empty, isolated store. Revisions are compared only for order: a backend may share
 * one revision counter among several stores, so they need not start at 1 or be
 * contiguous within one store.
 *
 * Compaction boundaries: after compact(C), reads at revisions >= C and watches from
 * revisions >= C work; reads at revisions < C fail, and so do watches from revisions
 * well before C (the suite does not test a watch from exactly C - 1).
 */
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import {
  AlreadyExistsError,
  ClosedError,
  CompactedError,
  ConflictError,
  FutureRevisionError,
  InvalidKeyError,
  type KeyValue,
  MAX_KEY_BYTES,
  MAX_VALUE_BYTES,
  NotFoundError,
  type Store,
  TooLargeError,
  type Watch,
  type WatchEvent,
  WatchOverflowError,
} from "../../src/storage/index.ts";
import { compareKeys, type ModelErrorKind, type ModelResult, StoreModel } from "./model.ts";

/** How long a test waits for a watch to deliver what it expects. */
const WATCH_WAIT_MS = 10_000;
/** Random operation sequences per backend in the property test (env STORE_PROPERTY_RUNS). */
const PROPERTY_RUNS = Number(process.env.STORE_PROPERTY_RUNS ?? 25);
/** A revision offset no store reaches during a test run: "the future". */
const FAR_FUTURE = 1_000_000_000;

/** Resolves with the error `promise` rejects with; fails if it resolves. */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to fail, but it succeeded");
}

/** The error a watch ends with when iterated (a synchronous throw counts too). */
async function watchFailure(open: () => Watch): Promise<unknown> {
  return rejection(
    (async () => {
      const watch = open();
      try {
        for await (const _ of watch) {
          // A watch expected to fail may deliver nothing; keep reading until it ends.
        }
      } finally {
        watch.cancel();
      }
    })(),
  );
}

/** Reads a watch in the background, recording events and how it ended. */
class Recorder {
  readonly events: WatchEvent[] = [];
  error: unknown = null;
  ended = false;
  readonly #listeners = new Set<() => void>();

  constructor(readonly watch: Watch) {
    void this.#run();
  }

  async #run(): Promise<void> {
    try {
      for await (const ev of this.watch) {
        this.events.push(ev);
        this.#notify();
      }
    } catch (error) {
      this.error = error;
    } finally {
      this.ended = true;
      this.#notify();
    }
  }

  #notify(): void {
    for (const listener of this.#listeners) listener();
  }

  /** Waits until `done(events)` holds; fails on timeout or if the watch ends first. */
  until(done: (events: WatchEvent[]) => boolean, what: string): Promise<WatchEvent[]> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (done(this.events)) {
          finish();
          resolve(this.events);
        } else if (this.ended) {
          finish();
          reject(
            new Error(`watch ended before ${what} (${this.events.length} events): ${this.error}`),
          );
        }
      };
      const timer = setTimeout(() => {
        finish();
        reject(new Error(`timed out waiting for ${what} (${this.events.length} events)`));
      }, WATCH_WAIT_MS);
      const finish = () => {
        clearTimeout(timer);
        this.#listeners.delete(check);
      };
      this.#listeners.add(check);
      check();
    });
  }

  /** Waits until an event at `revision` (or later) arrived. */
  through(revision: number): Promise<WatchEvent[]> {
    return this.until(
      (evs) => evs.length > 0 && evs[evs.length - 1].revision >= revision,
      `revision ${revision}`,
    );
  }

  /** Waits for the watch to end (by error, cancel or close). */
  end(): Promise<void> {
    return this.until(() => this.ended, "the end of the watch").then(() => undefined);
  }

  stop(): void {
    this.watch.cancel();
  }
}

function isIncreasing(revisions: number[]): boolean {
  return revisions.every((r, i) => i === 0 || r > revisions[i - 1]);
}

/** Every item of a prefix, following continue tokens; checks each page's revision. */
async function listAll(
  store: Store,
  prefix: string,
  opts: { limit?: number; revision?: number } = {},
): Promise<{ items: KeyValue[]; revision: number; pages: number }> {
  let page = await store.list(prefix, opts);
  const revision = page.revision;
  const items = [...page.items];
  let pages = 1;
  while (page.continue) {
    page = await store.list(prefix, { limit: opts.limit, continue: page.continue });
    expect(page.revision).toBe(revision);
    items.push(...page.items);
    pages++;
  }
  return { items, revision, pages };
}

/**
 * Declares the conformance suite for one backend. `newStore()` returns a fresh, empty,
 * isolated store each call; the suite closes every store it opened.
 */
export function describeStoreConformance(backend: string, newStore: () => Promise<Store>): void {
  describe(`Store conformance: ${backend}`, () => {
    const opened: Store[] = [];
    async function fresh(): Promise<Store> {
      const store = await newStore();
      opened.push(store);
      return store;
    }
    afterEach(async () => {
      for (const store of opened.splice(0)) await store.close().catch(() => undefined);
    });

    describe("writes and reads", () => {
      it("creates, reads, updates and deletes with increasing revisions", async () => {
        const store = await fresh();
        const r1 = await store.create("/crud/a", "one");
        expect(r1).toBeGreaterThan(0);
        expect(await store.get("/crud/a")).toEqual({
          key: "/crud/a",
          value: "one",
          createRevision: r1,
          modRevision: r1,
        });
        expect(await store.currentRevision()).toBeGreaterThanOrEqual(r1);

        const r2 = await store.update("/crud/a", "two", r1);
        expect(r2).toBeGreaterThan(r1);
        expect(await store.get("/crud/a")).toEqual({
          key: "/crud/a",
          value: "two",
          createRevision: r1,
          modRevision: r2,
        });

        const r3 = await store.delete("/crud/a", r2);
        expect(r3).toBeGreaterThan(r2);
        expect(await store.get("/crud/a")).toBeNull();
        expect(await store.currentRevision()).toBeGreaterThanOrEqual(r3);

        const r4 = await store.create("/crud/a", "again");
        expect(r4).toBeGreaterThan(r3);
        expect(await store.get("/crud/a")).toMatchObject({ createRevision: r4, modRevision: r4 });
        const r5 = await store.delete("/crud/a");
        expect(r5).toBeGreaterThan(r4);
        expect(await store.get("/crud/missing")).toBeNull();
      });

      it("stores values exactly, up to MAX_VALUE_BYTES", async () => {
        const store = await fresh();
        const values = ["", " ", '{"a":[1,2,{"b":null}]}', "é😀\u{10FFFF}\uFFFD", "x".repeat(4096)];
        for (const [i, value] of values.entries()) await store.create(`/values/${i}`, value);
        for (const [i, value] of values.entries()) {
          expect((await store.get(`/values/${i}`))?.value).toBe(value);
        }
        const largest = "é".repeat(MAX_VALUE_BYTES / 2);
        await store.create("/values/largest", largest);
        expect((await store.get("/values/largest"))?.value).toBe(largest);
        const longestKey = `/${"k".repeat(MAX_KEY_BYTES - 1)}`;
        await store.create(longestKey, "v");
        expect((await store.get(longestKey))?.value).toBe("v");
      });

      it("refuses to create an existing key and changes nothing", async () => {
        const store = await fresh();
        const r1 = await store.create("/exists/a", "first");
        const error = await rejection(store.create("/exists/a", "second"));
        expect(error).toBeInstanceOf(AlreadyExistsError);
        expect((error as AlreadyExistsError).key).toBe("/exists/a");
        expect(await store.get("/exists/a")).toMatchObject({ value: "first", modRevision: r1 });
      });

      it("makes update and delete compare-and-swap on the modRevision", async () => {
        const store = await fresh();
        const r1 = await store.create("/cas/a", "v1");
        const r2 = await store.update("/cas/a", "v2", r1);

        const stale = await rejection(store.update("/cas/a", "v3", r1));
        expect(stale).toBeInstanceOf(ConflictError);
        expect((stale as ConflictError).currentRevision).toBe(r2);
        expect((stale as ConflictError).current).toMatchObject({ key: "/cas/a", value: "v2" });
        expect((stale as ConflictError).expectedRevision).toBe(r1);

        const staleDelete = await rejection(store.delete("/cas/a", r1));
        expect(staleDelete).toBeInstanceOf(ConflictError);
        expect((staleDelete as ConflictError).currentRevision).toBe(r2);
        expect(await store.get("/cas/a")).toMatchObject({ value: "v2", modRevision: r2 });

        expect(await rejection(store.update("/cas/missing", "v", r1))).toBeInstanceOf(
          NotFoundError,
        );
        expect(await rejection(store.delete("/cas/missing", r1))).toBeInstanceOf(NotFoundError);
        expect(await rejection(store.delete("/cas/missing"))).toBeInstanceOf(NotFoundError);

        await store.delete("/cas/a", r2);
        expect(await rejection(store.update("/cas/a", "v", r2))).toBeInstanceOf(NotFoundError);
      });

      it("lists keys under a prefix in byte order", async () => {
        const store = await fresh();
        const keys = [
          "/ls/b",
          "/ls/a/x",
          "/ls/a",
          "/ls/é",
          "/ls/😀",
          "/ls/\uFFFD",
          "/ls/Z",
          "/ls/a0",
          "/lsx",
          "/other/a",
        ];
        const revs: Record<string, number> = {};
        for (const key of keys) revs[key] = await store.create(key, `v:${key}`);
        const expected = keys
          .filter((k) => k.startsWith("/ls/"))
          .sort(compareKeys)
          .map((key) => ({
            key,
            value: `v:${key}`,
            createRevision: revs[key],
            modRevision: revs[key],
          }));

        const all = await store.list("/ls/");
        expect(all.items).toEqual(expected);
        expect(all.continue).toBeUndefined();
        expect(all.revision).toBeGreaterThanOrEqual(Math.max(...Object.values(revs)));

        expect((await store.list("/ls/a")).items.map((kv) => kv.key)).toEqual([
          "/ls/a",
          "/ls/a/x",
          "/ls/a0",
        ]);
        expect((await store.list("/")).items.map((kv) => kv.key)).toEqual(
          [...keys].sort(compareKeys),
        );
        expect((await store.list("/nothing/")).items).toEqual([]);
      });

      it("pages with limit and continue, each item exactly once", async () => {
        const store = await fresh();
        const keys = Array.from({ length: 25 }, (_, i) => `/page/${String(i).padStart(2, "0")}`);
        for (const key of keys) await store.create(key, key);
        let page = await store.list("/page/", { limit: 7 });
        const seen: string[] = [];
        const sizes: number[] = [];
        for (;;) {
          sizes.push(page.items.length);
          seen.push(...page.items.map((kv) => kv.key));
          if (page.remainingItemCount !== undefined) {
            expect(page.remainingItemCount).toBe(keys.length - seen.length);
          }
          if (!page.continue) break;
          page = await store.list("/page/", { limit: 7, continue: page.continue });
        }
        expect(sizes).toEqual([7, 7, 7, 4]);
        expect(seen).toEqual(keys);
        const exact = await store.list("/page/", { limit: 25 });
        expect(exact.items).toHaveLength(25);
        expect(exact.continue).toBeUndefined();
      });

      it("keeps paged lists a consistent snapshot while writes go on", async () => {
        const store = await fresh();
        const keys = Array.from({ length: 40 }, (_, i) => `/snap/${String(i).padStart(2, "0")}`);
        const snapshot: Record<string, KeyValue> = {};
        for (const key of keys) {
          const rev = await store.create(key, `v0:${key}`);
          snapshot[key] = { key, value: `v0:${key}`, createRevision: rev, modRevision: rev };
        }
        let page = await store.list("/snap/", { limit: 6 });
        const revision = page.revision;
        const items = [...page.items];
        let round = 0;
        // Writers keep going in the background, and each round also touches keys that
        // were read already and keys that are still ahead of the cursor.
        let writing = true;
        const background = (async () => {
          let n = 0;
          while (writing) await store.create(`/snap/bg-${n++}`, "background");
        })();
        while (page.continue) {
          const ahead = keys[Math.min(keys.length - 1, items.length + 2)];
          const current = await store.get(ahead);
          if (current) await store.update(ahead, `changed:${round}`, current.modRevision);
          const later = keys[Math.min(keys.length - 1, items.length + 4)];
          const doomed = await store.get(later);
          if (doomed) await store.delete(later, doomed.modRevision);
          await store.create(`/snap/${String(items.length + 1).padStart(2, "0")}x`, "new");
          const behind = await store.get(items[0].key);
          if (behind) await store.update(behind.key, `changed:${round}`, behind.modRevision);
          round++;
          page = await store.list("/snap/", { limit: 6, continue: page.continue });
          expect(page.revision).toBe(revision);
          items.push(...page.items);
        }
        writing = false;
        await background;
        expect(round).toBeGreaterThan(3);
        expect(items).toEqual(keys.map((k) => snapshot[k]));
        expect((await store.list("/snap/", { revision })).items).toEqual(items);
        const now = await store.list("/snap/");
        expect(now.revision).toBeGreaterThan(revision);
        expect(now.items).not.toEqual(items);
      });

      it("reads at past revisions and refuses future ones", async () => {
        const store = await fresh();
        const r1 = await store.create("/past/a", "a1");
        const r2 = await store.create("/past/b", "b1");
        const r3 = await store.update("/past/a", "a2", r1);
        const r4 = await store.delete("/past/b", r2);
        const r5 = await store.create("/past/b", "b2");
        await store.create("/past/c", "c1");

        expect(await store.get("/past/a", { revision: r1 })).toEqual({
          key: "/past/a",
          value: "a1",
          createRevision: r1,
          modRevision: r1,
        });
        expect((await store.get("/past/a", { revision: r3 }))?.value).toBe("a2");
        expect(await store.get("/past/b", { revision: r1 })).toBeNull();
        expect(await store.get("/past/b", { revision: r4 })).toBeNull();
        expect(await store.get("/past/b", { revision: r5 })).toMatchObject({
          value: "b2",
          createRevision: r5,
        });

        const at = async (revision: number) =>
          (await store.list("/past/", { revision })).items.map((kv) => `${kv.key}=${kv.value}`);
        expect(await at(r2)).toEqual(["/past/a=a1", "/past/b=b1"]);
        expect(await at(r3)).toEqual(["/past/a=a2", "/past/b=b1"]);
        expect(await at(r4)).toEqual(["/past/a=a2"]);
        expect(await at(r5)).toEqual(["/past/a=a2", "/past/b=b2"]);
        const paged = await listAll(store, "/past/", { revision: r3, limit: 1 });
        expect(paged.revision).toBe(r3);
        expect(paged.items.map((kv) => kv.value)).toEqual(["a2", "b1"]);

        const future = (await store.currentRevision()) + FAR_FUTURE;
        expect(await rejection(store.get("/past/a", { revision: future }))).toBeInstanceOf(
          FutureRevisionError,
        );
        expect(await rejection(store.list("/past/", { revision: future }))).toBeInstanceOf(
          FutureRevisionError,
        );
      });
    });

    describe("concurrency", () => {
      it("lets exactly one of concurrent updates win each round; the rest conflict", async () => {
        const store = await fresh();
        let revision = await store.create("/race/key", "start");
        for (let round = 0; round < 10; round++) {
          const contenders = 8;
          const results = await Promise.allSettled(
            Array.from({ length: contenders }, (_, i) =>
              store.update("/race/key", `round ${round} writer ${i}`, revision),
            ),
          );
          const winners = results.flatMap((r, i) => (r.status === "fulfilled" ? [{ r, i }] : []));
          expect(winners).toHaveLength(1);
          const won = (winners[0].r as PromiseFulfilledResult<number>).value;
          expect(won).toBeGreaterThan(revision);
          for (const r of results) {
            if (r.status === "fulfilled") continue;
            expect(r.reason).toBeInstanceOf(ConflictError);
            expect((r.reason as ConflictError).currentRevision).toBe(won);
          }
          expect(await store.get("/race/key")).toMatchObject({
            value: `round ${round} writer ${winners[0].i}`,
            modRevision: won,
          });
          revision = won;
        }
      });

      it("lets exactly one of concurrent creates or deletes of one key win", async () => {
        const store = await fresh();
        const creates = await Promise.allSettled(
          Array.from({ length: 6 }, (_, i) => store.create("/race/new", `creator ${i}`)),
        );
        expect(creates.filter((r) => r.status === "fulfilled")).toHaveLength(1);
        for (const r of creates) {
          if (r.status === "rejected") expect(r.reason).toBeInstanceOf(AlreadyExistsError);
        }
        const current = (await store.get("/race/new"))!;
        const deletes = await Promise.allSettled(
          Array.from({ length: 6 }, () => store.delete("/race/new", current.modRevision)),
        );
        expect(deletes.filter((r) => r.status === "fulfilled")).toHaveLength(1);
        for (const r of deletes) {
          if (r.status === "rejected") expect(r.reason).toBeInstanceOf(NotFoundError);
        }
        expect(await store.get("/race/new")).toBeNull();
      });

      it("delivers every revision to every watcher exactly once, in order", async () => {
        const store = await fresh();
        const start = await store.create("/mark", "start");
        const early = Array.from({ length: 6 }, () => new Recorder(store.watch("/many/", start)));
        const written = new Map<number, { key: string; value: string }>();
        const writers = 10;
        const writesEach = 20;
        const late: Recorder[] = [];
        const work = Array.from({ length: writers }, async (_, w) => {
          const key = `/many/${w}`;
          let rev = await store.create(key, `${w}:0`);
          written.set(rev, { key, value: `${w}:0` });
          for (let i = 1; i < writesEach; i++) {
            // Watchers joining mid-stream replay history, then switch to live events.
            if (w === 0 && i % 6 === 0) late.push(new Recorder(store.watch("/many/", start)));
            const value = `${w}:${i}`;
            rev = await store.update(key, value, rev);
            written.set(rev, { key, value });
          }
        });
        await Promise.all(work);
        const revisions = [...written.keys()].sort((a, b) => a - b);
        expect(revisions).toHaveLength(writers * writesEach);
        const last = revisions[revisions.length - 1];
        for (const recorder of [...early, ...late]) {
          const events = await recorder.through(last);
          expect(events.map((ev) => ev.revision)).toEqual(revisions);
          for (const ev of events) {
            expect({ key: ev.key, value: ev.value }).toEqual(written.get(ev.revision));
          }
          recorder.stop();
        }
        expect(late.length).toBeGreaterThan(0);
      });

      it("cuts off a slow watcher without holding back writers or other watchers", async () => {
        const store = await fresh();
        const start = await store.create("/mark", "start");
        const slow = store.watch("/slow/", start, { bufferSize: 5 });
        const fast = new Recorder(store.watch("/slow/", start));
        let last = start;
        for (let i = 0; i < 30; i++) last = await store.create(`/slow/${i}`, "v");
        expect(await fast.through(last)).toHaveLength(30);
        await new Promise((resolve) => setTimeout(resolve, 100));
        const reader = new Recorder(slow);
        await reader.end();
        const delivered = reader.events;
        const error = reader.error;
        expect(error).toBeInstanceOf(WatchOverflowError);
        expect(delivered.length).toBeLessThan(30);
        expect(isIncreasing(delivered.map((ev) => ev.revision))).toBe(true);
        expect((error as WatchOverflowError).lastDeliveredRevision).toBe(
          delivered.length > 0 ? delivered[delivered.length - 1].revision : start,
        );
        const after = await store.create("/slow/after", "v");
        expect(after).toBeGreaterThan(last);
        fast.stop();
      });
    });

    describe("watch", () => {
      it("replays history from an old revision with previous values, then goes live", async () => {
        const store = await fresh();
        const start = await store.create("/mark", "start");
        const r1 = await store.create("/w/a", "a1");
        const r2 = await store.update("/w/a", "a2", r1);
        const r3 = await store.create("/w/b", "b1");
        await store.create("/elsewhere", "ignored");
        const r4 = await store.delete("/w/a", r2);
        const r5 = await store.create("/w/a", "a3");

        const recorder = new Recorder(store.watch("/w/", start));
        const r6 = await store.update("/w/b", "b2", r3);
        const events = await recorder.through(r6);
        expect(events).toEqual([
          {
            type: "create",
            key: "/w/a",
            revision: r1,
            value: "a1",
            createRevision: r1,
            prev: null,
          },
          {
            type: "update",
            key: "/w/a",
            revision: r2,
            value: "a2",
            createRevision: r1,
            prev: { key: "/w/a", value: "a1", createRevision: r1, modRevision: r1 },
          },
          {
            type: "create",
            key: "/w/b",
            revision: r3,
            value: "b1",
            createRevision: r3,
            prev: null,
          },
          {
            type: "delete",
            key: "/w/a",
            revision: r4,
            value: null,
            createRevision: r1,
            prev: { key: "/w/a", value: "a2", createRevision: r1, modRevision: r2 },
          },
          {
            type: "create",
            key: "/w/a",
            revision: r5,
            value: "a3",
            createRevision: r5,
            prev: null,
          },
          {
            type: "update",
            key: "/w/b",
            revision: r6,
            value: "b2",
            createRevision: r3,
            prev: { key: "/w/b", value: "b1", createRevision: r3, modRevision: r3 },
          },
        ]);
        recorder.stop();

        const fromMiddle = new Recorder(store.watch("/w/", r3));
        expect((await fromMiddle.through(r6)).map((ev) => ev.revision)).toEqual([r4, r5, r6]);
        fromMiddle.stop();
      });

      it("watches from now when fromRevision is 0, and only under its prefix", async () => {
        const store = await fresh();
        await store.create("/now/old", "before");
        const recorder = new Recorder(store.watch("/now/", 0));
        await store.create("/nowhere", "not under the prefix");
        const r1 = await store.create("/now/new", "after");
        const events = await recorder.through(r1);
        expect(events.map((ev) => ev.key)).toEqual(["/now/new"]);
        recorder.stop();
      });

      it("ends iteration when cancelled", async () => {
        const store = await fresh();
        const recorder = new Recorder(store.watch("/cancel/", 0));
        const r1 = await store.create("/cancel/a", "v");
        await recorder.through(r1);
        recorder.stop();
        await recorder.end();
        expect(recorder.error).toBeNull();
        await store.create("/cancel/b", "v");
        expect(recorder.events).toHaveLength(1);
      });
    });

    describe("compaction", () => {
      it("forgets history before the compacted revision and keeps current values", async () => {
        const store = await fresh();
        const r0 = await store.create("/c/once", "kept");
        let rev = await store.create("/c/key", "v0");
        const revs = [rev];
        for (let i = 1; i <= 5; i++) {
          rev = await store.update("/c/key", `v${i}`, rev);
          revs.push(rev);
        }
        const gone = await store.create("/c/gone", "x");
        await store.delete("/c/gone", gone);
        const target = revs[4];
        await store.compact(target);
        expect(await store.compactedRevision()).toBeGreaterThanOrEqual(target);

        expect(await rejection(store.get("/c/key", { revision: revs[1] }))).toBeInstanceOf(
          CompactedError,
        );
        const listError = await rejection(store.list("/c/", { revision: r0 }));
        expect(listError).toBeInstanceOf(CompactedError);
        expect((listError as CompactedError).compactedRevision).toBeGreaterThanOrEqual(target);
        const watchError = await watchFailure(() => store.watch("/c/", r0));
        expect(watchError).toBeInstanceOf(CompactedError);

        // The state at the compacted revision and everything after stays readable.
        expect((await store.get("/c/key", { revision: target }))?.value).toBe("v4");
        expect((await store.list("/c/", { revision: target })).items.map((kv) => kv.key)).toEqual([
          "/c/key",
          "/c/once",
        ]);
        expect(await store.get("/c/once")).toMatchObject({ value: "kept", modRevision: r0 });
        expect((await store.list("/c/")).items.map((kv) => kv.value)).toEqual(["v5", "kept"]);

        const later = await store.update("/c/key", "v6", revs[5]);
        const replay = new Recorder(store.watch("/c/", target));
        const events = await replay.through(later);
        expect(events.map((ev) => ev.value)).toEqual(["v5", "x", null, "v6"]);
        expect(events[0].prev).toMatchObject({ value: "v4", modRevision: revs[4] });
        replay.stop();
      });

      it("refuses a future compaction and ignores an older one", async () => {
        const store = await fresh();
        const r1 = await store.create("/cc/a", "v");
        const r2 = await store.update("/cc/a", "w", r1);
        await store.update("/cc/a", "x", r2);
        await store.compact(r2);
        const compacted = await store.compactedRevision();
        await store.compact(r1);
        expect(await store.compactedRevision()).toBe(compacted);
        const future = (await store.currentRevision()) + FAR_FUTURE;
        expect(await rejection(store.compact(future))).toBeInstanceOf(FutureRevisionError);
        expect((await store.get("/cc/a"))?.value).toBe("x");
      });

      it("fails a continued list whose revision was compacted away", async () => {
        const store = await fresh();
        for (let i = 0; i < 6; i++) await store.create(`/cl/${i}`, "v");
        const first = await store.list("/cl/", { limit: 2 });
        expect(first.continue).toBeDefined();
        let rev = await store.create("/cl/z", "v");
        rev = await store.update("/cl/z", "w", rev);
        await store.update("/cl/z", "x", rev);
        await store.compact(rev);
        const error = await rejection(store.list("/cl/", { limit: 2, continue: first.continue }));
        expect(error).toBeInstanceOf(CompactedError);
      });
    });

    describe("bad input", () => {
      it("refuses malformed keys and oversized keys and values, storing nothing", async () => {
        const store = await fresh();
        const r1 = await store.create("/bad/ok", "v");
        const invalidKeys = ["", "no-slash", "bad/key", "/nul\0key", "/lone\uD800surrogate"];
        for (const key of invalidKeys) {
          expect(await rejection(store.create(key, "v")), JSON.stringify(key)).toBeInstanceOf(
            InvalidKeyError,
          );
          expect(await rejection(store.update(key, "v", r1))).toBeInstanceOf(InvalidKeyError);
          expect(await rejection(store.delete(key))).toBeInstanceOf(InvalidKeyError);
        }
        const longKey = `/${"k".repeat(MAX_KEY_BYTES)}`;
        const keyError = await rejection(store.create(longKey, "v"));
        expect(keyError).toBeInstanceOf(TooLargeError);
        expect((keyError as TooLargeError).what).toBe("key");
        const multibyteKey = `/${"é".repeat(MAX_KEY_BYTES / 2)}`;
        expect(await rejection(store.create(multibyteKey, "v"))).toBeInstanceOf(TooLargeError);

        const big = "x".repeat(MAX_VALUE_BYTES + 1);
        const valueError = await rejection(store.create("/bad/big", big));
        expect(valueError).toBeInstanceOf(TooLargeError);
        expect((valueError as TooLargeError).what).toBe("value");
        expect(await rejection(store.update("/bad/ok", big, r1))).toBeInstanceOf(TooLargeError);
        const multibyte = "é".repeat(MAX_VALUE_BYTES / 2 + 1);
        expect(await rejection(store.create("/bad/multibyte", multibyte))).toBeInstanceOf(
          TooLargeError,
        );

        expect((await store.list("/")).items.map((kv) => kv.key)).toEqual(["/bad/ok"]);
        expect(await store.get("/bad/ok")).toMatchObject({ value: "v", modRevision: r1 });
      });

      it("fails every call on a closed store with ClosedError and ends its watches", async () => {
        const store = await fresh();
        const r1 = await store.create("/closed/a", "v");
        const open = new Recorder(store.watch("/closed/", 0));
        await store.close();
        await open.end();
        expect(open.error).toBeNull();

        const calls: [string, () => Promise<unknown>][] = [
          ["get", () => store.get("/closed/a")],
          ["list", () => store.list("/closed/")],
          ["create", () => store.create("/closed/b", "v")],
          ["update", () => store.update("/closed/a", "w", r1)],
          ["delete", () => store.delete("/closed/a", r1)],
          ["compact", () => store.compact(r1)],
          ["currentRevision", () => store.currentRevision()],
          ["compactedRevision", () => store.compactedRevision()],
        ];
        for (const [name, call] of calls) {
          expect(await rejection(call()), name).toBeInstanceOf(ClosedError);
        }
        expect(await watchFailure(() => store.watch("/closed/", 0))).toBeInstanceOf(ClosedError);
      });
    });

    describe("model", () => {
      it("matches the in-memory model on random operation sequences", async () => {
        await fc.assert(
          fc.asyncProperty(fc.array(commandArbitrary, { maxLength: 40 }), async (commands) => {
            const store = await newStore();
            try {
              await runAgainstModel(store, commands);
            } finally {
              await store.close();
            }
          }),
          { numRuns: PROPERTY_RUNS },
        );
      });
    });
  });
}

// ---- the property test --------------------------------------------------------------

const MODEL_KEYS = ["/p/a", "/p/b", "/p/a/x", "/p/é", "/p/😀", "/p/~", "/q/z"] as const;
const MODEL_PREFIXES = ["/p/", "/p/a", "/q/", "/"] as const;

/** A model revision to pass (or "current": the key's own modRevision). */
const revisionArbitrary = fc.oneof(
  { weight: 3, arbitrary: fc.constant("current" as const) },
  { weight: 2, arbitrary: fc.integer({ min: 1, max: 45 }) },
);
const pastArbitrary = fc.option(fc.integer({ min: 1, max: 45 }), { nil: undefined });
const keyArbitrary = fc.constantFrom(...MODEL_KEYS);
const valueArbitrary = fc.string({ maxLength: 6 });

const commandArbitrary = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant("create" as const),
      key: keyArbitrary,
      value: valueArbitrary,
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant("update" as const),
      key: keyArbitrary,
      value: valueArbitrary,
      expected: revisionArbitrary,
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant("delete" as const),
      key: keyArbitrary,
      expected: fc.oneof(fc.constant("none" as const), revisionArbitrary),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant("get" as const), key: keyArbitrary, at: pastArbitrary }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant("list" as const),
      prefix: fc.constantFrom(...MODEL_PREFIXES),
      limit: fc.integer({ min: 0, max: 3 }),
      at: pastArbitrary,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("compact" as const),
      at: fc.integer({ min: 1, max: 45 }),
    }),
  },
);

type Command = typeof commandArbitrary extends fc.Arbitrary<infer T> ? T : never;

const ERROR_KINDS: [ModelErrorKind, new (...args: never[]) => Error][] = [
  ["AlreadyExistsError", AlreadyExistsError],
  ["NotFoundError", NotFoundError],
  ["ConflictError", ConflictError],
  ["CompactedError", CompactedError],
  ["FutureRevisionError", FutureRevisionError],
];

function kindOf(error: unknown): ModelErrorKind {
  for (const [kind, type] of ERROR_KINDS) if (error instanceof type) return kind;
  throw error;
}

type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

async function attempt<T>(promise: Promise<T>): Promise<Outcome<T>> {
  try {
    return { ok: true, value: await promise };
  } catch (error) {
    return { ok: false, error };
  }
}

/** Runs `commands` on the store and on the model, comparing every result and the watches. */
async function runAgainstModel(store: Store, commands: Command[]): Promise<void> {
  const model = new StoreModel();
  const realOf: number[] = [0];
  const modelOf = new Map<number, number>();
  const record = (modelRevision: number, realRevision: number) => {
    expect(realRevision).toBeGreaterThan(realOf[modelRevision - 1]);
    realOf[modelRevision] = realRevision;
    modelOf.set(realRevision, modelRevision);
  };
  /** A model revision as the store knows it (past the newest: far in the future). */
  const real = (m: number) =>
    m <= model.revision ? realOf[m] : realOf[model.revision] + FAR_FUTURE;
  /** A write's real revision as the model's: any revision past the last recorded one is the model's newest. */
  const freshRevision = (r: number) => (r > realOf[model.revision - 1] ? model.revision : r);
  const toModel = (kv: KeyValue | null) =>
    kv && {
      ...kv,
      createRevision: modelOf.get(kv.createRevision),
      modRevision: modelOf.get(kv.modRevision),
    };
  const toModelEvent = (ev: WatchEvent) => ({
    ...ev,
    revision: modelOf.get(ev.revision),
    createRevision: modelOf.get(ev.createRevision),
    prev: toModel(ev.prev),
  });

  function compare<T, U>(
    what: string,
    actual: Outcome<T>,
    expected: ModelResult<U>,
    translate: (value: T) => unknown,
  ): void {
    if (!expected.ok) {
      expect(actual.ok, `${what}: expected ${expected.error}`).toBe(false);
      if (actual.ok) return;
      expect(kindOf(actual.error), what).toBe(expected.error);
      if (expected.error === "ConflictError") {
        expect(modelOf.get((actual.error as ConflictError).currentRevision), what).toBe(
          expected.currentRevision,
        );
      }
      return;
    }
    if (!actual.ok) throw new Error(`${what}: unexpected ${String(actual.error)}`);
    expect(translate(actual.value), what).toEqual(expected.value);
  }

  const mark = model.create("/m", "mark");
  if (!mark.ok) throw new Error("model refused the first create");
  record(mark.value, await store.create("/m", "mark"));
  const live = new Recorder(store.watch("/p/", realOf[1]));
  try {
    for (const [i, cmd] of commands.entries()) {
      const what = `#${i} ${JSON.stringify(cmd)}`;
      switch (cmd.op) {
        case "create": {
          const expected = model.create(cmd.key, cmd.value);
          const actual = await attempt(store.create(cmd.key, cmd.value));
          compare(what, actual, expected, freshRevision);
          if (actual.ok && expected.ok) record(expected.value, actual.value);
          break;
        }
        case "update":
        case "delete": {
          const current = model.current(cmd.key);
          const m =
            cmd.expected === "none"
              ? undefined
              : cmd.expected === "current"
                ? (current?.modRevision ?? 1)
                : cmd.expected;
          const expected =
            cmd.op === "update" ? model.update(cmd.key, cmd.value, m!) : model.delete(cmd.key, m);
          const realExpected = m === undefined ? undefined : real(m);
          const actual = await attempt(
            cmd.op === "update"
              ? store.update(cmd.key, cmd.value, realExpected!)
              : store.delete(cmd.key, realExpected),
          );
          compare(what, actual, expected, freshRevision);
          if (actual.ok && expected.ok) record(expected.value, actual.value);
          break;
        }
        case "get": {
          const expected = model.get(cmd.key, cmd.at);
          const revision = cmd.at === undefined ? undefined : real(cmd.at);
          compare(what, await attempt(store.get(cmd.key, { revision })), expected, toModel);
          break;
        }
        case "list": {
          const expected = model.list(cmd.prefix, cmd.at);
          const revision = cmd.at === undefined ? undefined : real(cmd.at);
          const actual = await attempt(listAll(store, cmd.prefix, { limit: cmd.limit, revision }));
          compare(what, actual, expected, (r) => r.items.map(toModel));
          if (actual.ok && revision !== undefined) expect(actual.value.revision).toBe(revision);
          if (actual.ok && expected.ok && cmd.limit > 0) {
            expect(actual.value.pages).toBe(
              Math.max(1, Math.ceil(expected.value.length / cmd.limit)),
            );
          }
          break;
        }
        case "compact": {
          // The live watch keeps up before history goes: a watcher still catching up from
          // a revision being compacted is cancelled (etcd does so), which is not what this
          // sequence checks.
          const seen = model.log.filter((ev) => ev.key.startsWith("/p/"));
          if (seen.length > 0) await live.through(realOf[seen[seen.length - 1].revision]);
          const expected = model.compact(cmd.at);
          compare(what, await attempt(store.compact(real(cmd.at))), expected, () => undefined);
          break;
        }
      }
    }

    // The live watch (started before any compaction) saw every change under its prefix,
    // in order, with previous values.
    const expectedLive = model.log.filter((ev) => ev.key.startsWith("/p/"));
    if (expectedLive.length > 0) {
      const last = realOf[expectedLive[expectedLive.length - 1].revision];
      expect((await live.through(last)).map(toModelEvent)).toEqual(expectedLive);
    }

    // A watch from the oldest revision still available replays the same history.
    const from = Math.max(1, model.compacted);
    const expectedReplay = model.events("/p/", from);
    if (!expectedReplay.ok) throw new Error("model refused its own replay");
    if (expectedReplay.value.length > 0) {
      const replay = new Recorder(store.watch("/p/", realOf[from]));
      const last = realOf[expectedReplay.value[expectedReplay.value.length - 1].revision];
      expect((await replay.through(last)).map(toModelEvent)).toEqual(expectedReplay.value);
      replay.stop();
    }

    // A watch from well before the compacted revision fails.
    if (model.compacted >= 3) {
      expect(await watchFailure(() => store.watch("/p/", realOf[1]))).toBeInstanceOf(
        CompactedError,
      );
    }
  } finally {
    live.stop();
  }
}
