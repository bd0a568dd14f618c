/**
 * A steady mixed load on a cluster, and what it saw, for fault tests: writers
 * creating, updating and deleting ConfigMaps (each acknowledged write recorded with
 * its resourceVersion), a reflector watching them (every event recorded), an HTTP
 * prober going through the gateway, and an observer of the controller managers'
 * leader Lease (every holder and renewal it saw). `verify*` turn the records into
 * the figures the fault tests print and check.
 */
import http from "node:http";
import type { KubeObject } from "@setpoint/api";
import { type Client, isNotFound, type Lease } from "@setpoint/runtime";
import { Reflector } from "../../packages/runtime/src/cache/reflector.ts";

const CM = { apiVersion: "v1", kind: "ConfigMap" } as const;
const LEASE = { apiVersion: "coordination.k8s.io/v1", kind: "Lease" } as const;

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One acknowledged write. */
export interface AckedWrite {
  op: "create" | "update" | "delete";
  name: string;
  /** The object's resourceVersion after it (0 for a delete). */
  rv: number;
  at: number;
  latencyMs: number;
}

/** Writers: each creates an object, updates it, and deletes every other one. */
export class Writers {
  readonly acked: AckedWrite[] = [];
  /** Writes that failed, by object: their outcome is unknown (they may have been applied). */
  readonly unacknowledged: { op: AckedWrite["op"]; name: string; at: number }[] = [];
  failed = 0;
  private running = true;
  private readonly done: Promise<void>[];

  constructor(
    private readonly client: Client,
    private readonly namespace: string,
    count: number,
  ) {
    this.done = Array.from({ length: count }, (_, w) => this.run(w));
  }

  private async timed<T>(
    op: AckedWrite["op"],
    name: string,
    fn: () => Promise<T>,
  ): Promise<{ value: T; latencyMs: number } | null> {
    const t = performance.now();
    try {
      const value = await fn();
      return { value, latencyMs: performance.now() - t };
    } catch {
      this.failed++;
      this.unacknowledged.push({ op, name, at: Date.now() });
      await sleep(100);
      return null;
    }
  }

  private async run(w: number): Promise<void> {
    const ns = this.namespace;
    for (let i = 0; this.running; i++) {
      const name = `w${w}-${i}`;
      const made = await this.timed("create", name, () =>
        this.client.create<ConfigMap>({
          ...CM,
          metadata: { name, namespace: ns },
          data: { n: "0" },
        }),
      );
      if (!made) continue;
      this.record("create", name, made.value, made.latencyMs);
      if (!this.running) break;
      const updated = await this.timed("update", name, () =>
        this.client.update<ConfigMap>({ ...made.value, data: { n: "1" } }),
      );
      if (!updated) continue;
      this.record("update", name, updated.value, updated.latencyMs);
      if (i % 2 === 1 && this.running) {
        const t = performance.now();
        try {
          await this.client.delete(CM, name, ns);
          this.acked.push({
            op: "delete",
            name,
            rv: 0,
            at: Date.now(),
            latencyMs: performance.now() - t,
          });
        } catch {
          this.failed++;
          this.unacknowledged.push({ op: "delete", name, at: Date.now() });
          await sleep(100);
        }
      }
    }
  }

  private record(op: AckedWrite["op"], name: string, obj: KubeObject, latencyMs: number): void {
    this.acked.push({
      op,
      name,
      rv: Number(obj.metadata.resourceVersion),
      at: Date.now(),
      latencyMs,
    });
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.done);
  }

  /** p99 of acknowledged writes' latency between two times (ms since the epoch). */
  p99(from = 0, to = Number.POSITIVE_INFINITY): number {
    const l = this.acked
      .filter((w) => w.at >= from && w.at <= to)
      .map((w) => w.latencyMs)
      .sort((a, b) => a - b);
    return l.length ? l[Math.min(l.length - 1, Math.floor(l.length * 0.99))] : Number.NaN;
  }

  /**
   * Acknowledged writes the final state (read through `client`) does not reflect:
   * the object of an acknowledged create or update missing or older, or the object
   * of an acknowledged delete still there. An object missing after a delete that
   * failed (its outcome unknown) is not counted.
   */
  async lost(client: Client): Promise<AckedWrite[]> {
    const last = new Map<string, AckedWrite>();
    for (const w of this.acked) last.set(w.name, w);
    const list = await client.list<ConfigMap>(CM, { namespace: this.namespace });
    const stored = new Map(
      list.items.map((o) => [o.metadata.name ?? "", Number(o.metadata.resourceVersion)]),
    );
    const maybeDeleted = new Set(
      this.unacknowledged.filter((u) => u.op === "delete").map((u) => u.name),
    );
    return [...last.values()].filter((w) => {
      const rv = stored.get(w.name);
      if (w.op === "delete") return rv !== undefined;
      if (rv === undefined) return !maybeDeleted.has(w.name);
      return rv < w.rv;
    });
  }
}

/** One watch event as the watcher saw it. */
export interface SeenEvent {
  type: string;
  name: string;
  rv: number;
}

/** A reflector on the writers' namespace, recording every event. */
export class Watcher {
  readonly seen: SeenEvent[] = [];
  readonly reflector: Reflector<KubeObject>;
  private readonly abort = new AbortController();
  private readonly running: Promise<void>;

