/**
 * The on-disk layout of a SQLite store.
 *
 * - `history`: one row per revision: the write's key, value (NULL for a delete),
 *   createRevision, and `prev_row`, the revision of the previous row of the same key
 *   (NULL for the first). A create is a row whose create_revision equals its revision.
 * - `current`: one row per key that has history, pointing at its newest row, with
 *   `live` = 0 when that row is a delete. Reads of current state are index lookups over
 *   live rows, never a scan or GROUP BY over history. A read at a past revision walks a
 *   key's rows back from its newest through `prev_row`; there is deliberately no second
 *   index of history by key, which would double the pages every commit writes.
 * - `meta`: the compacted revision and how far compaction has physically got.
 *
 * The format is identified by PRAGMA application_id and versioned by PRAGMA user_version.
 */

/** Schema version this code writes and reads (PRAGMA user_version). */
export const SCHEMA_VERSION = 1;

/** Marks a file as a Setpoint store (PRAGMA application_id): "SETP". */
export const APPLICATION_ID = 0x53455450;

/** Tables a valid store contains. */
export const TABLES = ["meta", "history", "current"] as const;

export const CREATE_SCHEMA = `
CREATE TABLE meta (
  name TEXT PRIMARY KEY,
  value INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE history (
  revision INTEGER PRIMARY KEY,
  key TEXT NOT NULL,
  value TEXT,
  create_revision INTEGER NOT NULL,
  prev_row INTEGER,
  written_at INTEGER NOT NULL
);

CREATE TABLE current (
  key TEXT PRIMARY KEY,
  revision INTEGER NOT NULL,
  live INTEGER NOT NULL
) WITHOUT ROWID;

INSERT INTO meta (name, value) VALUES ('compacted_revision', 0), ('compact_progress', 0);
PRAGMA application_id = ${APPLICATION_ID};
PRAGMA user_version = ${SCHEMA_VERSION};
`;

/** meta.name of the newest compacted revision (reads before it fail). */
export const META_COMPACTED = "compacted_revision";
/** meta.name of the revision through which superseded rows have been deleted. */
export const META_COMPACT_PROGRESS = "compact_progress";
