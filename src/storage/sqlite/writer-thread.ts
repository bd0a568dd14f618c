/**
 * The SQLite writer thread: it holds a write connection per file store of the process
 * and runs their group commits and compaction (WriteLoop), so that fsync never blocks
 * the stores' event loop. It speaks the protocol in protocol.ts with
 * writer-thread-client.ts; started through writer-thread-boot.mjs.
 */
import { parentPort } from "node:worker_threads";
import type Database from "better-sqlite3";
import { openWriterConnection } from "./open.ts";
import type { FromWriterThread, ToWriterThread, WriterReports } from "./protocol.ts";
import { WriteLoop } from "./write-loop.ts";
import { SqliteWriter } from "./writer.ts";

if (parentPort === null) throw new Error("writer-thread.ts runs as a worker thread only");
const port = parentPort;

interface OpenStore {
  db: Database.Database;
  loop: WriteLoop;
}

const stores = new Map<number, OpenStore>();

function post(message: FromWriterThread): void {
  port.postMessage(message);
}

function reportsFor(id: number): WriterReports {
  return {
    committed: (outcomes) => post({ id, type: "committed", outcomes }),
    commitFailed: (writes, message) => post({ id, type: "commit-failed", writes, message }),
    compacted: (progress, batches) => post({ id, type: "compacted", progress, batches }),
    compactionFailed: (message) => post({ id, type: "compaction-failed", message }),
  };
}

function open(message: Extract<ToWriterThread, { type: "open" }>): void {
  let db: Database.Database | null = null;
  try {
    db = openWriterConnection(message.path, message.durable);
    const loop = new WriteLoop(
      new SqliteWriter(db),
      reportsFor(message.id),
      message.compactionBatchSize,
    );
    stores.set(message.id, { db, loop });
  } catch (error) {
    db?.close();
    post({
      id: message.id,
      type: "fatal",
      message: `cannot open the store for writing: ${String(error)}`,
    });
  }
}

function close(id: number): void {
  const store = stores.get(id);
  stores.delete(id);
  if (store) {
    store.loop.close();
    try {
      // Leave the WAL empty, so the store's last connection has nothing to copy back.
      store.db.pragma("wal_checkpoint(TRUNCATE)");
    } catch {
      // A checkpoint left for later costs time, not data.
    }
    try {
      store.db.close();
    } catch (error) {
      post({ id, type: "fatal", message: `closing the store failed: ${String(error)}` });
    }
  }
  post({ id, type: "closed" });
}

port.on("message", (message: ToWriterThread) => {
  switch (message.type) {
    case "open":
      open(message);
      break;
    case "write":
      stores.get(message.id)?.loop.enqueue(message.writes, message.now);
      break;
    case "compact":
      stores.get(message.id)?.loop.compact(message.revision);
      break;
    case "close":
      close(message.id);
      break;
  }
});
