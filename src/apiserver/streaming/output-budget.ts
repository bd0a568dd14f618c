/**
 * The global budget of response bytes in flight: produced for a streamed list or
 * a watch's initial events and not yet handed to the kernel. A stream reserves
 * room before it produces a chunk and gives it back once the chunk was written to
 * the socket (or the response closed). When the budget is spent, streams wait
 * their turn in order of arrival; a reservation is always granted when nothing
 * else is in flight, so a chunk larger than the whole budget still goes out alone.
 */

import { TurnSlicer } from "./turn-slicer.ts";

/** Production time of streamed responses per turn of the event loop, in ms. */
export const DEFAULT_SLICE_MS = 10;

/** The budget's accounting (for metrics and tests). */
export interface OutputBudgetStats {
  /** Bytes reserved now. */
  inFlight: number;
  /** The most bytes ever reserved at once. */
  peak: number;
  /** Streams waiting for room now. */
  waiting: number;
  /** Reservations that had to wait, in all. */
  waited: number;
  /** The budget, in bytes. */
  capacity: number;
}

interface Waiter {
  bytes: number;
  resolve: () => void;
}

export class OutputBudget {
  #inFlight = 0;
  #peak = 0;
  #waited = 0;
  readonly #queue: Waiter[] = [];

  /** Production time per turn of the event loop, shared by every stream (see turn-slicer.ts). */
  readonly slicer: TurnSlicer;

  constructor(
    readonly capacity: number,
    sliceMs = DEFAULT_SLICE_MS,
  ) {
    this.slicer = new TurnSlicer(sliceMs);
  }

  /** Whether `bytes` more fit now (and nobody is waiting before). */
  #fits(bytes: number): boolean {
    return this.#inFlight === 0 || this.#inFlight + bytes <= this.capacity;
  }

  #take(bytes: number): void {
    this.#inFlight += bytes;
    if (this.#inFlight > this.#peak) this.#peak = this.#inFlight;
  }

  /** Resolves once `bytes` are reserved (at once when they fit and nobody waits). */
  reserve(bytes: number): Promise<void> | undefined {
    if (this.#queue.length === 0 && this.#fits(bytes)) {
      this.#take(bytes);
      return undefined;
    }
    this.#waited++;
    return new Promise<void>((resolve) => this.#queue.push({ bytes, resolve }));
  }

  /**
   * Adds `bytes` to a reservation already held, without waiting (a chunk came out
   * larger than the room reserved for it: by one item at most).
   */
  grow(bytes: number): void {
    this.#take(bytes);
  }

  /** Gives back `bytes`, letting waiting streams in, in order. */
  release(bytes: number): void {
    this.#inFlight -= bytes;
    if (this.#inFlight < 0) this.#inFlight = 0;
    while (this.#queue.length > 0 && this.#fits(this.#queue[0].bytes)) {
      const w = this.#queue.shift()!;
      this.#take(w.bytes);
      w.resolve();
    }
  }

  get stats(): OutputBudgetStats {
    return {
      inFlight: this.#inFlight,
      peak: this.#peak,
      waiting: this.#queue.length,
      waited: this.#waited,
      capacity: this.capacity,
    };
  }
}
