import type Database from "better-sqlite3";

/** A live key as the current-state index sees it. */
export interface CurrentRow {
  key: string;
  value: string;
  create_revision: number;
  revision: number;
}

/** A history row at or before some revision (value NULL: the key was deleted). */
export interface VersionRow {
  revision: number;
  value: string | null;
  create_revision: number;
}

/** A history row joined with the version it replaced. */
export interface ChangeRow {
  revision: number;
  key: string;
  value: string | null;
  create_revision: number;
  prev_revision: number | null;
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

    getCurrent: db.prepare<[string], CurrentRow>(
      `SELECT ${currentColumns} FROM current c JOIN history h ON h.revision = c.revision WHERE c.key = ?`,
    ),
    /** Live keys in [lower, upper) in key order, at most `limit` (-1: all). */
    listCurrent: db.prepare<[string, string, number], CurrentRow>(
      `SELECT ${currentColumns} FROM current c JOIN history h ON h.revision = c.revision
       WHERE c.key >= ? AND c.key < ? ORDER BY c.key LIMIT ?`,
    ),
    countCurrent: db
      .prepare<[string, string], number>("SELECT count(*) FROM current WHERE key >= ? AND key < ?")
      .pluck(),

    insertHistory: db.prepare<[number, string, string | null, number, number | null, number]>(
      `INSERT INTO history (revision, key, value, create_revision, prev_revision, written_at)
       VALUES (?, ?, ?, ?, ?, ?)`,
    ),
    upsertCurrent: db.prepare<[string, number]>(
      "INSERT INTO current (key, revision) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET revision = excluded.revision",
    ),
    deleteCurrent: db.prepare<[string]>("DELETE FROM current WHERE key = ?"),

    /** The version of `key` as of a revision. */
    versionAt: db.prepare<[string, number], VersionRow>(
      `SELECT revision, value, create_revision FROM history
       WHERE key = ? AND revision <= ? ORDER BY revision DESC LIMIT 1`,
    ),
    /** The first key with history in [lower, upper). */
    firstHistoryKey: db
      .prepare<[string, string], string>(
        "SELECT key FROM history WHERE key >= ? AND key < ? ORDER BY key LIMIT 1",
      )
      .pluck(),
    /** Whether any key in [lower, upper) changed after a revision (scans revisions only). */
    changedSince: db
      .prepare<[number, string, string], number>(
        "SELECT 1 FROM history WHERE revision > ? AND +key >= ? AND +key < ? LIMIT 1",
      )
      .pluck(),
    /** Changes to keys in [lower, upper) with after < revision <= through, oldest first. */
    changes: db.prepare<[number, number, string, string, number], ChangeRow>(
      `SELECT h.revision AS revision, h.key AS key, h.value AS value,
              h.create_revision AS create_revision, h.prev_revision AS prev_revision,
              p.value AS prev_value, p.create_revision AS prev_create_revision
       FROM history h LEFT JOIN history p ON p.revision = h.prev_revision
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
    /** Deletes the versions replaced by writes in (after, through]. */
    deleteReplaced: db.prepare<[number, number]>(
      `DELETE FROM history WHERE revision IN (
         SELECT prev_revision FROM history
         WHERE revision > ? AND revision <= ? AND prev_revision IS NOT NULL)`,
    ),
    /** Deletes the tombstones (delete rows) in (after, through]. */
    deleteTombstones: db.prepare<[number, number]>(
      "DELETE FROM history WHERE revision > ? AND revision <= ? AND value IS NULL",
    ),
    countHistory: db.prepare<[], number>("SELECT count(*) FROM history").pluck(),
  };
}

export type Statements = ReturnType<typeof prepareStatements>;
