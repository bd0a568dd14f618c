/**
 * How a SqliteStore reaches its writer: a WriterChannel takes writes and compaction
 * requests and delivers the writer's reports (WriterEvents) back on the store's thread,
 * in commit order. InProcessChannel runs the writer on the store's own connection and
 * thread; the writer thread's channel is in writer-thread-client.ts.
 */
import type Database from "better-sqlite3";
import type { WriteRequest, WriterReports } from "./protocol.ts";
import { WriteLoop } from "./write-loop.ts";
import { SqliteWriter } from "./writer.ts";

/** The writer's reports, plus the news that it is gone. */
export interface WriterEvents extends WriterReports {
  /** The writer stopped for good: no report follows, writes not reported are lost. */
  lost(error: Error): void;
}

export interface WriterChannel {
  /** Whether the writer commits on a thread of its own. */
  readonly threaded: boolean;
  /** Hands writes over, in order (reports cover them in the same order). */
  send(writes: WriteRequest[], now: number): void;
  /** Asks the writer to forget history before `revision` and delete it in the background. */
  compact(revision: number): void;
  /** Whether the store is waiting on the writer (a writer thread then keeps the process alive). */
  setBusy(busy: boolean): void;
  /** Commits what was handed over and stops the writer; resolves after its last report. */
  close(): Promise<void>;
}

/** The writer on the store's own connection and thread: each send commits at once. */
export class InProcessChannel implements WriterChannel {
  readonly threaded = false;
  readonly #loop: WriteLoop;

  constructor(db: Database.Database, events: WriterEvents, compactionBatchSize: number) {
    this.#loop = new WriteLoop(new SqliteWriter(db), events, compactionBatchSize);
  }

  send(writes: WriteRequest[], now: number): void {
    this.#loop.commitNow(writes, now);
  }

  compact(revision: number): void {
    this.#loop.compact(revision);
  }

  setBusy(): void {}

  async close(): Promise<void> {
    this.#loop.close();
  }
}
