import Database from "better-sqlite3";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { AlreadyExistsError, CompactedError } from "../../src/storage/index.ts";
import { SqliteStore, type SqliteStoreOptions } from "../../src/storage/sqlite/index.ts";
import { describeStoreConformance } from "./conformance.ts";
import { eventually, tempDir } from "./fixtures/files.ts";

const tmp = tempDir("setpoint-sqlite-");
afterAll(() => tmp.remove());
let n = 0;
const nextFile = () => tmp.file(`store-${n++}.db`);

describeStoreConformance("sqlite file", async () => SqliteStore.open(nextFile()));
describeStoreConformance("sqlite file, writer on the caller's thread", async () =>
  SqliteStore.open(nextFile(), { writerThread: false }),
);
describeStoreConformance("sqlite :memory:", async () => SqliteStore.open(":memory:"));

describe("SqliteStore", () => {
  const opened: SqliteStore[] = [];
  function open(opts: SqliteStoreOptions = {}, file = nextFile()): SqliteStore {
    const store = SqliteStore.open(file, opts);
    opened.push(store);
    return store;
  }
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
  });

  describe("group commit", () => {
    it("commits writes that arrive together in one transaction, settling after it", async () => {
      const store = open();
      const before = store.stats();
      const commitsSeen: number[] = [];
      const writes = Array.from({ length: 200 }, (_, i) =>
        store.create(`/g/${i}`, `v${i}`).then((revision) => {
          commitsSeen.push(store.stats().commits);
          return revision;
        }),
      );
      const revisions = await Promise.all(writes);
      const after = store.stats();
      expect(after.commits - before.commits).toBe(1);
      expect(after.largestBatch).toBe(200);
      expect(commitsSeen.every((c) => c === before.commits + 1)).toBe(true);
      // Each write still has its own revision, in the order the calls were made.
      expect(revisions).toEqual(revisions.map((_, i) => revisions[0] + i));
    });

    it("commits sequential writes one transaction each", async () => {
      const store = open();
      const before = store.stats().commits;
      for (let i = 0; i < 20; i++) await store.create(`/s/${i}`, "v");
      expect(store.stats().commits - before).toBe(20);
    });

    it("checks each write of a batch on its own: failures take no revision", async () => {
      const store = open();
      const base = await store.create("/b/taken", "v");
      const outcomes = await Promise.allSettled(
        Array.from({ length: 30 }, (_, i) =>
          i % 3 === 0 ? store.create("/b/taken", "again") : store.create(`/b/${i}`, "v"),
        ),
      );
      const won = outcomes.flatMap((o) => (o.status === "fulfilled" ? [o.value] : []));
      const lost = outcomes.flatMap((o) => (o.status === "rejected" ? [o.reason] : []));
      expect(won).toEqual(won.map((_, i) => base + 1 + i));
      expect(lost).toHaveLength(10);
      for (const error of lost) expect(error).toBeInstanceOf(AlreadyExistsError);
      expect((await store.get("/b/taken"))?.value).toBe("v");
      expect(store.stats().largestBatch).toBe(20);
    });
  });

  it("works the same without durable commits (durable: false) and across reopen", async () => {
    const file = nextFile();
    const store = open({ durable: false }, file);
    const r1 = await store.create("/nd/a", "v");
    await Promise.all([store.create("/nd/b", "v"), store.update("/nd/a", "w", r1)]);
    await store.close();
    opened.pop();
    const reopened = open({}, file);
    expect((await reopened.list("/nd/")).items.map((kv) => `${kv.key}=${kv.value}`)).toEqual([
      "/nd/a=w",
      "/nd/b=v",
    ]);
    expect(await reopened.currentRevision()).toBe(r1 + 2);
  });

  it("counts the items left after a page at past revisions too", async () => {
    const store = open();
    const keys = Array.from({ length: 9 }, (_, i) => `/rc/${i}`);
    const revisions = await Promise.all(keys.map((key) => store.create(key, "v")));
    const before = await store.currentRevision();
    // After `before`: two keys deleted, one updated, three created.
    await store.delete(keys[2], revisions[2]);
    await store.delete(keys[7], revisions[7]);
    await store.update(keys[4], "w", revisions[4]);
    await Promise.all(["/rc/0a", "/rc/5a", "/rc/9"].map((key) => store.create(key, "new")));
    const past = await store.list("/rc/", { limit: 2, revision: before });
    expect(past.items.map((kv) => kv.key)).toEqual(["/rc/0", "/rc/1"]);
    expect(past.remainingItemCount).toBe(7);
    const now = await store.list("/rc/", { limit: 2 });
    expect(now.items.map((kv) => kv.key)).toEqual(["/rc/0", "/rc/0a"]);
    expect(now.remainingItemCount).toBe(8);
    const rest = await store.list("/rc/", { continue: past.continue, limit: 3 });
    expect(rest.items.map((kv) => `${kv.key}=${kv.value}`)).toEqual([
      "/rc/2=v",
      "/rc/3=v",
      "/rc/4=v",
    ]);
    expect(rest.remainingItemCount).toBe(4);
  });

  describe("background compaction", () => {
    it("compacts history past retention in small batches, keeping the newest revisions", async () => {
      let now = 1_700_000_000_000;
      const file = nextFile();
      const store = open(
        {
          historyRetentionMs: 60_000,
          minHistoryRevisions: 5,
          compactionIntervalMs: 5,
          compactionBatchSize: 3,
          clock: () => now,
        },
        file,
      );
      const keep = await store.create("/bg/keep", "written once");
      let rev = await store.create("/bg/k", "0");
      for (let i = 1; i < 20; i++) rev = await store.update("/bg/k", String(i), rev);
      const old = rev;

      // Nothing is old enough yet: the interval fires but keeps everything.
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(await store.compactedRevision()).toBe(0);

      now += 61_000;
      for (let i = 20; i < 30; i++) rev = await store.update("/bg/k", String(i), rev);
      await eventually("compaction of the aged history", async () => {
        return (await store.compactedRevision()) === old;
      });
      // The rows go on the writer thread, in batches of three revisions.
      await eventually(
        "the compaction batches",
        () => store.stats().compactionBatches >= Math.ceil(old / 3),
      );
      // Still held at `old`: younger history is within retention.
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(await store.compactedRevision()).toBe(old);
      expect(await store.get("/bg/keep")).toMatchObject({ modRevision: keep });
      expect((await store.get("/bg/k", { revision: old }))?.value).toBe("19");
      await expect(store.get("/bg/k", { revision: old - 1 })).rejects.toBeInstanceOf(
        CompactedError,
      );
      expect(store.stats().compactionBatches).toBeGreaterThanOrEqual(Math.ceil(old / 3));

      // Once everything is old, the newest minHistoryRevisions are still kept.
      now += 61_000;
      await eventually("compaction down to the minimum history", async () => {
        return (await store.compactedRevision()) === rev - 5;
      });
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(await store.compactedRevision()).toBe(rev - 5);
      // compact() at the compacted revision joins the running batches until they finish.
      await store.compact(rev - 5);
      expect(store.stats().lastCompactionError).toBeNull();
      await store.close();

      // On disk: the key written once, the newest row at or before the compacted
      // revision, and the five rows after it.
      const db = new Database(file, { readonly: true });
      const rows = db.prepare("SELECT revision FROM history ORDER BY revision").pluck().all();
      db.close();
      expect(rows).toEqual([keep, rev - 5, rev - 4, rev - 3, rev - 2, rev - 1, rev]);
    });

    it("lets writers commit between compaction batches", async () => {
      const store = open({ compactionIntervalMs: 0, compactionBatchSize: 10 });
      const chains = Array.from({ length: 30 }, async (_, k) => {
        let rev = await store.create(`/cw/${k}`, "0");
        for (let i = 1; i < 10; i++) rev = await store.update(`/cw/${k}`, String(i), rev);
      });
      await Promise.all(chains);
      const rev = await store.currentRevision();
      expect(rev).toBe(300);
      const compaction = store.compact(rev);
      const commitsBefore = store.stats().commits;
      const during = await store.create("/cw/during", "v");
      expect(during).toBe(rev + 1);
      const batchesWhenWritten = store.stats().compactionBatches;
      await compaction;
      expect(store.stats().commits).toBe(commitsBefore + 1);
      expect(batchesWhenWritten).toBeLessThan(store.stats().compactionBatches);
      expect(store.stats().compactionBatches).toBe(30);
    });
  });
});
