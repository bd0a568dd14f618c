/**
 * The on-disk layout of a SQLite store.
 *
 * - `history`: one row per revision (the write's key, value, createRevision, and the
 *   modRevision of the version it replaced). A delete is a row with a NULL value.
 * - `current`: one row per live key pointing at its newest history row, so reads of
 *   current state are index lookups, never a scan or GROUP BY over history.
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
  prev_revision INTEGER,
  written_at INTEGER NOT NULL
);
CREATE INDEX history_by_key ON history (key, revision);

CREATE TABLE current (
  key TEXT PRIMARY KEY,
  revision INTEGER NOT NULL
) WITHOUT ROWID;

INSERT INTO meta (name, value) VALUES ('compacted_revision', 0), ('compact_progress', 0);
PRAGMA application_id = ${APPLICATION_ID};
PRAGMA user_version = ${SCHEMA_VERSION};
`;

/** meta.name of the newest compacted revision (reads before it fail). */
export const META_COMPACTED = "compacted_revision";
/** meta.name of the revision through which superseded rows have been deleted. */
export const META_COMPACT_PROGRESS = "compact_progress";
