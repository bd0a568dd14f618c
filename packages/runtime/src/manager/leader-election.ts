/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go does it:
 *
 * - The Lease's spec records `holderIdentity`, `leaseDurationSeconds`,
 *   `acquireTime`, `renewTime` and `leaseTransitions`. Every write carries the
 *   resourceVersion that was read (optimistic concurrency): of two candidates
 *   writing at once, one gets 409 Conflict and loses.
 * - A candidate takes the lease when it is free (no holder, e.g. released) or
 *   expired: its record has not changed for `leaseDuration` as measured on the
 *   candidate's own monotonic clock since it first observed that record. Peers'
 *   wall clocks are never compared, so clock skew cannot cause two leaders.
 * - The leader renews every `retryPeriod`. If it cannot renew for
 *   `renewDeadline` (< leaseDuration) it steps down before anyone else can take
 *   over, and calls `onStoppedLeading` so its controllers stop promptly.
 * - On shutdown with `releaseOnCancel`, the leader writes an empty holder so a
 *   standby takes over at once instead of waiting for the lease to expire.
 * - Extra annotations (e.g. the finalizers the controllers handle) are written on
 *   the Lease with every acquire and renew.
 *
 * After losing the lease the elector goes back to being a candidate (its caches
 * stay warm); it ends only when its signal aborts.
 */
import type { KubeObject } from "@setpoint/api";
import type { Client } from "../client/client.ts";
import { isAlreadyExists, isConflict, isNotFound } from "../client/errors.ts";
import { type Clock, realClock, sleep } from "../clock.ts";
import { type Logger, silentLogger } from "../log.ts";
import type { CheckResult } from "./health.ts";

/** The kind leader election writes: coordination.k8s.io/v1 Lease. */
export const LEASE_TYPE = { apiVersion: "coordination.k8s.io/v1", kind: "Lease" } as const;

/** Defaults as controller-runtime: 15 s lease, 10 s renew deadline, 2 s retry period. */
export const DEFAULT_LEASE_DURATION_MS = 15_000;
export const DEFAULT_RENEW_DEADLINE_MS = 10_000;
export const DEFAULT_RETRY_PERIOD_MS = 2_000;
/** Retry periods are stretched by up to this fraction at random, so candidates do not poll in step. */
export const RETRY_JITTER = 0.2;
/** The leader health check fails when the last renew is older than the lease duration plus this. */
export const LEADER_HEALTH_TOLERANCE_MS = 20_000;

export interface LeaseSpec {
  holderIdentity?: string | undefined;
  leaseDurationSeconds?: number | undefined;
  acquireTime?: string | undefined;
  renewTime?: string | undefined;
  leaseTransitions?: number | undefined;
}

export type Lease = KubeObject & { spec?: LeaseSpec | undefined };

export interface LeaderElectorOptions {
  /** The Lease's name. */
  name: string;
  namespace: string;
  /** This candidate's identity (unique per process). */
  identity: string;
  leaseDurationMs?: number | undefined;
  renewDeadlineMs?: number | undefined;
  retryPeriodMs?: number | undefined;
  /** Release the lease when the run's signal aborts (default true). */
  releaseOnCancel?: boolean | undefined;
  /** Annotations to keep on the Lease while leading. */
  annotations?: (() => Record<string, string>) | undefined;
  onStartedLeading?: (() => void) | undefined;
  /** Called when leadership is lost or given up; awaited before campaigning again. */
  onStoppedLeading?: (() => void | Promise<void>) | undefined;
  /** Called when the observed holder changes (including to this identity). */
  onNewLeader?: ((identity: string) => void) | undefined;
  logger?: Logger | undefined;
  clock?: Clock | undefined;
  /** Wall clock for the Lease's timestamps. */
  wallClock?: (() => Date) | undefined;
}

/** metav1.MicroTime: RFC 3339 with microseconds. */
export function microTime(d: Date): string {
  return `${d.toISOString().slice(0, 23)}000Z`;
}

function sameSpec(a: LeaseSpec | undefined, b: LeaseSpec | undefined): boolean {
  return (
    (a?.holderIdentity ?? "") === (b?.holderIdentity ?? "") &&
    a?.renewTime === b?.renewTime &&
    a?.acquireTime === b?.acquireTime &&
    (a?.leaseTransitions ?? 0) === (b?.leaseTransitions ?? 0) &&
    a?.leaseDurationSeconds === b?.leaseDurationSeconds
  );
}

