/**
 * Sharing the event loop among streamed responses: production of chunks (all
 * streams together) takes at most about `sliceMs` per turn of the event loop;
 * a stream that would go past it waits for a later turn, in order of arrival, so
 * the I/O of other requests (a GET, /healthz) is served between slices however
 * many heavy streams run.
 */
export class TurnSlicer {
  /** When the current turn's slice began (performance.now()), or -1 when none did. */
  #start = -1;
  readonly #queue: (() => void)[] = [];
  #scheduled = false;

  constructor(readonly sliceMs: number) {}

  /** Resolves when the caller may produce a chunk (undefined: at once). */
  take(): Promise<void> | undefined {
    const now = performance.now();
    if (this.#start < 0) {
      this.#start = now;
      this.#schedule();
    }
    if (this.#queue.length === 0 && now - this.#start < this.sliceMs) return undefined;
    this.#schedule();
    return new Promise<void>((resolve) => this.#queue.push(resolve));
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => this.#turn());
  }

  /** A new turn: its slice begins with the first stream waiting. */
  #turn(): void {
    this.#scheduled = false;
    this.#start = -1;
    const next = this.#queue.shift();
    if (next === undefined) return;
    this.#start = performance.now();
    this.#schedule();
    next();
  }
}