  constructor(client: Client, namespace: string) {
    this.reflector = new Reflector<KubeObject>(
      client,
      CM,
      {
        replace: () => {},
        apply: (type, obj) =>
          this.seen.push({
            type,
            name: obj.metadata.name ?? "",
            rv: Number(obj.metadata.resourceVersion),
          }),
        bookmark: () => {},
      },
      { namespace, backoffInitialMs: 100, backoffMaxMs: 1_000 },
    );
    this.running = this.reflector.run(this.abort.signal);
  }

  async watching(): Promise<void> {
    while (!this.reflector.state.watching) await sleep(20);
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.running;
  }

  /** Expected (the acknowledged writes), seen, missed, duplicated and out-of-order events. */
  verify(acked: AckedWrite[]) {
    const rvs = this.seen.map((e) => e.rv);
    const outOfOrder = rvs.filter((rv, i) => i > 0 && rv <= rvs[i - 1]).length;
    const keys = this.seen.map((e) => `${e.type} ${e.name} ${e.rv}`);
    const duplicates = keys.length - new Set(keys).size;
    const seenRv = new Set(this.seen.filter((e) => e.type !== "DELETED").map((e) => e.rv));
    const seenDeleted = new Set(this.seen.filter((e) => e.type === "DELETED").map((e) => e.name));
    const missed = acked.filter((w) =>
      w.op === "delete" ? !seenDeleted.has(w.name) : !seenRv.has(w.rv),
    );
    return {
      expected: acked.length,
      seen: this.seen.length,
      missed: missed.length,
      missedWrites: missed,
      duplicates,
      outOfOrder,
      relists: this.reflector.state.relists,
      rewatches: this.reflector.state.rewatches,
    };
  }
}

/** One GET of `url` with a Host header of `host` (which fetch does not let one set). */
export function getWithHost(url: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { host }, timeout: 5_000 }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => {
        body += d;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.on("error", reject);
  });
}

/** GETs through the gateway, one after another, counting answers by status and body. */
export class GatewayProber {
  ok = 0;
  failed = 0;
  readonly failures: string[] = [];
  readonly versions = new Map<string, number>();
  private running = true;
  private readonly done: Promise<void>;

  constructor(
    private readonly url: string,
    private readonly host: string,
  ) {
    this.done = this.run();
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        const r = await getWithHost(this.url, this.host);
        if (r.status === 200) {
          this.ok++;
          const v = /\(version ([^)]+)\)/.exec(r.body)?.[1] ?? "?";
          this.versions.set(v, (this.versions.get(v) ?? 0) + 1);
        } else {
          this.failed++;
          this.failures.push(`${r.status} ${r.body.slice(0, 80)}`);
        }
      } catch (err) {
        this.failed++;
        this.failures.push((err as Error).message);
      }
      await sleep(25);
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }
}

/** One state of the leader Lease as observed. */
interface LeaseSample {
  holder: string;
  acquireTime: string;
  renewTime: string;
  durationMs: number;
  at: number;
}

/** Polls a leader Lease, recording every holder and renewal. */
export class LeaseObserver {
  readonly samples: LeaseSample[] = [];
  private running = true;
  private readonly done: Promise<void>;

  constructor(
    private readonly client: Client,
    private readonly namespace: string,
    private readonly name: string,
    private readonly everyMs = 200,
  ) {
    this.done = this.run();
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        const l = await this.client.get<Lease>(LEASE, this.name, this.namespace);
        const s = l.spec ?? {};
        const last = this.samples.at(-1);
        if (!last || last.holder !== s.holderIdentity || last.renewTime !== s.renewTime) {
          this.samples.push({
            holder: s.holderIdentity ?? "",
            acquireTime: s.acquireTime ?? "",
            renewTime: s.renewTime ?? "",
            durationMs: (s.leaseDurationSeconds ?? 0) * 1000,
            at: Date.now(),
          });
        }
      } catch (err) {
        if (!isNotFound(err)) {
          // an apiserver going away: the next poll goes to another
        }
      }
      await sleep(this.everyMs);
    }
  }

  get holder(): string {
    return this.samples.at(-1)?.holder ?? "";
  }

  /** Resolves with the first holder other than `old` observed at or after `since`. */
  async nextHolder(
    old: string,
    since: number,
    timeoutMs: number,
  ): Promise<{ holder: string; at: number }> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const s = this.samples.find((x) => x.at >= since && x.holder !== old && x.holder !== "");
      if (s) return { holder: s.holder, at: s.at };
      if (Date.now() > deadline) throw new Error(`no new leader after ${timeoutMs} ms`);
      await sleep(50);
    }
  }

  /** The holders observed at or after `since`, in order, each once per stretch. */
  holdersSince(since: number): string[] {
    const out: string[] = [];
    for (const x of this.samples) {
      if (x.at >= since && x.holder !== out.at(-1)) out.push(x.holder);
    }
    return out;
  }

  /**
   * Changes of holder, and among them overlaps: a new holder that acquired the
   * Lease before the previous one's last renewal plus the lease duration had passed.
   */
  transitions(): { changes: number; overlaps: number } {
    let changes = 0;
    let overlaps = 0;
    for (let i = 1; i < this.samples.length; i++) {
      const prev = this.samples[i - 1];
      const cur = this.samples[i];
      if (cur.holder === prev.holder || cur.holder === "" || prev.holder === "") continue;
      changes++;
      const expires = Date.parse(prev.renewTime) + prev.durationMs;
      if (Date.parse(cur.acquireTime) < expires) overlaps++;
    }
    return { changes, overlaps };
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }
}
