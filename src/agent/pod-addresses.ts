/**
 * Pod addresses: each Pod gets its own address in the agent's range
 * 127.N.0.0/16 (`--pod-range N`), which every process on the machine can reach
 * with no network setup (all of 127.0.0.0/8 is local on Linux). Addresses ending
 * in .0 or .255 are skipped; a Pod keeps its address for its life (it is in the
 * Pod's record), and it is free again once the Pod is gone. In the isolated
 * mode (sandbox/) the range is 10.N.0.0/16 instead (`first` 10), which can be
 * routed to a Pod's own network namespace; N.0.1 is never given, it is the
 * Pods' gateway there.
 */

export const DEFAULT_POD_RANGE = 10;

export class PodAddresses {
  private readonly used = new Set<string>();
  private next = 0;

  constructor(
    readonly range: number = DEFAULT_POD_RANGE,
    /** The addresses' first octet: 127, or 10 in the isolated mode. */
    readonly first: number = 127,
  ) {
    if (!Number.isInteger(range) || range < 1 || range > 254) {
      throw new Error(`the pod range must be 1 to 254 (addresses ${first}.N.x.y), got ${range}`);
    }
  }

  /** Marks an address as taken (a Pod from the state on disk). */
  take(ip: string): void {
    this.used.add(ip);
  }

  release(ip: string): void {
    this.used.delete(ip);
  }

  /** A free address; throws when the range is full. */
  allocate(): string {
    for (let tries = 0; tries < 65536; tries++) {
      const i = this.next;
      this.next = (this.next + 1) % 65536;
      const low = i & 255;
      if (low === 0 || low === 255 || (i >> 8 === 0 && low === 1)) continue;
      const ip = `${this.first}.${this.range}.${i >> 8}.${low}`;
      if (!this.used.has(ip)) {
        this.used.add(ip);
        return ip;
      }
    }
    throw new Error(`no free address left in ${this.first}.${this.range}.0.0/16`);
  }
}
