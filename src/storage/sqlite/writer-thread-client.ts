/**
 * The store's side of the SQLite writer thread (writer-thread.ts).
 *
 * One thread per process serves every file store the process opens (each with its own
 * write connection): starting a thread that loads TypeScript costs a noticeable fraction
 * of a second, which a process opening many stores (a test suite) should pay once. The
 * thread is unreferenced while no store waits on it, so an idle store never keeps the
 * process alive; once its last store is closed it is terminated, after
 * WRITER_THREAD_LINGER_MS in case another store opens right away.
 *
 * If the thread dies (an error it did not handle, or terminate()), every store it served
 * learns of it through WriterEvents.lost; the next store opened starts a new thread.
 */
import { Worker } from "node:worker_threads";
import type { WriterChannel, WriterEvents } from "./channel.ts";
import type {
  FromWriterThread,
  ToWriterThread,
  WriteRequest,
  WriterOpenOptions,
} from "./protocol.ts";

/** How long the writer thread outlives its last store, waiting for the next one. */
export const WRITER_THREAD_LINGER_MS = 1000;

const BOOT = new URL("./writer-thread-boot.mjs", import.meta.url);

/** The writer thread of this process and the stores it serves. */
class WriterThread {
  static #current: WriterThread | null = null;

  /** The running writer thread, started if there is none. */
  static shared(): WriterThread {
    if (WriterThread.#current === null) WriterThread.#current = new WriterThread();
    return WriterThread.#current;
  }

  /** The running writer thread, if any. */
  static get current(): WriterThread | null {
    return WriterThread.#current;
  }

  readonly worker: Worker;
  readonly #channels = new Map<number, ThreadChannel>();
  readonly #busy = new Set<number>();
  #nextId = 1;
  #stopped = false;
  #linger: NodeJS.Timeout | null = null;

  private constructor() {
    this.worker = new Worker(BOOT, { name: "setpoint-sqlite-writer" });
    this.worker.unref();
    this.worker.on("message", (message: FromWriterThread) => {
      this.#channels.get(message.id)?.deliver(message);
    });
    this.worker.on("error", (error) => this.#stop(error));
    this.worker.on("messageerror", (error) => this.#stop(error));
    this.worker.on("exit", (code) => this.#stop(new Error(`the thread exited with code ${code}`)));
  }

  attach(channel: ThreadChannel, opts: WriterOpenOptions): number {
    if (this.#linger) {
      clearTimeout(this.#linger);
      this.#linger = null;
    }
    const id = this.#nextId++;
    this.#channels.set(id, channel);
    this.post({ id, type: "open", ...opts });
    return id;
  }

  post(message: ToWriterThread): void {
    this.worker.postMessage(message);
  }

  setBusy(id: number, busy: boolean): void {
    if (busy) this.#busy.add(id);
    else this.#busy.delete(id);
    if (this.#busy.size > 0) this.worker.ref();
    else this.worker.unref();
  }

  detach(id: number): void {
    this.#channels.delete(id);
    this.setBusy(id, false);
    if (this.#channels.size > 0 || this.#stopped || this.#linger) return;
    this.#linger = setTimeout(() => {
      this.#linger = null;
      if (this.#channels.size === 0) {
        this.#stop(new Error("the thread was stopped"));
        void this.worker.terminate();
      }
    }, WRITER_THREAD_LINGER_MS);
    this.#linger.unref();
  }

  #stop(error: Error): void {
    if (this.#stopped) return;
    this.#stopped = true;
    if (WriterThread.#current === this) WriterThread.#current = null;
    if (this.#linger) clearTimeout(this.#linger);
    const channels = [...this.#channels.values()];
    this.#channels.clear();
    this.#busy.clear();
    this.worker.unref();
    for (const channel of channels) channel.lost(error);
  }
}

/** A store's channel to the writer thread. */
export class ThreadChannel implements WriterChannel {
  readonly threaded = true;
  readonly #thread: WriterThread;
  readonly #events: WriterEvents;
  readonly #id: number;
  #lost = false;
  #onClosed: (() => void) | null = null;

  constructor(events: WriterEvents, opts: WriterOpenOptions) {
    this.#events = events;
    this.#thread = WriterThread.shared();
    this.#id = this.#thread.attach(this, opts);
  }

  send(writes: WriteRequest[], now: number): void {
    if (!this.#lost) this.#thread.post({ id: this.#id, type: "write", writes, now });
  }

  compact(revision: number): void {
    if (!this.#lost) this.#thread.post({ id: this.#id, type: "compact", revision });
  }

  setBusy(busy: boolean): void {
    if (!this.#lost) this.#thread.setBusy(this.#id, busy);
  }

  close(): Promise<void> {
    if (this.#lost) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.#onClosed = resolve;
      this.#thread.post({ id: this.#id, type: "close" });
    });
  }

  /** A message from the thread for this store. */
  deliver(message: FromWriterThread): void {
    switch (message.type) {
      case "committed":
        this.#events.committed(message.outcomes);
        break;
      case "commit-failed":
        this.#events.commitFailed(message.writes, message.message);
        break;
      case "compacted":
        this.#events.compacted(message.progress, message.batches);
        break;
      case "compaction-failed":
        this.#events.compactionFailed(message.message);
        break;
      case "fatal":
        this.#thread.detach(this.#id);
        this.lost(new Error(message.message));
        break;
      case "closed":
        this.#thread.detach(this.#id);
        this.#onClosed?.();
        this.#onClosed = null;
        break;
    }
  }

  /** The thread is gone (or cannot serve this store). */
  lost(error: Error): void {
    if (this.#lost) return;
    this.#lost = true;
    this.#events.lost(error);
    this.#onClosed?.();
    this.#onClosed = null;
  }
}

/**
 * The writer thread serving this process's file stores, if one is running. For
 * diagnostics and fault tests (terminating it makes every store it serves fail its
 * writes with UnavailableError).
 */
export function currentWriterThread(): Worker | null {
  return WriterThread.current?.worker ?? null;
}
