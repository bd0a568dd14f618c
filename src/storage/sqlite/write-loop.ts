/**
 * Group commit and background compaction around one SqliteWriter, wherever it runs.
 *
 * Writes handed over while the thread is busy (committing, or running other code) wait
 * in a queue; the next turn of the event loop commits them together, up to
 * MAX_BATCH_WRITES writes or MAX_BATCH_VALUE_CHARS of values per transaction.
 * Compaction runs one small batch per turn, and queued writes always commit before the
 * next compaction batch, so compaction never holds writers back for long.
 */
import { Fifo } from "./fifo.ts";
import { MAX_BATCH_VALUE_CHARS, MAX_BATCH_WRITES } from "./options.ts";
import type { WriteRequest, WriterReports } from "./protocol.ts";
import type { SqliteWriter } from "./writer.ts";

export class WriteLoop {
  readonly #writer: SqliteWriter;
  readonly #reports: WriterReports;
  readonly #compactionBatchSize: number;
  readonly #queue = new Fifo<WriteRequest>();
  #latestNow = 0;
  #scheduled = false;
  #compacting = false;
  #closed = false;

  constructor(writer: SqliteWriter, reports: WriterReports, compactionBatchSize: number) {
    this.#writer = writer;
    this.#reports = reports;
    this.#compactionBatchSize = Math.max(1, compactionBatchSize);
    // A compaction cut short (by a crash or a close) goes on where it stopped.
    if (writer.compactProgress < writer.compacted) this.#startCompaction();
  }

  /** Queues writes (in order) to commit on the next turn; `now` stamps them (ms). */
  enqueue(writes: readonly WriteRequest[], now: number): void {
    if (this.#closed) throw new Error("write loop is closed");
    for (const write of writes) this.#queue.push(write);
    if (now > this.#latestNow) this.#latestNow = now;
    this.#schedule();
  }

  /** Queues writes and commits everything queued now (for a writer on the caller's thread). */
  commitNow(writes: readonly WriteRequest[], now: number): void {
    if (this.#closed) throw new Error("write loop is closed");
    for (const write of writes) this.#queue.push(write);
    if (now > this.#latestNow) this.#latestNow = now;
    this.commitQueued();
  }

  /** Commits everything queued now, in as many transactions as the batch limits need. */
  commitQueued(): void {
    while (this.#queue.length > 0) this.#commitBatch();
  }

  /** Forgets history before `revision` and deletes it in the background, batch by batch. */
  compact(revision: number): void {
    if (this.#closed) return;
    try {
      this.#writer.setCompacted(revision);
    } catch (error) {
      this.#reports.compactionFailed(messageOf(error));
      return;
    }
    this.#startCompaction();
  }

  /** Commits what is queued and stops; compaction left over resumes on the next open. */
  close(): void {
    this.commitQueued();
    this.#closed = true;
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      if (this.#closed) return;
      this.#commitBatch();
      if (this.#queue.length > 0) this.#schedule();
    });
  }

  #commitBatch(): void {
    const batch = this.#takeBatch();
    if (batch.length === 0) return;
    let outcomes: ReturnType<SqliteWriter["commit"]>;
    try {
      outcomes = this.#writer.commit(batch, this.#latestNow);
    } catch (error) {
      this.#reports.commitFailed(batch.length, `commit failed: ${messageOf(error)}`);
      return;
    }
    this.#reports.committed(outcomes);
  }

  #takeBatch(): WriteRequest[] {
    let count = 0;
    let chars = 0;
    for (;;) {
      const next = this.#queue.at(count);
      if (next === undefined || count >= MAX_BATCH_WRITES) break;
      chars += next.value?.length ?? 0;
      if (count > 0 && chars > MAX_BATCH_VALUE_CHARS) break;
      count++;
    }
    return this.#queue.take(count);
  }

  #startCompaction(): void {
    if (this.#compacting) return;
    this.#compacting = true;
    void this.#compactInBatches().finally(() => {
      this.#compacting = false;
    });
  }

  async #compactInBatches(): Promise<void> {
    while (!this.#closed) {
      // Writes waiting go first: compaction never makes them wait a whole run.
      this.commitQueued();
      let progressed: boolean;
      try {
        progressed = this.#writer.compactStep(this.#compactionBatchSize);
      } catch (error) {
        this.#reports.compactionFailed(`compaction failed: ${messageOf(error)}`);
        return;
      }
      if (!progressed) return;
      this.#reports.compacted(this.#writer.compactProgress, 1);
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
