/**
 * A Job's status as the job controller writes it: conditions with Kubernetes'
 * reasons and messages, the exact-once counting of finished Pods through
 * `status.uncountedTerminatedPods`, and the shape a status is written in
 * (what Kubernetes omits when empty, and `ready`, `terminating` and
 * `uncountedTerminatedPods` always present).
 */
import type { Job, JobCondition, JobStatus } from "@setpoint/api";

/** Reasons and messages of the conditions, as Kubernetes words them. */
export const Reason = {
  CompletionsReached: "CompletionsReached",
  BackoffLimitExceeded: "BackoffLimitExceeded",
  DeadlineExceeded: "DeadlineExceeded",
  Suspended: "JobSuspended",
  Resumed: "JobResumed",
} as const;

export const Message = {
  CompletionsReached: "Reached expected number of succeeded pods",
  BackoffLimitExceeded: "Job has reached the specified backoff limit",
  DeadlineExceeded: "Job was active longer than specified deadline",
  Suspended: "Job suspended",
  Resumed: "Job resumed",
} as const;

/** RFC 3339 with seconds, as metav1.Time is written. */
export function timestamp(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");
}

export function newCondition(
  type: string,
  status: "True" | "False",
  reason: string,
  message: string,
  now: number,
): JobCondition {
  const t = timestamp(now);
  const c: JobCondition = { type, status, lastProbeTime: t, lastTransitionTime: t };
  if (reason) c.reason = reason;
  if (message) c.message = message;
  return c;
}

export function findCondition(
  status: JobStatus | undefined,
  type: string,
): JobCondition | undefined {
  return status?.conditions?.find((c) => c.type === type);
}

function isTrue(status: JobStatus | undefined, type: string): boolean {
  return findCondition(status, type)?.status === "True";
}

/** Finished: Complete or Failed is True. */
export function isJobFinished(job: Job): boolean {
  return isTrue(job.status, "Complete") || isTrue(job.status, "Failed");
}

/** The time the Job finished (its Complete or Failed condition turned True), if it has. */
export function jobFinishedAt(job: Job): number | undefined {
  for (const c of job.status?.conditions ?? []) {
    if ((c.type === "Complete" || c.type === "Failed") && c.status === "True") {
      const t = c.lastTransitionTime ? Date.parse(c.lastTransitionTime) : Number.NaN;
      return Number.isNaN(t) ? undefined : t;
    }
  }
  return undefined;
}

/**
 * Sets a condition's status, reason and message (a new transition time when
 * any differs); a False condition is never added. Returns whether it changed.
 */
export function ensureCondition(
  status: JobStatus,
  type: string,
  value: "True" | "False",
  reason: string,
  message: string,
  now: number,
): boolean {
  const list = status.conditions ?? [];
  const i = list.findIndex((c) => c.type === type);
  if (i >= 0) {
    const c = list[i] as JobCondition;
    if (c.status === value && (c.reason ?? "") === reason && (c.message ?? "") === message) {
      return false;
    }
    list[i] = newCondition(type, value, reason, message, now);
    status.conditions = list;
    return true;
  }
  if (value === "False") return false;
  status.conditions = [...list, newCondition(type, value, reason, message, now)];
  return true;
}

/**
 * Moves uncounted Pods whose finalizer is gone (not in `withFinalizer`) into
 * `succeeded` / `failed`. Returns whether anything moved.
 */
export function countUncounted(status: JobStatus, withFinalizer: ReadonlySet<string>): boolean {
  status.uncountedTerminatedPods ??= {};
  const u = status.uncountedTerminatedPods;
  let moved = false;
  const keep = (list: string[] | undefined, add: (n: number) => void): string[] | undefined => {
    if (!list) return list;
    const still = list.filter((uid) => withFinalizer.has(uid));
    if (still.length !== list.length) {
      moved = true;
      add(list.length - still.length);
    }
    return still.length > 0 ? still : undefined;
  };
  const s = keep(u.succeeded, (n) => {
    status.succeeded = (status.succeeded ?? 0) + n;
  });
  const f = keep(u.failed, (n) => {
    status.failed = (status.failed ?? 0) + n;
  });
  if (s) u.succeeded = s;
  else delete u.succeeded;
  if (f) u.failed = f;
  else delete u.failed;
  return moved;
}

/** The status as written: zero counts and an empty completedIndexes left out. */
export function normalizeStatus(s: JobStatus): JobStatus {
  const out: JobStatus = { ...s };
  for (const k of ["active", "succeeded", "failed"] as const) {
    if (!out[k]) delete out[k];
  }
  if (!out.completedIndexes) delete out.completedIndexes;
  if (out.conditions?.length === 0) delete out.conditions;
  const u = { ...(out.uncountedTerminatedPods ?? {}) };
  if (!u.succeeded?.length) delete u.succeeded;
  if (!u.failed?.length) delete u.failed;
  out.uncountedTerminatedPods = u;
  return out;
}
