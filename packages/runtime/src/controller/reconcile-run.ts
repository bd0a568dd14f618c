/**
 * One reconcile in flight, and the context its reconciler gets.
 *
 * Most reconciles of a steady controller read the cache and return; they need
 * no AbortController, no child logger, no reconcile id and no write-tracking
 * client. So each is made on first use: `signal` creates the AbortController
 * (already aborted, with the run's reason, if the run was aborted before),
 * `log` the child logger bound to the key and reconcile id, `reconcileID` the
 * id, `client` the ReconcileClient. What a reconciler sees is the same as if
 * all were made up front.
 *
 * The run's deadline is kept by its controller (one timer for all its runs,
 * see Controller), which calls `abort` with a ReconcileTimeoutError; a stop
 * calls it with a ReconcileStoppedError.
 */
import { randomUUID } from "node:crypto";
import type { Client } from "../client/client.ts";
import { type Logger, reconcileLogger } from "../log.ts";
import type { EventRecorder } from "../manager/events.ts";
import type { CacheReader, ReconcileContext, Request } from "./reconciler.ts";
import { ReconcileClient, type WrittenObject } from "./writer.ts";

/** What every run of one controller shares. */
export interface RunDeps {
  controller: string;
  reader: CacheReader;
  recorder: EventRecorder;
  client: Client;
  /** The controller's logger (runs log through a child of it). */
  log: Logger;
}

export class ReconcileRun implements ReconcileContext {
  readonly reader: CacheReader;
  readonly recorder: EventRecorder;
  readonly controller: string;
  /** What the run wrote (for read-your-own-writes); undefined until it writes. */
  written: WrittenObject[] | undefined;
  private abortController: AbortController | undefined;
  private abortReason: unknown;
  private isAborted = false;
  private logger: Logger | undefined;
  private id: string | undefined;
  private writer: ReconcileClient | undefined;
  private doneWaiters: (() => void)[] | undefined;
  private finished = false;

  constructor(
    private readonly deps: RunDeps,
    /** The key being reconciled. */
    readonly key: string,
    readonly request: Request,
    /** Clock time after which the controller aborts the run (ReconcileTimeoutError). */
    readonly deadline: number,
  ) {
    this.reader = deps.reader;
    this.recorder = deps.recorder;
    this.controller = deps.controller;
  }

  /** Aborts on the reconcile timeout, on loss of leadership, and when shutdown's grace runs out. */
  get signal(): AbortSignal {
    if (!this.abortController) {
      this.abortController = new AbortController();
      if (this.isAborted) this.abortController.abort(this.abortReason);
    }
    return this.abortController.signal;
  }

  /** Bound to controller, key, namespace, name and reconcileID. */
  get log(): Logger {
    this.logger ??= reconcileLogger(this.deps.log, this.request, this.reconcileID);
    return this.logger;
  }

  /** Unique per reconcile; also in every log line. */
  get reconcileID(): string {
    this.id ??= randomUUID();
    return this.id;
  }

  /** Writes through the API, tracked for read-your-own-writes; refuses writes once aborted. */
  get client(): ReconcileClient {
    this.writer ??= new ReconcileClient(this.deps.client, {
      fieldManager: this.deps.controller,
      signal: () => this.signal,
      onWrite: (w) => {
        this.written ??= [];
        this.written.push(w);
      },
    });
    return this.writer;
  }

  /** Whether the run was aborted. */
  get aborted(): boolean {
    return this.isAborted;
  }

  /** Why the run was aborted (undefined while it was not). */
  get reason(): unknown {
    return this.abortReason;
  }

  /** Aborts the run (the first reason wins), firing its signal if one was made. */
  abort(reason: unknown): void {
    if (this.isAborted) return;
    this.isAborted = true;
    this.abortReason = reason;
    this.abortController?.abort(reason);
  }

  /** Resolves once `finish` has been called. */
  whenDone(): Promise<void> {
    if (this.finished) return Promise.resolve();
    return new Promise((resolve) => {
      this.doneWaiters ??= [];
      this.doneWaiters.push(resolve);
    });
  }

  /** Marks the run finished (its worker has handed the key back). */
  finish(): void {
    this.finished = true;
    const waiters = this.doneWaiters;
    this.doneWaiters = undefined;
    for (const w of waiters ?? []) w();
  }
}
