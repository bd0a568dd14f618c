/**
 * Reads of a SQLite store at a given revision, on the store's own connection.
 *
 * The file may hold more than the revision read at: with the writer thread, batches
 * committed there are visible to this connection a moment before the store learns of
 * them. So every read names its revision R and sees exactly the state at R: a key whose
 * newest row is after R is walked back through `prev_row` to its row at R. Rows at or
 * after the compacted revision are never deleted, and R is never below it, so the walk
 * always finds what it needs even while compaction runs on the other connection.
 */
import type Database from "better-sqlite3";
import type { KeyValue, WatchEvent } from "../store.ts";
import { keyAfter } from "./prefix-range.ts";
import { META_COMPACT_PROGRESS, META_COMPACTED } from "./sql-schema.ts";
import {
  type ChangeRow,
  type CurrentRow,
  type HistoryRow,
  prepareReadStatements,
  type ReadStatements,
} from "./statements.ts";
import { toKeyValue } from "./writer.ts";

/** Candidate keys read per query while a list skips keys absent at its revision. */
const LIST_CHUNK = 256;

/** One page of a list: the items (at most limit), and whether more follow. */
export interface Page {
  items: KeyValue[];
  more: boolean;
}

export class SnapshotReader {
  readonly #sql: ReadStatements;
  /** Runs a step in one read transaction: every statement in it sees the same file. */
  readonly #snapshot: <T>(step: () => T) => T;

  constructor(db: Database.Database) {
    this.#sql = prepareReadStatements(db);
    const inTransaction = db.transaction((step: () => unknown) => step());
    this.#snapshot = <T>(step: () => T) => inTransaction(step) as T;
  }

  /** The store's revision, compacted revision and compaction progress as on disk. */
  marks(): { revision: number; compacted: number; compactProgress: number } {
    const compacted = this.#sql.getMeta.get(META_COMPACTED) ?? 0;
    return {
      revision: Math.max(this.#sql.maxRevision.get() ?? 0, compacted),
      compacted,
      compactProgress: this.#sql.getMeta.get(META_COMPACT_PROGRESS) ?? 0,
    };
  }

  /** `key` as it was at revision `at`, or null if absent then. */
  get(key: string, at: number): KeyValue | null {
    const row = this.#sql.getCurrent.get(key);
    return row === undefined ? null : this.#versionAt(row, at);
  }

  /** Live keys in [lower, upper) at revision `at`, in key order, at most `limit` (0: all). */
  list(lower: string, upper: string, at: number, limit: number): Page {
    return this.#snapshot(() => this.#list(lower, upper, at, limit));
  }

  #list(lower: string, upper: string, at: number, limit: number): Page {
    const items: KeyValue[] = [];
    let from = lower;
    for (let round = 0; ; round++) {
      // Most candidates are live at `at`: ask for exactly what is missing, then in chunks.
      const missing = limit + 1 - items.length;
      const want = limit > 0 ? (round === 0 ? missing : Math.max(missing, LIST_CHUNK)) : -1;
      const rows = this.#sql.listCandidates.all(from, upper, at, want);
      for (const row of rows) {
        const kv = this.#versionAt(row, at);
        if (kv) items.push(kv);
        if (limit > 0 && items.length > limit) break;
      }
      if (want < 0 || rows.length < want || (limit > 0 && items.length > limit)) break;
      from = keyAfter(rows[rows.length - 1].key);
    }
    const more = limit > 0 && items.length > limit;
    if (more) items.length = limit;
    return { items, more };
  }

  /** How many keys in [lower, upper) were live at revision `at`. */
  count(lower: string, upper: string, at: number): number {
    // One snapshot: a key updated between the two queries must not count twice.
    return this.#snapshot(() => {
      let live = this.#sql.countUnchangedLive.get(lower, upper, at) ?? 0;
      for (const row of this.#sql.changedAfter.all(lower, upper, at)) {
        if (this.#versionAt(row, at) !== null) live++;
      }
      return live;
    });
  }

  /** Changes to keys in [lower, upper) with after < revision <= through, oldest first. */
  changes(
    lower: string,
    upper: string,
    after: number,
    through: number,
    limit: number,
  ): WatchEvent[] {
    return this.#sql.changes.all(after, through, lower, upper, limit).map(toEvent);
  }

  /** When the write of `revision` was committed (ms), if its row is still there. */
  writtenAt(revision: number): number | undefined {
    return this.#sql.writtenAt.get(revision);
  }

  /** The version of a key at `at`, walking back from its newest row. */
  #versionAt(newest: CurrentRow, at: number): KeyValue | null {
    if (newest.revision <= at) {
      return newest.value === null ? null : toKeyValue(newest, newest.value);
    }
    let row: HistoryRow | undefined =
      newest.prev_row === null ? undefined : this.#sql.historyRow.get(newest.prev_row);
    while (row !== undefined && row.revision > at) {
      row = row.prev_row === null ? undefined : this.#sql.historyRow.get(row.prev_row);
    }
    // A row missing on the way was compacted: it was at or before the compacted
    // revision and not the newest then, or a delete, so the key was absent.
    if (row === undefined || row.value === null) return null;
    return {
      key: newest.key,
      value: row.value,
      createRevision: row.create_revision,
      modRevision: row.revision,
    };
  }
}

function toEvent(row: ChangeRow): WatchEvent {
  const type =
    row.value === null ? "delete" : row.create_revision === row.revision ? "create" : "update";
  const prev: KeyValue | null =
    type === "create" || row.prev_row === null || row.prev_value === null
      ? null
      : {
          key: row.key,
          value: row.prev_value,
          createRevision: row.prev_create_revision ?? row.create_revision,
          modRevision: row.prev_row,
        };
  return {
    type,
    key: row.key,
    revision: row.revision,
    value: row.value,
    createRevision: row.create_revision,
    prev,
  };
}
