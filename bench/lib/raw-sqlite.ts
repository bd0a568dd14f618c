/**
 * The SQLite baseline: raw better-sqlite3, one row per transaction, with the settings the
 * store uses (WAL in normal locking mode, synchronous FULL when durable), on the caller's
 * thread. This is what a store without group commit could at best do.
 */
import Database from "better-sqlite3";
import type { StoreBaseline } from "./store-bench.ts";
import { loopFor } from "./timing.ts";

/** Keys the CAS baseline cycles through (as many as the store phase has callers). */
const CAS_KEYS = 50;

/** Opens a raw baseline database at `file`; `close()` it when done. */
export function rawSqliteBaseline(
  file: string,
  opts: { value: string; durable: boolean },
): StoreBaseline & { close(): void } {
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.pragma(`synchronous = ${opts.durable ? "FULL" : "NORMAL"}`);
  db.exec("CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT NOT NULL, revision INTEGER NOT NULL)");
  const insert = db.prepare("INSERT INTO kv (key, value, revision) VALUES (?, ?, ?)");
  const update = db.prepare("UPDATE kv SET value = ?, revision = ? WHERE key = ? AND revision = ?");
  let revision = 0;
  const casRevisions = Array.from({ length: CAS_KEYS }, (_, k) => {
    insert.run(`/cas/${k}`, opts.value, ++revision);
    return revision;
  });
  const inserts = (ms: number) =>
    loopFor(ms, () => {
      const next = ++revision;
      insert.run(`/raw/${next}`, opts.value, next);
    });
  const label = "raw better-sqlite3, 1 row/txn, same settings";
  return {
    createsSequential: { label: `${label}, INSERT`, run: inserts },
    createsConcurrent: { label: `${label}, INSERT`, run: inserts },
    casUpdates: {
      label: `${label}, CAS UPDATE`,
      run: (ms) =>
        loopFor(ms, (i) => {
          const k = i % CAS_KEYS;
          const next = ++revision;
          if (update.run(opts.value, next, `/cas/${k}`, casRevisions[k]).changes !== 1) {
            throw new Error("baseline CAS update lost");
          }
          casRevisions[k] = next;
        }),
    },
    close: () => db.close(),
  };
}
