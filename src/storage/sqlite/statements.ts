import type Database from "better-sqlite3";

/** A key's newest row, as the current-state index sees it (value NULL: deleted). */
export interface CurrentRow {
  key: string;
  value: string | null;
  create_revision: number;
  revision: number;
  prev_row: number | null;
}

/** One history row. */
export interface HistoryRow {
  revision: number;
  value: string | null;
  create_revision: number;
  prev_row: number | null;
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

const CURRENT_COLUMNS =
  "c.key AS key, h.value AS value, h.create_revision AS create_revision, c.revision AS revision, h.prev_row AS prev_row";

/** The newest row of `key` (live or a delete), if it has history. */
function getCurrent(db: Database.Database) {
  return db.prepare<[string], CurrentRow>(
    `SELECT ${CURRENT_COLUMNS} FROM current c JOIN history h ON h.revision = c.revision WHERE c.key = ?`,
  );
}

function getMeta(db: Database.Database) {
  return db.prepare<[string], number>("SELECT value FROM meta WHERE name = ?").pluck();
}

function maxRevision(db: Database.Database) {
  return db.prepare<[], number | null>("SELECT max(revision) FROM history").pluck();
}

function writtenAt(db: Database.Database) {
  return db.prepare<[number], number>("SELECT written_at FROM history WHERE revision = ?").pluck();
}

/**
 * The statements reads run. Reads are made at a revision R that may be older than what
 * the file holds (a writer on another connection may have committed more): every
 * query here either is bounded by revision or returns what a reader needs to walk a
 * key back to R.
 */
export function prepareReadStatements(db: Database.Database) {
  return {
    getCurrent: getCurrent(db),
    /**
     * Keys in [lower, upper) that may be live at revision R (bound 3): live now, or
     * changed after R. In key order, at most `limit` (-1: all).
     */
    listCandidates: db.prepare<[string, string, number, number], CurrentRow>(
      `SELECT ${CURRENT_COLUMNS} FROM current c JOIN history h ON h.revision = c.revision
       WHERE c.key >= ? AND c.key < ? AND (c.live = 1 OR c.revision > ?) ORDER BY c.key LIMIT ?`,
    ),
    /** Keys in [lower, upper) live now whose newest row is at or before R. */
    countUnchangedLive: db
      .prepare<[string, string, number], number>(
        "SELECT count(*) FROM current WHERE key >= ? AND key < ? AND live = 1 AND revision <= ?",
      )
      .pluck(),
    /** Keys in [lower, upper) changed after R, with their newest row. */
    changedAfter: db.prepare<[string, string, number], CurrentRow>(
      `SELECT ${CURRENT_COLUMNS} FROM current c JOIN history h ON h.revision = c.revision
       WHERE c.key >= ? AND c.key < ? AND c.revision > ?`,
    ),
    historyRow: db.prepare<[number], HistoryRow>(
      "SELECT revision, value, create_revision, prev_row FROM history WHERE revision = ?",
    ),
    /** Changes to keys in [lower, upper) with after < revision <= through, oldest first. */
    changes: db.prepare<[number, number, string, string, number], ChangeRow>(
      `SELECT h.revision AS revision, h.key AS key, h.value AS value,
              h.create_revision AS create_revision, h.prev_row AS prev_row,
              p.value AS prev_value, p.create_revision AS prev_create_revision
       FROM history h LEFT JOIN history p ON p.revision = h.prev_row
       WHERE h.revision > ? AND h.revision <= ? AND +h.key >= ? AND +h.key < ?
       ORDER BY h.revision LIMIT ?`,
    ),
    maxRevision: maxRevision(db),
    writtenAt: writtenAt(db),
    getMeta: getMeta(db),
  };
}

export type ReadStatements = ReturnType<typeof prepareReadStatements>;

/** The statements the writer runs, on its own connection. */
export function prepareWriteStatements(db: Database.Database) {
  return {
    begin: db.prepare("BEGIN IMMEDIATE"),
    commit: db.prepare("COMMIT"),
    rollback: db.prepare("ROLLBACK"),
    getCurrent: getCurrent(db),
    insertHistory: db.prepare<[number, string, string | null, number, number | null, number]>(
      `INSERT INTO history (revision, key, value, create_revision, prev_row, written_at)
       VALUES (?, ?, ?, ?, ?, ?)`,
    ),
    upsertCurrent: db.prepare<[string, number, number]>(
      `INSERT INTO current (key, revision, live) VALUES (?, ?, ?)
       ON CONFLICT (key) DO UPDATE SET revision = excluded.revision, live = excluded.live`,
    ),
    maxRevision: maxRevision(db),
    writtenAt: writtenAt(db),
    getMeta: getMeta(db),
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

export type WriteStatements = ReturnType<typeof prepareWriteStatements>;