export class LeaderElector {
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly clock: Clock;
  private readonly wall: () => Date;
  private readonly log: Logger;
  private observed: LeaseSpec | undefined;
  private observedAt = 0;
  private lastRenew = 0;
  private lease: Lease | undefined;
  private leading = false;
  private holder = "";

  constructor(
    private readonly client: Pick<Client, "get" | "create" | "update">,
    private readonly opts: LeaderElectorOptions,
  ) {
    this.leaseDurationMs = opts.leaseDurationMs ?? DEFAULT_LEASE_DURATION_MS;
    this.renewDeadlineMs = opts.renewDeadlineMs ?? DEFAULT_RENEW_DEADLINE_MS;
    this.retryPeriodMs = opts.retryPeriodMs ?? DEFAULT_RETRY_PERIOD_MS;
    if (!(this.leaseDurationMs > this.renewDeadlineMs)) {
      throw new RangeError("leaseDuration must be greater than renewDeadline");
    }
    if (!(this.renewDeadlineMs > this.retryPeriodMs * (1 + RETRY_JITTER))) {
      throw new RangeError("renewDeadline must be greater than retryPeriod * 1.2");
    }
    this.clock = opts.clock ?? realClock;
    this.wall = opts.wallClock ?? (() => new Date());
    this.log = (opts.logger ?? silentLogger()).child({ lease: `${opts.namespace}/${opts.name}` });
  }

  /** Whether this candidate currently leads. */
  get isLeader(): boolean {
    return this.leading;
  }

  /** The holder last observed on the Lease ("" when free or unknown). */
  get leader(): string {
    return this.holder;
  }

  /** Campaigns, leads, and campaigns again after a loss, until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      if (!(await this.acquire(signal))) break;
      this.log.info({ identity: this.opts.identity }, "became leader");
      this.opts.onStartedLeading?.();
      await this.renewLoop(signal);
      this.leading = false;
      if (signal.aborted) {
        await this.opts.onStoppedLeading?.();
        if (this.opts.releaseOnCancel ?? true) await this.release();
        break;
      }
      this.log.warn({ identity: this.opts.identity }, "lost leadership");
      await this.opts.onStoppedLeading?.();
    }
  }

  /**
   * Gives the lease up (empty holder, 1 s duration) if this candidate holds it,
   * so another can take it at once. Returns whether it was released.
   */
  async release(): Promise<boolean> {
    const signal = AbortSignal.timeout(Math.ceil(this.renewDeadlineMs));
    for (let attempt = 0; attempt < 2; attempt++) {
      let lease = this.lease;
      try {
        lease ??= await this.client.get<Lease>(LEASE_TYPE, this.opts.name, this.opts.namespace, {
          signal,
        });
        if ((lease.spec?.holderIdentity ?? "") !== this.opts.identity) return false;
        const now = microTime(this.wall());
        const spec: LeaseSpec = {
          holderIdentity: "",
          leaseDurationSeconds: 1,
          acquireTime: now,
          renewTime: now,
          leaseTransitions: lease.spec?.leaseTransitions ?? 0,
        };
        this.lease = await this.client.update<Lease>({ ...lease, spec }, { signal });
        this.leading = false;
        this.setHolder("");
        this.log.info("released the lease");
        return true;
      } catch (e) {
        this.lease = undefined;
        if (isConflict(e)) continue; // re-read and try once more
        this.log.warn(
          { err: e instanceof Error ? e.message : String(e) },
          "could not release the lease",
        );
        return false;
      }
    }
    return false;
  }

  /** Liveness: fails when leading but not renewed for longer than the lease plus a tolerance. */
  check(): CheckResult {
    if (!this.leading) return { ok: true };
    const age = this.clock.now() - this.lastRenew;
    if (age > this.leaseDurationMs + LEADER_HEALTH_TOLERANCE_MS) {
      return { ok: false, reason: `lease not renewed for ${Math.round(age)} ms` };
    }
    return { ok: true };
  }

  private jittered(): number {
    return this.retryPeriodMs * (1 + Math.random() * RETRY_JITTER);
  }

  /** Tries until acquired (true) or aborted (false). */
  private async acquire(signal: AbortSignal): Promise<boolean> {
    for (;;) {
      if (signal.aborted) return false;
      if (await this.tryAcquireOrRenew(signal)) return true;
      try {
        await sleep(this.jittered(), signal, this.clock);
      } catch {
        return false;
      }
    }
  }

