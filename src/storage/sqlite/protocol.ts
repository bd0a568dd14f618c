/**
 * What passes between a SqliteStore and its writer (in process, or on the writer thread):
 * writes go in, in order; reports come out in the order things were committed. Every
 * type here is plain data, so it crosses a thread boundary by structured clone.
 */
import type { KeyValue } from "../store.ts";

export type WriteKind = "create" | "update" | "delete";

/** One write handed to the writer. */
export interface WriteRequest {
  kind: WriteKind;
  key: string;
  /** The new value; null for a delete. */
  value: string | null;
  /** Compare-and-swap revision; null for a create or an unconditional delete. */
  expected: number | null;
}

/** A write that committed with its own revision. */
export interface WriteApplied {
  revision: number;
  createRevision: number;
  /** The item just before the write (null for a create). */
  prev: KeyValue | null;
}

/** Why the contract refused a write (it took no revision). */
export type RefusalReason = "exists" | "missing" | "conflict";

/** A write the contract refused. */
export interface WriteRefused {
  refused: RefusalReason;
  /** The item the store holds (for "exists" and "conflict"). */
  current: KeyValue | null;
}

export type WriteOutcome = WriteApplied | WriteRefused;

/**
 * What the writer reports. Calls come in commit order; `committed` and `commitFailed`
 * each cover the oldest writes handed over and not yet reported, as many as there are
 * outcomes (or `writes`).
 */
export interface WriterReports {
  /** One transaction committed durably; one outcome per write, in order. */
  committed(outcomes: WriteOutcome[]): void;
  /** One transaction failed and was rolled back: its `writes` writes took no revision. */
  commitFailed(writes: number, message: string): void;
  /** Superseded history is deleted through `progress`, after `batches` more batches. */
  compacted(progress: number, batches: number): void;
  /** Compaction stopped on an error; a later compact() starts it again. */
  compactionFailed(message: string): void;
}

/** How the writer thread opens a store's file. */
export interface WriterOpenOptions {
  path: string;
  durable: boolean;
  compactionBatchSize: number;
}

/** Messages to the writer thread; `id` names the store. */
export type ToWriterThread =
  | ({ id: number; type: "open" } & WriterOpenOptions)
  | { id: number; type: "write"; writes: WriteRequest[]; now: number }
  | { id: number; type: "compact"; revision: number }
  | { id: number; type: "close" };

/** Messages from the writer thread; `id` names the store. */
export type FromWriterThread =
  | { id: number; type: "committed"; outcomes: WriteOutcome[] }
  | { id: number; type: "commit-failed"; writes: number; message: string }
  | { id: number; type: "compacted"; progress: number; batches: number }
  | { id: number; type: "compaction-failed"; message: string }
  /** The store's writer cannot go on (for example its file would not open). */
  | { id: number; type: "fatal"; message: string }
  /** Every write handed over has been reported and the file is closed. */
  | { id: number; type: "closed" };
