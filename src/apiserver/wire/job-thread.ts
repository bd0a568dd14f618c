/**
 * A worker thread that runs jobs for the event loop (parsing large request
 * bodies: yaml-thread.ts, json-thread.ts), so that a job of tens of milliseconds
 * or more holds only the request it is for, not every client's.
 *
 * The thread is started on first use, runs one job at a time (others queue), and
 * does not keep the process alive while no job is pending. Its code is one
 * self-contained function, sent to the thread as source, so that it runs the same
 * from the TypeScript sources and from the bundled command: it gets `workerData`,
 * reads `{ id, ... }` messages from its parent port and answers each with
 * `{ id, ... }`.
 */
import { Worker } from "node:worker_threads";

interface Job<R> {
  resolve(r: R): void;
  reject(err: Error): void;
}

export class JobThread<M extends object, R extends object> {
  #worker: Worker | undefined;
  #nextId = 1;
  readonly #pending = new Map<number, Job<R>>();

  constructor(
    /** The thread's name (as tools show it). */
    readonly name: string,
    /** The thread's code: a function of its workerData (see the header). */
    readonly main: (workerData: never) => void,
    readonly workerData?: unknown,
  ) {}

  /** Runs one job: `message` goes to the thread, whose answer (without its id) comes back. */
  run(message: M): Promise<R> {
    const w = this.#thread();
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      // Kept alive while a job is pending, so that its answer is awaited.
      w.ref();
      w.postMessage({ ...message, id });
    });
  }

  #failAll(err: Error): void {
    for (const job of this.#pending.values()) job.reject(err);
    this.#pending.clear();
    this.#worker = undefined;
  }

  #thread(): Worker {
    if (this.#worker) return this.#worker;
    // The helpers a bundler may have put in the function's code: `__name` (keeping
    // function names) and `__require` (for `require` in an ES module bundle).
    const source = `var __name = (f) => f;\nvar __require = require;\n(${this.main.toString()})(require("node:worker_threads").workerData);`;
    const w = new Worker(source, { eval: true, workerData: this.workerData, name: this.name });
    w.unref();
    w.on("message", (m: R & { id: number }) => {
      const job = this.#pending.get(m.id);
      if (!job) return;
      this.#pending.delete(m.id);
      if (this.#pending.size === 0) w.unref();
      const { id: _id, ...answer } = m;
      job.resolve(answer as unknown as R);
    });
    w.on("error", (err) => this.#failAll(err));
    w.on("exit", (code) => {
      if (this.#worker === w)
        this.#failAll(new Error(`the ${this.name} thread exited with code ${code}`));
    });
    this.#worker = w;
    return w;
  }
}