  /** Renews every retry period until a renew deadline passes without success, or `signal` aborts. */
  private async renewLoop(signal: AbortSignal): Promise<void> {
    for (;;) {
      try {
        await sleep(this.retryPeriodMs, signal, this.clock);
      } catch {
        return;
      }
      const deadline = this.lastRenew + this.renewDeadlineMs;
      let renewed = false;
      while (!signal.aborted && this.clock.now() < deadline) {
        const result = await this.tryAcquireOrRenew(signal, deadline);
        if (result) {
          renewed = true;
          break;
        }
        if (this.holder !== "" && this.holder !== this.opts.identity) break; // taken over
        const wait = Math.min(this.retryPeriodMs, deadline - this.clock.now());
        if (wait <= 0) break;
        try {
          await sleep(wait, signal, this.clock);
        } catch {
          return;
        }
      }
      if (signal.aborted) return;
      if (!renewed) return;
    }
  }

  /** One attempt to take or renew the lease. */
  private async tryAcquireOrRenew(signal: AbortSignal, deadline?: number): Promise<boolean> {
    const timeoutMs = Math.max(
      1,
      Math.ceil((deadline ?? this.clock.now() + this.renewDeadlineMs) - this.clock.now()),
    );
    const callSignal = AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
    const nowWall = microTime(this.wall());
    const want = (old: LeaseSpec | undefined, mine: boolean): LeaseSpec => ({
      holderIdentity: this.opts.identity,
      leaseDurationSeconds: Math.ceil(this.leaseDurationMs / 1000),
      acquireTime: mine && old?.acquireTime ? old.acquireTime : nowWall,
      renewTime: nowWall,
      leaseTransitions: old ? (old.leaseTransitions ?? 0) + (mine ? 0 : 1) : 0,
    });
    try {
      // Fast path: the leader renews from the copy it wrote last, without a GET.
      let current = this.leading ? this.lease : undefined;
      if (!current) {
        try {
          current = await this.client.get<Lease>(LEASE_TYPE, this.opts.name, this.opts.namespace, {
            signal: callSignal,
          });
        } catch (e) {
          if (!isNotFound(e)) throw e;
          const created = await this.client.create<Lease>(
            {
              ...LEASE_TYPE,
              metadata: {
                name: this.opts.name,
                namespace: this.opts.namespace,
                annotations: this.annotations({}),
              },
              spec: want(undefined, false),
            },
            { signal: callSignal },
          );
          this.accepted(created);
          return true;
        }
        this.observe(current.spec);
        const holder = current.spec?.holderIdentity ?? "";
        const expiresAt = this.observedAt + (current.spec?.leaseDurationSeconds ?? 0) * 1000;
        if (holder !== "" && holder !== this.opts.identity && this.clock.now() < expiresAt) {
          return false;
        }
      }
      const mine = (current.spec?.holderIdentity ?? "") === this.opts.identity;
      const next: Lease = {
        ...current,
        metadata: {
          ...current.metadata,
          annotations: this.annotations(current.metadata.annotations ?? {}),
        },
        spec: want(current.spec, mine),
      };
      this.accepted(await this.client.update<Lease>(next, { signal: callSignal }));
      return true;
    } catch (e) {
      if (isConflict(e) || isAlreadyExists(e)) {
        this.lease = undefined; // someone else wrote: re-read next time
        this.log.debug("lease write conflicted");
      } else {
        this.log.warn(
          { err: e instanceof Error ? e.message : String(e) },
          "lease read or write failed",
        );
        if (this.leading) this.lease = undefined;
      }
      return false;
    }
  }

  private annotations(existing: Record<string, string>): Record<string, string> {
    return { ...existing, ...(this.opts.annotations?.() ?? {}) };
  }

  private observe(spec: LeaseSpec | undefined): void {
    if (!sameSpec(spec, this.observed)) {
      this.observed = spec ? { ...spec } : undefined;
      this.observedAt = this.clock.now();
    }
    this.setHolder(spec?.holderIdentity ?? "");
  }

  private accepted(lease: Lease): void {
    this.lease = lease;
    this.observe(lease.spec);
    this.lastRenew = this.clock.now();
    this.leading = true;
  }

  private setHolder(identity: string): void {
    if (identity === this.holder) return;
    this.holder = identity;
    this.opts.onNewLeader?.(identity);
  }
}
