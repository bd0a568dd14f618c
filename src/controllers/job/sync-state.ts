/**
 * What one sync of a Job works on: the Job (a copy whose status the sync
 * edits), its claimed Pods and the counts taken from them, and what the
 * sync decided (the condition it finishes with, when to look again).
 */
import type { Job, JobCondition, Pod } from "@setpoint/api";
import type { Interval } from "./indexes.ts";

export interface JobSync {
  /** `namespace/name`. */
  key: string;
  /** A copy of the Job; its status is what will be written. */
  job: Job;
  /** Every Pod the Job controls (after claiming). */
  pods: Pod[];
  /** Pods neither finished nor being deleted. */
  activePods: Pod[];
  ready: number;
  /** Pods being deleted that have not finished. */
  terminating: number;
  /** Succeeded Pods counted, uncounted and newly seen (for an Indexed Job: succeeded indexes). */
  succeeded: number;
  /** Failed Pods counted, uncounted and newly seen. */
  failed: number;
  /** Indexed: the indexes in status.completedIndexes. */
  prevSucceededIndexes: Interval[];
  /** Indexed: those and the indexes of Pods that succeeded since. */
  succeededIndexes: Interval[];
  /** Pods whose finalizer removal was sent but not yet seen. */
  expectedRmFinalizers: ReadonlySet<string>;
  /** Epoch ms at the start of the sync. */
  now: number;
  /** SuccessCriteriaMet, FailureTarget or Failed when the Job is finishing. */
  finished?: JobCondition | undefined;
  /** When to sync again (the deadline, the end of a backoff). */
  requeueAfterMs: number | undefined;
}

/** Asks for a sync after `ms` at the latest. */
export function requeueWithin(s: JobSync, ms: number): void {
  s.requeueAfterMs = s.requeueAfterMs === undefined ? ms : Math.min(s.requeueAfterMs, ms);
}
