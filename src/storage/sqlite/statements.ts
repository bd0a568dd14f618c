import type Database from "better-sqlite3";

/** A key's newest row, as the current-state index sees it (value NULL: deleted). */
export interface CurrentRow {
  key: string;
  value: string | null;
  create_revision: number;
  revision: number;
}

/** One history row. */
export interface HistoryRow {
  revision: number;
  value: string | null;
  create_revision: number;
  prev_row: number | null;
}

/** A key and its newest row's revision. */
export interface KeyRevision {
  key: string;
  revision: number;
}

/** A history row joined with the row it replaced. */
export interface ChangeRow {
  revision: number;
  key: string;
  value: string | null;
  create_revision: number;
  prev_row: number | null;
  prev_value: string | null;
  prev_create_revision: number | null;
}

/** Every statement the store runs, prepared once per connection. */
export function prepareStatements(db: Database.Database) {
  const currentColumns =
    "c.key AS key, h.value AS value, h.create_revision AS create_revision, c.revision AS revision";
  return {
    begin: db.prepare("BEGIN IMMEDIATE"),
    commit: db.prepare("COMMIT"),
    rollback: db.prepare("ROLLBACK"),

    /** The newest row of `key` (live or a delete), if it has history. */
    getCurrent: db.prepare<[string], CurrentRow>(
      `SELECT ${currentColumns} FROM current c JOIN history h ON h.revision = c.revision WHERE c.key = ?`,
    ),
    /** Live keys in [lower, upper) in key order, at most `limit` (-1: all). */
    listCurrent: db.prepare<[string, string, number], CurrentRow>(
      `SELECT ${currentColumns} FROM current c JOIN history h ON h.revision = c.revision
       WHERE c.key >= ? AND c.key < ? AND c.live = 1 ORDER BY c.key LIMIT ?`,
    ),
    countCurrent: db
      .prepare<[string, string], number>(
        "SELECT count(*) FROM current WHERE key >= ? AND key < ? AND live = 1",
      )
      .pluck(),
    /** Keys with history (live or not) in [lower, upper), in key order. */
    keysWithHistory: db.prepare<[string, string, number], KeyRevision>(
      "SELECT key, revision FROM current WHERE key >= ? AND key < ? ORDER BY key LIMIT ?",
    ),
    newestRevisionOf: db
      .prepare<[string], number>("SELECT revision FROM current WHERE key = ?")
      .pluck(),
    historyRow: db.prepare<[number], HistoryRow>(
      "SELECT revision, value, create_revision, prev_row FROM history WHERE revision = ?",
    ),

    insertHistory: db.prepare<[number, string, string | null, number, number | null, number]>(
      `INSERT INTO history (revision, key, value, create_revision, prev_row, written_at)
       VALUES (?, ?, ?, ?, ?, ?)`,
    ),
    upsertCurrent: db.prepare<[string, number, number]>(
      `INSERT INTO current (key, revision, live) VALUES (?, ?, ?)
       ON CONFLICT (key) DO UPDATE SET revision = excluded.revision, live = excluded.live`,
    ),

    /** Whether any key in [lower, upper) changed after a revision (scans revisions only). */
    changedSince: db
      .prepare<[number, string, string], number>(
        "SELECT 1 FROM history WHERE revision > ? AND +key >= ? AND +key < ? LIMIT 1",
      )
      .pluck(),
    /** Changes to keys in [lower, upper) with after < revision <= through, oldest first. */
    changes: db.prepare<[number, number, string, string, number], ChangeRow>(
      `SELECT h.revision AS revision, h.key AS key, h.value AS value,
              h.create_revision AS create_revision, h.prev_row AS prev_row,
              p.value AS prev_value, p.create_revision AS prev_create_revision
       FROM history h LEFT JOIN history p ON p.revision = h.prev_row
       WHERE h.revision > ? AND h.revision <= ? AND +h.key >= ? AND +h.key < ?
       ORDER BY h.revision LIMIT ?`,
    ),
    maxRevision: db.prepare<[], number | null>("SELECT max(revision) FROM history").pluck(),
    writtenAt: db
      .prepare<[number], number>("SELECT written_at FROM history WHERE revision = ?")
      .pluck(),

    getMeta: db.prepare<[string], number>("SELECT value FROM meta WHERE name = ?").pluck(),
    setMeta: db.prepare<[string, number]>(
      "INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
    ),
    /** Deletes the rows replaced by writes in (after, through]. */
    deleteReplaced: db.prepare<[number, number]>(
      `DELETE FROM history WHERE revision IN (
         SELECT prev_row FROM history
         WHERE revision > ? AND revision <= ? AND prev_row IS NOT NULL)`,
    ),
    /** Forgets keys whose newest row is a delete in (after, through]. */
    forgetDeletedKeys: db.prepare<{ after: number; through: number }>(
      `DELETE FROM current WHERE live = 0 AND revision <= @through AND key IN (
         SELECT key FROM history
         WHERE revision > @after AND revision <= @through AND value IS NULL)`,
    ),
    /** Deletes the delete rows in (after, through]. */
    deleteTombstones: db.prepare<[number, number]>(
      "DELETE FROM history WHERE revision > ? AND revision <= ? AND value IS NULL",
    ),
  };
}

export type Statements = ReturnType<typeof prepareStatements>;
