import { spawnSync } from "node:child_process";
import fs from "node:fs";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import {
  LOCK_PARTIAL_GRACE_MS,
  lockFileOf,
  PAGE_CACHE_KIB,
  SqliteOpenError,
  SqliteStore,
  WRITER_PAGE_CACHE_KIB,
} from "../../src/storage/sqlite/index.ts";
import { openWriterConnection } from "../../src/storage/sqlite/open.ts";
import { digest, exited, filesOf, onLines, spawnFixture, tempDir } from "./fixtures/files.ts";

const tmp = tempDir("setpoint-sqlite-open-");
afterAll(() => tmp.remove());
let n = 0;

function fresh(): { name: string; file: string } {
  const name = `f${n++}.db`;
  return { name, file: tmp.file(name) };
}

/** Opens `file`, expecting SqliteOpenError with `reason`; checks the file is untouched. */
function expectRefused(name: string, file: string, reason: string): SqliteOpenError {
  const before = digest(file);
  const sideFiles = filesOf(tmp.dir, name);
  let error: unknown;
  try {
    SqliteStore.open(file);
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(SqliteOpenError);
  expect((error as SqliteOpenError).reason).toBe(reason);
  expect((error as Error).message).toContain(file);
  expect(digest(file), "file bytes changed").toBe(before);
  expect(filesOf(tmp.dir, name)).toEqual(sideFiles);
  return error as SqliteOpenError;
}

/** Tries to open `file` in a child process; returns what it reported. */
async function openInChild(file: string): Promise<{ ok: boolean; name?: string; reason?: string }> {
  const child = spawnFixture("open.ts", [file]);
  const lines: string[] = [];
  onLines(child, (line) => lines.push(line));
  await exited(child);
  return JSON.parse(lines[0]);
}

/** A closed store with some data in it (several pages). */
async function populated(file: string): Promise<number> {
  const store = SqliteStore.open(file);
  const writes = Array.from({ length: 300 }, (_, i) =>
    store.create(`/data/${i}`, `${i}:${"v".repeat(1000)}`),
  );
  await Promise.all(writes);
  const revision = await store.currentRevision();
  await store.close();
  return revision;
}

describe("SqliteStore.open refuses files it must not touch", () => {
  it("refuses a file that is not a SQLite database", () => {
    const { name, file } = fresh();
    fs.writeFileSync(file, "this is not a database\n".repeat(200));
    const error = expectRefused(name, file, "not-a-database");
    expect(error.message).toMatch(/not a SQLite database/);
    const short = fresh();
    fs.writeFileSync(short.file, "SQLite format 3\0short");
    expectRefused(short.name, short.file, "not-a-database");
  });

  it("refuses a damaged store", async () => {
    const { name, file } = fresh();
    await populated(file);
    const bytes = fs.readFileSync(file);
    const pageSize = bytes.readUInt16BE(16);
    // Scribble over the middle of the third page (a b-tree page of the store).
    bytes.fill(0xa5, pageSize * 2 + 8, pageSize * 3 - 8);
    fs.writeFileSync(file, bytes);
    expectRefused(name, file, "corrupt");
  });

  it("refuses a truncated store", async () => {
    const { name, file } = fresh();
    await populated(file);
    const size = fs.statSync(file).size;
    const pageSize = fs.readFileSync(file).readUInt16BE(16);
    fs.truncateSync(file, size - pageSize * 10);
    expectRefused(name, file, "corrupt");
    fs.truncateSync(file, size - pageSize * 10 - 100);
    expectRefused(name, file, "corrupt");
  });

  it("refuses a store written by a newer schema version", async () => {
    const { name, file } = fresh();
    await populated(file);
    const raw = new Database(file);
    raw.pragma("user_version = 99");
    raw.close();
    const error = expectRefused(name, file, "newer-schema");
    expect(error.message).toMatch(/schema version 99/);
  });

  it("refuses another application's SQLite database", () => {
    const { name, file } = fresh();
    const raw = new Database(file);
    raw.exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine')");
    raw.close();
    expectRefused(name, file, "foreign-database");
  });

  it("refuses a second writer in the same process while the first keeps working", async () => {
    const { name, file } = fresh();
    const first = SqliteStore.open(file);
    await first.create("/a", "v");
    expectRefused(name, file, "locked");
    // The refused open did not loosen the first store's hold on the file.
    expect(await openInChild(file)).toMatchObject({ ok: false, reason: "locked" });
    expect(await first.create("/b", "v")).toBe(2);
    await first.close();
    const again = SqliteStore.open(file);
    expect(await again.currentRevision()).toBe(2);
    await again.close();
  });

  it("refuses a second writer in another process", async () => {
    const { file } = fresh();
    const store = SqliteStore.open(file);
    await store.create("/a", "v");
    const before = digest(file);
    expect(await openInChild(file)).toMatchObject({
      ok: false,
      name: "SqliteOpenError",
      reason: "locked",
    });
    expect(digest(file)).toBe(before);
    expect(await store.create("/b", "v")).toBe(2);
    await store.close();
    expect(await openInChild(file)).toMatchObject({ ok: true, revision: 2 });
  });
});

describe("SqliteStore file permissions", () => {
  it("creates the store and its WAL files readable by their owner only, whatever the umask", async () => {
    const { file } = fresh();
    fs.chmodSync(tmp.dir, 0o755);
    const umask = process.umask(0o022);
    let store: SqliteStore;
    try {
      store = SqliteStore.open(file);
    } finally {
      process.umask(umask);
    }
    try {
      await store.create("/k/a", "a");
      for (const f of [file, `${file}-wal`, `${file}-shm`]) {
        expect(fs.existsSync(f), f).toBe(true);
        expect((fs.statSync(f).mode & 0o777).toString(8), f).toBe("600");
      }
    } finally {
      await store.close();
    }
  });
});

describe("SqliteStore reopen", () => {
  it("keeps revision, data, history and the compacted revision", async () => {
    const { file } = fresh();
    const store = SqliteStore.open(file);
    const r1 = await store.create("/k/a", "a1");
    const r2 = await store.update("/k/a", "a2", r1);
    const r3 = await store.create("/k/b", "b1");
    await store.compact(r2);
    const r4 = await store.delete("/k/b", r3);
    await store.close();

    const reopened = SqliteStore.open(file);
    expect(await reopened.currentRevision()).toBe(r4);
    expect(await reopened.compactedRevision()).toBe(r2);
    expect((await reopened.list("/k/")).items).toEqual([
      { key: "/k/a", value: "a2", createRevision: r1, modRevision: r2 },
    ]);
    expect((await reopened.get("/k/b", { revision: r3 }))?.value).toBe("b1");
    const events = [];
    for await (const ev of reopened.watch("/k/", r2)) {
      events.push(`${ev.type} ${ev.key} ${ev.revision}`);
      if (ev.revision === r4) break;
    }
    expect(events).toEqual([`create /k/b ${r3}`, `delete /k/b ${r4}`]);
    expect(await reopened.create("/k/c", "c")).toBe(r4 + 1);
    await reopened.close();
  });

  it("keeps the revision when compaction removed the newest row", async () => {
    const { file } = fresh();
    const store = SqliteStore.open(file);
    const r1 = await store.create("/gone", "v");
    const r2 = await store.delete("/gone", r1);
    await store.compact(r2);
    await store.close();
    const raw = new Database(file, { readonly: true });
    expect(raw.prepare("SELECT count(*) FROM history").pluck().get()).toBe(0);
    expect(raw.prepare("SELECT count(*) FROM current").pluck().get()).toBe(0);
    raw.close();
    const reopened = SqliteStore.open(file);
    expect(await reopened.currentRevision()).toBe(r2);
    expect(await reopened.create("/gone", "again")).toBe(r2 + 1);
    await reopened.close();
  });
});

describe("SqliteStore lock file", () => {
  /** Writes a lock file for `file` as if `owner` held the store. */
  function writeLock(file: string, owner: Record<string, unknown>): string {
    const lock = lockFileOf(file);
    fs.writeFileSync(lock, `${JSON.stringify({ host: "elsewhere", token: "t0", ...owner })}\n`);
    return lock;
  }

  /** The start time /proc gives for `pid` (field 22 of its stat line). */
  function startOf(pid: number): string {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  }

  it("holds the lock while open and removes it on close", async () => {
    const { file } = fresh();
    const store = SqliteStore.open(file);
    const owner = JSON.parse(fs.readFileSync(lockFileOf(file), "utf8"));
    expect(owner).toMatchObject({ pid: process.pid, start: startOf(process.pid) });
    await store.close();
    expect(fs.existsSync(lockFileOf(file))).toBe(false);
  });

  it("refuses a store locked by a live process, touching neither file", async () => {
    const { name, file } = fresh();
    await populated(file);
    const sleeper = spawnFixture("sleeper.ts", []);
    try {
      await new Promise<void>((resolve) =>
        onLines(sleeper, (line) => line === "ready" && resolve()),
      );
      const lock = writeLock(file, { pid: sleeper.pid, start: startOf(sleeper.pid!) });
      const lockBytes = fs.readFileSync(lock, "utf8");
      const error = expectRefused(name, file, "locked");
      expect(error.message).toContain(`process ${sleeper.pid}`);
      expect(fs.readFileSync(lock, "utf8")).toBe(lockBytes);
      // Without a start time to compare, a live pid still holds the lock.
      writeLock(file, { pid: sleeper.pid, start: null });
      expectRefused(name, file, "locked");
    } finally {
      sleeper.kill("SIGKILL");
      await exited(sleeper);
    }
  });

  it("takes over a lock left by a process that is gone", async () => {
    const { file } = fresh();
    const revision = await populated(file);
    const gone = spawnSync(process.execPath, ["-e", ""]).pid;
    writeLock(file, { pid: gone, start: "1" });
    const store = SqliteStore.open(file);
    expect(await store.currentRevision()).toBe(revision);
    expect(JSON.parse(fs.readFileSync(lockFileOf(file), "utf8")).pid).toBe(process.pid);
    await store.close();
  });

  it("takes over a lock whose pid now belongs to another process", async () => {
    const { file } = fresh();
    await populated(file);
    // This process's pid, but a start time it does not have: the pid was reused.
    writeLock(file, { pid: process.pid, start: String(Number(startOf(process.pid)) - 1) });
    const store = SqliteStore.open(file);
    expect(await store.create("/after-takeover", "v")).toBeGreaterThan(0);
    await store.close();
  });

  it("waits out a lock file being written, and takes over one left half-written", async () => {
    const { name, file } = fresh();
    await populated(file);
    const lock = lockFileOf(file);
    fs.writeFileSync(lock, '{"pid":');
    const error = expectRefused(name, file, "locked");
    expect(error.message).toMatch(/being written/);
    const old = (Date.now() - LOCK_PARTIAL_GRACE_MS - 1000) / 1000;
    fs.utimesSync(lock, old, old);
    const store = SqliteStore.open(file);
    await store.close();
    expect(fs.existsSync(lock)).toBe(false);
  });

  it("releases the lock of a process that exits without closing its store", async () => {
    const { file } = fresh();
    const child = spawnFixture("unclosed.ts", [file]);
    const lines: string[] = [];
    onLines(child, (line) => lines.push(line));
    let stderr = "";
    child.stderr!.on("data", (d) => {
      stderr += d;
    });
    // The child ends by itself: an idle store does not keep a process alive.
    expect(await exited(child), stderr).toEqual({ code: 0, signal: null });
    expect(lines).toEqual(["created 1"]);
    expect(fs.existsSync(lockFileOf(file))).toBe(false);
    const store = SqliteStore.open(file);
    expect((await store.get("/unclosed"))?.value).toBe("v");
    await store.close();
  });
});

describe("SqliteStore page caches", () => {
  it("gives the writer thread's connection its own, smaller page cache", async () => {
    const { file } = fresh();
    await populated(file);
    const db = openWriterConnection(file, true);
    try {
      expect(db.pragma("cache_size", { simple: true })).toBe(-WRITER_PAGE_CACHE_KIB);
    } finally {
      db.close();
    }
    expect(WRITER_PAGE_CACHE_KIB).toBeLessThan(PAGE_CACHE_KIB);
  });
});
