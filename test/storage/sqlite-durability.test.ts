import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/storage/sqlite/index.ts";
import { exited, onLines, spawnFixture, tempDir } from "./fixtures/files.ts";
import { durableValue } from "./fixtures/values.ts";

/** Acknowledged writes to collect before the writer is killed. */
const ACKS_BEFORE_KILL = 3000;
/** Concurrent writers in the child, so kills land inside multi-write transactions. */
const WRITERS = 16;

const tmp = tempDir("setpoint-sqlite-durability-");
afterAll(() => tmp.remove());

describe("SqliteStore durability", () => {
  it("keeps every acknowledged write after kill -9 under load, and nothing half-written", async () => {
    const file = tmp.file("killed.db");
    const child = spawnFixture("writer.ts", [file, String(WRITERS)]);
    const created = new Map<string, number>();
    const counters = new Map<string, { revision: number; n: number }>();
    let stderr = "";
    child.stderr!.on("data", (d) => {
      stderr += d;
    });
    const enough = new Promise<void>((resolve) => {
      onLines(child, (line) => {
        const [kind, key, rev, n] = line.split(" ");
        if (kind === "create") created.set(key, Number(rev));
        if (kind === "update") counters.set(key, { revision: Number(rev), n: Number(n) });
        if (created.size >= ACKS_BEFORE_KILL) resolve();
      });
    });
    const exit = exited(child);
    await Promise.race([enough, exit]);
    child.kill("SIGKILL");
    const { signal } = await exit;
    expect(signal, `writer should be killed, not exit on its own: ${stderr}`).toBe("SIGKILL");
    expect(created.size).toBeGreaterThanOrEqual(ACKS_BEFORE_KILL);

    const store = SqliteStore.open(file);
    const maxAcked = Math.max(
      ...created.values(),
      ...[...counters.values()].map((c) => c.revision),
    );
    expect(await store.currentRevision()).toBeGreaterThanOrEqual(maxAcked);
    for (const [key, revision] of created) {
      expect(await store.get(key), key).toEqual({
        key,
        value: durableValue(key),
        createRevision: revision,
        modRevision: revision,
      });
    }
    for (const [key, { revision, n }] of counters) {
      const kv = (await store.get(key))!;
      expect(kv.modRevision).toBeGreaterThanOrEqual(revision);
      expect(Number(kv.value)).toBeGreaterThanOrEqual(n);
    }
    // Whatever was committed is whole: every stored item is exactly what was written.
    const all = await store.list("/d/");
    expect(all.items.length).toBeGreaterThanOrEqual(created.size);
    for (const kv of all.items) expect(kv.value, kv.key).toBe(durableValue(kv.key));
    const revision = await store.currentRevision();
    const next = await store.create("/after/restart", "v");
    expect(next).toBe(revision + 1);
    await store.close();

    const db = new Database(file, { readonly: true });
    try {
      expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
      const history = db
        .prepare("SELECT count(*) AS n, min(revision) AS lo, max(revision) AS hi FROM history")
        .get() as { n: number; lo: number; hi: number };
      expect(history).toEqual({ n: next, lo: 1, hi: next });
      const dangling = db
        .prepare(
          "SELECT count(*) FROM current c LEFT JOIN history h ON h.revision = c.revision WHERE h.revision IS NULL OR h.key <> c.key",
        )
        .pluck()
        .get();
      expect(dangling).toBe(0);
    } finally {
      db.close();
    }
  });
});
