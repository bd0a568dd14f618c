/**
 * The transactions of a SQLite store, on the connection that writes: group commits
 * (each write with its own revision and its own compare-and-swap check) and compaction
 * batches. The same class runs on the writer thread and, for `:memory:` stores or with
 * `writerThread: false`, in the store's own thread.
 */
import type Database from "better-sqlite3";
import type { KeyValue } from "../store.ts";
import type { WriteOutcome, WriteRequest } from "./protocol.ts";
import { META_COMPACT_PROGRESS, META_COMPACTED } from "./sql-schema.ts";
import { type CurrentRow, prepareWriteStatements, type WriteStatements } from "./statements.ts";

export class SqliteWriter {
  readonly #db: Database.Database;
  readonly #sql: WriteStatements;
  #revision: number;
  #compacted: number;
  #compactProgress: number;
  #lastWrittenAt = 0;

  constructor(db: Database.Database) {
    this.#db = db;
    this.#sql = prepareWriteStatements(db);
    this.#compacted = this.#sql.getMeta.get(META_COMPACTED) ?? 0;
    this.#compactProgress = this.#sql.getMeta.get(META_COMPACT_PROGRESS) ?? 0;
    // Compaction may have removed the newest row (a delete), never a revision above it.
    this.#revision = Math.max(this.#sql.maxRevision.get() ?? 0, this.#compacted);
    if (this.#revision > 0) this.#lastWrittenAt = this.#sql.writtenAt.get(this.#revision) ?? 0;
  }

  /** The newest committed revision. */
  get revision(): number {
    return this.#revision;
  }

  /** History before this revision is (being) forgotten. */
  get compacted(): number {
    return this.#compacted;
  }

  /** Superseded rows are deleted through this revision. */
  get compactProgress(): number {
    return this.#compactProgress;
  }

  /**
   * Commits `writes` in one transaction, stamped `now` (ms; never earlier than the last
   * commit's stamp). Returns one outcome per write; throws, having rolled back and
   * taken no revision, if the transaction itself fails.
   */
  commit(writes: readonly WriteRequest[], now: number): WriteOutcome[] {
    const stamp = Math.max(now, this.#lastWrittenAt);
    const startRevision = this.#revision;
    const outcomes: WriteOutcome[] = [];
    try {
      this.#sql.begin.run();
      for (const write of writes) outcomes.push(this.#apply(write, stamp));
      this.#sql.commit.run();
    } catch (error) {
      this.#revision = startRevision;
      try {
        if (this.#db.inTransaction) this.#sql.rollback.run();
      } catch {
        // SQLite rolls back on its own when it cannot go on; the cause is thrown below.
      }
      throw error;
    }
    this.#lastWrittenAt = stamp;
    return outcomes;
  }

  /** Applies one write inside the open transaction. */
  #apply(write: WriteRequest, now: number): WriteOutcome {
    const { key } = write;
    const newest = this.#sql.getCurrent.get(key);
    const current = newest && newest.value !== null ? toKeyValue(newest, newest.value) : null;
    if (write.kind === "create") {
      if (current) return { refused: "exists", current };
      const revision = this.#revision + 1;
      this.#sql.insertHistory.run(
        revision,
        key,
        write.value,
        revision,
        newest?.revision ?? null,
        now,
      );
      this.#sql.upsertCurrent.run(key, revision, 1);
      this.#revision = revision;
      return { revision, createRevision: revision, prev: null };
    }
    if (!current) return { refused: "missing", current: null };
    if (write.expected !== null && write.expected !== current.modRevision) {
      return { refused: "conflict", current };
    }
    const revision = this.#revision + 1;
    const createRevision = current.createRevision;
    this.#sql.insertHistory.run(
      revision,
      key,
      write.value,
      createRevision,
      current.modRevision,
      now,
    );
    this.#sql.upsertCurrent.run(key, revision, write.kind === "update" ? 1 : 0);
    this.#revision = revision;
    return { revision, createRevision, prev: current };
  }

  /** Records durably that history before `revision` is gone (rows are deleted after). */
  setCompacted(revision: number): void {
    if (revision <= this.#compacted) return;
    this.#sql.setMeta.run(META_COMPACTED, revision);
    this.#compacted = revision;
  }

  /**
   * Deletes superseded history of at most `batchSize` revisions past the progress mark,
   * in one transaction. Returns false when there was nothing left to do.
   */
  compactStep(batchSize: number): boolean {
    if (this.#compactProgress >= this.#compacted) return false;
    const after = this.#compactProgress;
    const through = Math.min(this.#compacted, after + batchSize);
    this.#db.transaction(() => {
      this.#sql.deleteReplaced.run(after, through);
      this.#sql.forgetDeletedKeys.run({ after, through });
      this.#sql.deleteTombstones.run(after, through);
      this.#sql.setMeta.run(META_COMPACT_PROGRESS, through);
    })();
    this.#compactProgress = through;
    return true;
  }
}

export function toKeyValue(row: CurrentRow, value: string): KeyValue {
  return {
    key: row.key,
    value,
    createRevision: row.create_revision,
    modRevision: row.revision,
  };
}
