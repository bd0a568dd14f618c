/**
 * Counting a Job's finished Pods exactly once, as Kubernetes does with the
 * `batch.kubernetes.io/job-tracking` finalizer and
 * `status.uncountedTerminatedPods`:
 *
 * 1. a finished Pod that still has the finalizer is added to
 *    uncountedTerminatedPods (by UID; an Indexed Job's success goes straight
 *    into completedIndexes), and that status is written;
 * 2. only then is the finalizer removed from the Pod;
 * 3. a UID in uncountedTerminatedPods whose Pod no longer has the finalizer
 *    (or is gone) moves into `succeeded` / `failed`, and that is written.
 *
 * A crash between any two steps repeats the step, never the count: a Pod is
 * counted when its UID leaves the uncounted list, which happens once. The
 * finalizer removals a sync has sent are remembered until the Pod informer
 * shows them (FinalizerExpectations), so a lagging cache does not add a Pod
 * twice. At most MAX_UNCOUNTED_PODS Pods are handled per sync. Finally the
 * Job's terminal condition is written once nothing is uncounted and no Pod is
 * terminating, with the Events.
 */
import type { Job, JobStatus, Pod } from "@setpoint/api";
import type { EventRecorder, ReconcileClient } from "@setpoint/runtime";
import { isNotFound } from "@setpoint/runtime";
import { completionIndex, formatIndexes, hasIndex, withIndexes } from "./indexes.ts";
import { hasTrackingFinalizer, isIndexed, isPodFailed, JOB_TRACKING_FINALIZER } from "./pods.ts";
import { countUncounted, ensureCondition, newCondition, normalizeStatus } from "./status.ts";
import type { JobSync } from "./sync-state.ts";

/** Most Pods added to uncountedTerminatedPods per sync (Kubernetes' MaxUncountedPods). */
export const MAX_UNCOUNTED_PODS = 500;

const POD = { apiVersion: "v1", kind: "Pod" } as const;

/** Pod UIDs whose finalizer removal a Job has sent and not yet seen, by Job key. */
export class FinalizerExpectations {
  private readonly byKey = new Map<string, Set<string>>();

  expect(key: string, uids: readonly string[]): void {
    const set = this.byKey.get(key) ?? new Set<string>();
    for (const u of uids) set.add(u);
    this.byKey.set(key, set);
  }

  observed(key: string, uid: string): void {
    const set = this.byKey.get(key);
    if (!set) return;
    set.delete(uid);
    if (set.size === 0) this.byKey.delete(key);
  }

  get(key: string): ReadonlySet<string> {
    return new Set(this.byKey.get(key) ?? []);
  }

  delete(key: string): void {
    this.byKey.delete(key);
  }
}

function validIndex(job: Job, p: Pod): boolean {
  const ix = completionIndex(p);
  return ix >= 0 && ix < (job.spec?.completions ?? 0);
}

/** Finished Pods still tracked and not yet in the uncounted lists (nor being untracked). */
export function newlyFinished(
  s: Pick<JobSync, "job" | "pods" | "expectedRmFinalizers">,
  uncounted: NonNullable<JobStatus["uncountedTerminatedPods"]>,
): { succeeded: Pod[]; failed: Pod[] } {
  const us = new Set(uncounted.succeeded ?? []);
  const uf = new Set(uncounted.failed ?? []);
  const succeeded: Pod[] = [];
  const failed: Pod[] = [];
  for (const p of s.pods) {
    const uid = p.metadata.uid ?? "";
    if (!hasTrackingFinalizer(p) || s.expectedRmFinalizers.has(uid)) continue;
    if (isIndexed(s.job) && !validIndex(s.job, p)) continue;
    if (p.status?.phase === "Succeeded" && !us.has(uid)) succeeded.push(p);
    else if (isPodFailed(p, s.job) && !uf.has(uid)) failed.push(p);
  }
  return { succeeded, failed };
}

export interface TrackDeps {
  client: Pick<ReconcileClient, "updateStatus" | "patch">;
  recorder: EventRecorder;
  finalizerExpectations: FinalizerExpectations;
  /** Called after the first status write of the sync (the backoff record is kept then). */
  onWritten(): void;
}

/**
 * Records finished Pods, removes their finalizers, counts them, and writes
 * the terminal condition when the Job has finished. `needsWrite`: the sync
 * changed the status already.
 */
