/**
 * Managing a Job's active Pods (Kubernetes' manageJob): a suspended Job loses
 * them all; otherwise it wants min(parallelism, completions - succeeded)
 * active (parallelism when completions is unset, until one succeeds), deletes
 * the surplus (for an Indexed Job also repeated and out-of-range indexes) or
 * creates the missing ones in slow-start batches, after the Pod failure
 * backoff. At most MAX_POD_CREATE_DELETE_PER_SYNC Pods per sync; deletions
 * and creations never in the same sync.
 *
 * Pods deleted here (suspend, surplus) lose the tracking finalizer first: they
 * are not counted as failed.
 */
import type { Job, Pod } from "@setpoint/api";
import { deepClone, StatusError } from "@setpoint/api";
import type { EventRecorder, ReconcileClient } from "@setpoint/runtime";
import { isNotFound } from "@setpoint/runtime";
import { type Expectations, isPodReady, slowStartBatch } from "../replicaset/index.ts";
import { type BackoffRecord, remainingBackoffMs } from "./backoff.ts";
import { firstPendingIndexes } from "./indexes.ts";
import {
  activePodsForRemoval,
  hasTrackingFinalizer,
  isIndexed,
  JOB_TRACKING_FINALIZER,
  jobPod,
  onlyReplaceFailed,
} from "./pods.ts";
import { type JobSync, requeueWithin } from "./sync-state.ts";

/** Most Pods created or deleted in one sync (Kubernetes' MaxPodCreateDeletePerSync). */
export const MAX_POD_CREATE_DELETE_PER_SYNC = 500;
/** The shortest wait before a sync after a backoff (Kubernetes' syncJobBatchPeriod). */
export const SYNC_BATCH_PERIOD_MS = 1000;

const POD = { apiVersion: "v1", kind: "Pod" } as const;

export interface ManageDeps {
  client: Pick<ReconcileClient, "create" | "delete" | "patch">;
  recorder: EventRecorder;
  expectations: Expectations;
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function namespaceTerminating(e: unknown): boolean {
  return (
    e instanceof StatusError &&
    (e.status.details?.causes ?? []).some((c) => c.reason === "NamespaceTerminating")
  );
}

/** The Pods removed from tracking and deleted, and how many were ready. */
async function deleteJobPods(
  s: JobSync,
  pods: readonly Pod[],
  deps: ManageDeps,
): Promise<{ removed: number; removedReady: number; error: unknown }> {
  const job = s.job;
  let removed = 0;
  let removedReady = 0;
  let error: unknown;
  deps.expectations.expectDeletions(
    s.key,
    pods.map((p) => p.metadata.uid ?? ""),
  );
  await Promise.all(
    pods.map(async (p) => {
      const name = p.metadata.name ?? "";
      try {
        if (hasTrackingFinalizer(p)) {
          await deps.client.patch(
            POD,
            name,
            p.metadata.namespace,
            { metadata: { "$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER] } },
            { type: "strategic" },
          );
        }
        await deps.client.delete(POD, name, p.metadata.namespace);
        deps.recorder.normal(job, "SuccessfulDelete", `Deleted pod: ${name}`);
      } catch (e) {
        deps.expectations.deletionObserved(s.key, p.metadata.uid ?? "");
        if (!isNotFound(e)) {
          deps.recorder.warning(job, "FailedDelete", `Error deleting: ${message(e)}`);
          error ??= e;
          return;
        }
      }
      removed++;
      if (isPodReady(p)) removedReady++;
    }),
  );
  return { removed, removedReady, error };
}

/** The active count after managing, and the first error. */
export async function manageJob(
  s: JobSync,
  backoff: BackoffRecord,
  deps: ManageDeps,
): Promise<{ active: number; error: unknown }> {
  const job: Job = s.job;
  const active = s.activePods.length;
  const parallelism = job.spec?.parallelism ?? 1;

  if (job.spec?.suspend === true) {
    const rm = activePodsForRemoval(job, s.activePods, active);
    const { removed, removedReady, error } = await deleteJobPods(s, rm, deps);
    s.terminating += removed;
    s.ready -= removedReady;
    return { active: active - removed, error };
  }

  const completions = job.spec?.completions;
  let want: number;
  if (completions === undefined || completions === null) {
    want = s.succeeded > 0 ? active : parallelism;
  } else {
    want = Math.max(0, Math.min(completions - s.succeeded, parallelism));
  }

  const rm = activePodsForRemoval(job, s.activePods, Math.max(active - want, 0)).slice(
    0,
    MAX_POD_CREATE_DELETE_PER_SYNC,
  );
  if (rm.length > 0) {
    const { removed, removedReady, error } = await deleteJobPods(s, rm, deps);
    s.terminating += removed;
    s.ready -= removedReady;
    return { active: active - removed, error };
  }

  const held = onlyReplaceFailed(job) ? s.terminating : 0;
  let diff = want - held - active;
  if (diff <= 0) return { active, error: undefined };
  const wait = remainingBackoffMs(backoff, s.now);
  if (wait > 0) {
    requeueWithin(s, Math.max(wait, SYNC_BATCH_PERIOD_MS));
    return { active, error: undefined };
  }
  diff = Math.min(diff, MAX_POD_CREATE_DELETE_PER_SYNC);
  let indexes: number[] = [];
  if (isIndexed(job)) {
    indexes = firstPendingIndexes(s.activePods, s.succeededIndexes, diff, completions ?? 0);
    diff = indexes.length;
    if (diff === 0) return { active, error: undefined };
  }
  deps.expectations.expectCreations(s.key, diff);
  let next = 0;
  let ignored = 0;
  const { successes, errors } = await slowStartBatch(diff, 1, async () => {
    const index = indexes.length > 0 ? (indexes[next++] as number) : -1;
    const pod = jobPod(job, index);
    try {
      const made = await deps.client.create<Pod>(deepClone(pod));
      deps.recorder.normal(job, "SuccessfulCreate", `Created pod: ${made.metadata.name}`);
    } catch (e) {
      deps.expectations.creationObserved(s.key);
      // The namespace is going away: every later create fails the same way.
      if (namespaceTerminating(e)) {
        ignored++;
        return;
      }
      deps.recorder.warning(job, "FailedCreate", `Error creating: ${message(e)}`);
      throw e;
    }
  });
  // Pods not tried because an earlier batch failed will not be seen either.
  for (let i = successes + errors.length; i < diff; i++) deps.expectations.creationObserved(s.key);
  return { active: active + successes - ignored, error: errors[0] };
}
