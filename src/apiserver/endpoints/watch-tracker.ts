/**
 * The open watch responses, so that closing the handler can end each one cleanly
 * (the chunked response is terminated, not cut).
 */

/** Something open that can be ended. */
export interface Closable {
  close(): void;
}

export class WatchTracker {
  readonly #open = new Set<Closable>();
  #closed = false;

  /** Whether the handler is closing (new watches are refused). */
  get closed(): boolean {
    return this.#closed;
  }

  get size(): number {
    return this.#open.size;
  }

  add(w: Closable): void {
    this.#open.add(w);
  }

  delete(w: Closable): void {
    this.#open.delete(w);
  }

  /** Ends every open watch; later ones are refused. */
  closeAll(): void {
    this.#closed = true;
    for (const w of [...this.#open]) w.close();
    this.#open.clear();
  }
}