export async function trackStatus(s: JobSync, needsWrite: boolean, deps: TrackDeps): Promise<void> {
  let job = s.job;
  const status = job.status as JobStatus;
  status.uncountedTerminatedPods ??= {};
  const uncounted = status.uncountedTerminatedPods;
  const us = new Set(uncounted.succeeded ?? []);
  const uf = new Set(uncounted.failed ?? []);
  const indexed = isIndexed(job);
  const completions = job.spec?.completions ?? 0;

  const withFinalizer = new Set<string>();
  for (const p of s.pods) {
    const uid = p.metadata.uid ?? "";
    if (hasTrackingFinalizer(p) && !s.expectedRmFinalizers.has(uid)) withFinalizer.add(uid);
  }
  let write = needsWrite;
  if (countUncounted(status, withFinalizer)) write = true;

  const toUntrack: Pod[] = [];
  const newIndexes: number[] = [];
  let reachedMax = false;
  const pods = indexed
    ? [...s.pods].sort((a, b) => completionIndex(a) - completionIndex(b))
    : s.pods;
  const failing = s.finished !== undefined && s.finished.type !== "SuccessCriteriaMet";
  for (const p of pods) {
    const uid = p.metadata.uid ?? "";
    if (!hasTrackingFinalizer(p) || s.expectedRmFinalizers.has(uid)) continue;
    const failed = isPodFailed(p, job);
    const removable =
      job.metadata.deletionTimestamp !== undefined ||
      s.finished !== undefined ||
      p.status?.phase === "Succeeded" ||
      failed;
    if (!removable) continue;
    toUntrack.push(p);
    if (p.status?.phase === "Succeeded" && !uf.has(uid)) {
      if (indexed) {
        const ix = completionIndex(p);
        if (ix >= 0 && ix < completions && !hasIndex(s.prevSucceededIndexes, ix)) {
          newIndexes.push(ix);
          write = true;
        }
      } else if (!us.has(uid)) {
        uncounted.succeeded = [...(uncounted.succeeded ?? []), uid];
        us.add(uid);
        write = true;
      }
    } else if (failed || failing) {
      // A Job that is failing counts every Pod it has not seen succeed as failed.
      if (!uf.has(uid) && (!indexed || validIndex(job, p))) {
        uncounted.failed = [...(uncounted.failed ?? []), uid];
        uf.add(uid);
        write = true;
      }
    }
    if (
      newIndexes.length + (uncounted.succeeded?.length ?? 0) + (uncounted.failed?.length ?? 0) >=
      MAX_UNCOUNTED_PODS
    ) {
      reachedMax = true;
      break;
    }
  }
  if (indexed) {
    const all = withIndexes(
      s.succeededIndexes,
      [...new Set(newIndexes)].sort((a, b) => a - b),
    );
    const str = formatIndexes(all);
    if (str !== (status.completedIndexes ?? "")) write = true;
    status.completedIndexes = str;
    status.succeeded = all.reduce((n, iv) => n + iv.last - iv.first + 1, 0);
  }

  let finished = s.finished;
  if (finished?.type === "FailureTarget") {
    // Written before any finalizer goes, so the failure is known once the Pods are.
    status.conditions = [...(status.conditions ?? []), finished];
    write = true;
    finished = newCondition("Failed", "True", finished.reason ?? "", finished.message ?? "", s.now);
  }
  if (finished?.type === "SuccessCriteriaMet") {
    if (!status.conditions?.some((c) => c.type === "SuccessCriteriaMet" && c.status === "True")) {
      status.conditions = [...(status.conditions ?? []), finished];
      write = true;
    }
    finished = newCondition(
      "Complete",
      "True",
      finished.reason ?? "",
      finished.message ?? "",
      s.now,
    );
  }

  // 1. Record the finished Pods.
  if (write) {
    job = await writeStatus(job, deps);
    deps.onWritten();
    write = false;
  }
  // 2. Untrack them.
  if (toUntrack.length > 0) {
    const removed = await removeFinalizers(s.key, toUntrack, deps);
    for (const uid of removed.done) withFinalizer.delete(uid);
    // 3. Count what was untracked.
    if (countUncounted(job.status as JobStatus, withFinalizer)) write = true;
    if (removed.error) {
      if (write) await writeStatus(job, deps);
      throw removed.error;
    }
  }
  const done = !reachedMax && finish(job, finished, s);
  if (done) write = true;
  if (write) job = await writeStatus(job, deps);
  if (done && finished) recordFinished(job, finished, deps.recorder);
}

/** Sets the terminal condition when nothing is uncounted or terminating; whether it did. */
function finish(job: Job, finished: JobSync["finished"], s: JobSync): boolean {
  if (!finished) return false;
  const status = job.status as JobStatus;
  const u = status.uncountedTerminatedPods;
  if ((u?.succeeded?.length ?? 0) + (u?.failed?.length ?? 0) > 0) return false;
  if (s.terminating > 0) return false;
  ensureCondition(
    status,
    finished.type,
    "True",
    finished.reason ?? "",
    finished.message ?? "",
    s.now,
  );
  if (finished.type === "Complete") {
    const c = status.conditions?.find((x) => x.type === "Complete");
    status.completionTime = c?.lastTransitionTime;
  }
  return true;
}

function recordFinished(job: Job, finished: NonNullable<JobSync["finished"]>, r: EventRecorder) {
  if (finished.type === "Complete") {
    const completions = job.spec?.completions;
    if (typeof completions === "number" && (job.status?.succeeded ?? 0) > completions) {
      r.warning(
        job,
        "TooManySucceededPods",
        "Too many succeeded pods running after completion count reached",
      );
    }
    r.normal(job, "Completed", "Job completed");
  } else {
    r.warning(job, finished.reason ?? "", finished.message ?? "");
  }
}

async function writeStatus(job: Job, deps: TrackDeps): Promise<Job> {
  const body: Job = { ...job, status: normalizeStatus(job.status ?? {}) };
  const written = await deps.client.updateStatus(body);
  // Keep working on what the sync computed, at the new resourceVersion.
  return {
    ...written,
    apiVersion: "batch/v1",
    kind: "Job",
    status: { ...(job.status ?? {}) },
  };
}

/** Removes the tracking finalizer from the Pods; returns the UIDs done and the first error. */
async function removeFinalizers(
  key: string,
  pods: readonly Pod[],
  deps: TrackDeps,
): Promise<{ done: string[]; error: unknown }> {
  deps.finalizerExpectations.expect(
    key,
    pods.map((p) => p.metadata.uid ?? ""),
  );
  const done: string[] = [];
  let error: unknown;
  await Promise.all(
    pods.map(async (p) => {
      const uid = p.metadata.uid ?? "";
      try {
        await deps.client.patch(
          POD,
          p.metadata.name ?? "",
          p.metadata.namespace,
          { metadata: { "$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER] } },
          { type: "strategic" },
        );
      } catch (e) {
        deps.finalizerExpectations.observed(key, uid);
        if (!isNotFound(e)) {
          error ??= e;
          return;
        }
      }
      done.push(uid);
    }),
  );
  return { done, error };
}
