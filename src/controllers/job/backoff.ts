/**
 * The Pod failure backoff of a Job, as Kubernetes 1.32's job controller keeps
 * it: per Job, the failures since the last success and when the last one
 * happened. A replacement Pod waits 10 s after one failure, then twice as long
 * for each further consecutive failure, at most MAX_POD_FAILURE_BACKOFF_MS
 * (the controller's MaxJobPodFailureBackOff, 10 min; the documentation's
 * "six minutes" is the older value). A success resets the count. The record
 * lives in the controller's memory, as in Kubernetes: a restarted controller
 * starts from no backoff.
 */
import type { Pod } from "@setpoint/api";

/** The first delay after a failed Pod (Kubernetes' DefaultJobPodFailureBackOff). */
export const DEFAULT_POD_FAILURE_BACKOFF_MS = 10_000;
/** The longest delay (Kubernetes' MaxJobPodFailureBackOff). */
export const MAX_POD_FAILURE_BACKOFF_MS = 10 * 60_000;

export interface BackoffRecord {
  failuresAfterLastSuccess: number;
  /** Epoch ms of the last failure, if any. */
  lastFailureAt?: number | undefined;
}

function ms(ts: string | undefined): number | undefined {
  if (!ts) return undefined;
  const t = Date.parse(ts);
  return Number.isNaN(t) ? undefined : t;
}

/**
 * When a Pod finished: the latest container finish when every container has
 * one; else when Ready turned False; else its deletion time less the grace
 * period; else its creation.
 */
export function podFinishedAt(p: Pod): number {
  const statuses = p.status?.containerStatuses ?? [];
  let latest: number | undefined;
  let all = statuses.length > 0;
  for (const s of statuses) {
    const t = ms(s.state?.terminated?.finishedAt as string | undefined);
    if (t === undefined) {
      all = false;
      break;
    }
    if (latest === undefined || t > latest) latest = t;
  }
  if (all && latest !== undefined) return latest;
  const ready = p.status?.conditions?.find((c) => c.type === "Ready");
  const readyFalse = ready?.status === "False" ? ms(ready.lastTransitionTime) : undefined;
  if (readyFalse !== undefined) return readyFalse;
  const deleted = ms(p.metadata.deletionTimestamp);
  if (deleted !== undefined) return deleted - (p.metadata.deletionGracePeriodSeconds ?? 0) * 1000;
  return ms(p.metadata.creationTimestamp) ?? 0;
}

/** Delay left before a replacement may be created, for `failures` consecutive failures. */
export function remainingBackoffMs(
  record: BackoffRecord,
  now: number,
  base = DEFAULT_POD_FAILURE_BACKOFF_MS,
  max = MAX_POD_FAILURE_BACKOFF_MS,
): number {
  if (record.failuresAfterLastSuccess <= 0 || record.lastFailureAt === undefined) return 0;
  let delay = base;
  for (let i = 1; i < record.failuresAfterLastSuccess; i++) {
    delay *= 2;
    if (delay >= max) {
      delay = max;
      break;
    }
  }
  const elapsed = now - record.lastFailureAt;
  return delay < elapsed ? 0 : delay - elapsed;
}

/** The backoff records of every Job, by `namespace/name`. */
export class BackoffStore {
  private readonly records = new Map<string, BackoffRecord>();

  /** The record after this sync's newly finished Pods (not stored until `update`). */
  next(key: string, newSucceeded: readonly Pod[], newFailed: readonly Pod[]): BackoffRecord {
    const old = this.records.get(key);
    const r: BackoffRecord = {
      failuresAfterLastSuccess: old?.failuresAfterLastSuccess ?? 0,
      lastFailureAt: old?.lastFailureAt,
    };
    const failed = newFailed.map(podFinishedAt).sort((a, b) => a - b);
    if (newSucceeded.length === 0) {
      if (failed.length === 0) return r;
      r.failuresAfterLastSuccess += failed.length;
      r.lastFailureAt = failed.at(-1);
      return r;
    }
    const lastSuccess = Math.max(...newSucceeded.map(podFinishedAt));
    r.failuresAfterLastSuccess = 0;
    r.lastFailureAt = undefined;
    for (let i = failed.length - 1; i >= 0; i--) {
      const t = failed[i] as number;
      if (t <= lastSuccess) break;
      if (r.lastFailureAt === undefined) r.lastFailureAt = t;
      r.failuresAfterLastSuccess++;
    }
    return r;
  }

  update(key: string, r: BackoffRecord): void {
    this.records.set(key, r);
  }

  remove(key: string): void {
    this.records.delete(key);
  }
}
