/** A first-in first-out queue with O(1) push and shift. */
export class Fifo<T> {
  #items: T[] = [];
  #head = 0;

  get length(): number {
    return this.#items.length - this.#head;
  }

  push(item: T): void {
    this.#items.push(item);
  }

  /** The oldest item (without removing it). */
  peek(): T | undefined {
    return this.#head < this.#items.length ? this.#items[this.#head] : undefined;
  }

  shift(): T | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const item = this.#items[this.#head++];
    this.#compact();
    return item;
  }

  /** Removes and returns the oldest `count` items. */
  take(count: number): T[] {
    const taken = this.#items.slice(this.#head, this.#head + count);
    this.#head += taken.length;
    this.#compact();
    return taken;
  }

  /** Drops the taken items' slots: all of them once empty, else once they are most of the array. */
  #compact(): void {
    if (this.#head === this.#items.length) {
      this.#items = [];
      this.#head = 0;
    } else if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
  }

  /** The item `index` places after the oldest (0: the oldest). */
  at(index: number): T | undefined {
    return index < this.length ? this.#items[this.#head + index] : undefined;
  }

  /** Empties the queue, or replaces its content with `items`. */
  reset(items: T[] = []): void {
    this.#items = items;
    this.#head = 0;
  }
}
