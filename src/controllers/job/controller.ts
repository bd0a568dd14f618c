/**
 * The Job controller: runs a Job's Pods to completion, as Kubernetes 1.32's
 * job controller does.
 *
 * Each sync of a Job that has not finished:
 * 1. claims its Pods (controller-ref.ts; adopted orphans get the tracking
 *    finalizer) and counts active (not finished, not being deleted), ready and
 *    terminating ones, and the Pods newly finished since the last count;
 * 2. sets startTime on the first sync while not suspended;
 * 3. decides whether the Job has failed: more failed Pods than backoffLimit
 *    (or, with restartPolicy OnFailure, container restarts reaching it) →
 *    BackoffLimitExceeded; running past activeDeadlineSeconds →
 *    DeadlineExceeded. A failing Job's active Pods are deleted and the interim
 *    FailureTarget condition is written first; Failed follows once no Pod is
 *    terminating or uncounted;
 * 4. otherwise creates or deletes Pods towards min(parallelism, completions -
 *    succeeded) (manage.ts), honouring the Pod failure backoff (backoff.ts)
 *    and suspend; when enough Pods have succeeded, SuccessCriteriaMet and
 *    then Complete (CompletionsReached) with completionTime;
 * 5. counts finished Pods exactly once (tracking.ts).
 *
 * Events from `job-controller`: SuccessfulCreate, FailedCreate,
 * SuccessfulDelete, FailedDelete, Completed "Job completed", a Warning with
 * the failure's reason and message, Suspended, Resumed, TooManySucceededPods.
 * A second loop (`job-orphan-pod`) removes the tracking finalizer from Pods
 * whose Job is gone, finished, or never owned them.
 */
import type { Job, Pod } from "@setpoint/api";
import { deepClone, type LabelSelector, matchesLabels } from "@setpoint/api";
import {
  type Client,
  CONTROLLER_UID_INDEX,
  type EventRecorder,
  type Informer,
  isNotFound,
  type Manager,
  type ReconcileContext,
  Recorder,
  type Request,
  type Result,
  TerminalError,
} from "@setpoint/runtime";
import type { BuiltinController } from "../builtin-controller.ts";
import {
  claimObjects,
  controllerOfKind,
  ORPHAN_INDEX,
  orphanIndex,
  ownersToWake,
  selectorOf,
} from "../controller-ref.ts";
import { Expectations, isPodReady } from "../replicaset/index.ts";
import { BackoffStore } from "./backoff.ts";
import { completionIndex, countIndexes, parseIndexes, withIndexes } from "./indexes.ts";
import { manageJob } from "./manage.ts";
import {
  hasTrackingFinalizer,
  isIndexed,
  isPodActive,
  isPodTerminating,
  JOB_TRACKING_FINALIZER,
} from "./pods.ts";
import {
  ensureCondition,
  findCondition,
  isJobFinished,
  Message,
  newCondition,
  Reason,
  timestamp,
} from "./status.ts";
import type { JobSync } from "./sync-state.ts";
import { FinalizerExpectations, newlyFinished, trackStatus } from "./tracking.ts";

/** The controller's name (what `--disable` takes). */
export const JOB_CONTROLLER = "job";
/** Concurrent syncs (Kubernetes' --concurrent-job-syncs default). */
export const DEFAULT_JOB_WORKERS = 5;
/** The Events' source component, as Kubernetes names it. */
export const JOB_EVENT_SOURCE = "job-controller";
/** spec.managedBy of Jobs this controller syncs (or none). */
export const JOB_CONTROLLER_MANAGED_BY = "kubernetes.io/job-controller";

const JOB = { apiVersion: "batch/v1", kind: "Job" } as const;
const POD = { apiVersion: "v1", kind: "Pod" } as const;

export interface JobControllerOptions {
  workers?: number;
  /** The clock (epoch ms); tests move it. */
  now?: () => number;
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function jobKeyOf(p: Pod): string | undefined {
  const ref = controllerOfKind(p, "batch", "Job");
  return ref ? `${p.metadata.namespace ?? ""}/${ref.name}` : undefined;
}

/** Whether another controller manages the Job (spec.managedBy). */
export function managedElsewhere(job: Job): boolean {
  const by = (job.spec as { managedBy?: string } | undefined)?.managedBy;
  return by !== undefined && by !== JOB_CONTROLLER_MANAGED_BY;
}

/** With restartPolicy OnFailure: whether container restarts of running Pods reach backoffLimit. */
function pastBackoffLimitOnFailure(job: Job, pods: readonly Pod[]): boolean {
  if (job.spec?.template?.spec?.restartPolicy !== "OnFailure") return false;
  let restarts = 0;
  for (const p of pods) {
    if (p.status?.phase !== "Running" && p.status?.phase !== "Pending") continue;
    for (const s of p.status?.initContainerStatuses ?? []) restarts += s.restartCount ?? 0;
    for (const s of p.status?.containerStatuses ?? []) restarts += s.restartCount ?? 0;
  }
  const limit = job.spec?.backoffLimit ?? 6;
  return limit === 0 ? restarts > 0 : restarts >= limit;
}

export class JobController implements BuiltinController {
  readonly name = JOB_CONTROLLER;
  readonly expectations = new Expectations();
  readonly finalizerExpectations = new FinalizerExpectations();
  private readonly backoff = new BackoffStore();
  private readonly now: () => number;
  private pods!: Informer<Pod>;
  private jobs!: Informer<Job>;
  private recorder!: EventRecorder;

  constructor(private readonly opts: JobControllerOptions = {}) {
    this.now = opts.now ?? Date.now;
  }

  setup(mgr: Manager, client: Client = mgr.client): void {
    this.recorder = new Recorder(client, {
      component: JOB_EVENT_SOURCE,
      instance: mgr.identity,
    });
    this.pods = mgr.cache.informerFor<Pod>(POD);
    this.pods.addIndex(ORPHAN_INDEX, orphanIndex);
    this.jobs = mgr.cache.informerFor<Job>(JOB);
    // Lower expectations before the watches below enqueue the Job.
    this.pods.addEventHandler({
      onAdd: (p) => this.observe(p, undefined, false),
      onUpdate: (old, p) => this.observe(p, old, false),
      onDelete: (p) => this.observe(p, undefined, true),
    });
    const workers = this.opts.workers ?? DEFAULT_JOB_WORKERS;
    mgr
      .controller(JOB_CONTROLLER)
      .for(JOB)
      .watches<Pod>(POD, (p) =>
        ownersToWake(p, "Job", (ns) => this.jobs.list({ namespace: ns }), "batch"),
      )
      .withOptions({ client, maxConcurrentReconciles: workers })
      .complete((req, ctx) => this.reconcile(req, ctx));
    const withFinalizer = (p: Pod) => hasTrackingFinalizer(p);
    const done = (j: Job) => isJobFinished(j) || j.metadata.deletionTimestamp !== undefined;
    mgr
      .controller(`${JOB_CONTROLLER}-orphan-pod`)
      .for<Pod>(POD, {
        predicates: [
          { create: withFinalizer, update: (_, p) => withFinalizer(p), delete: () => false },
        ],
      })
      // A Job that finished or went away leaves the Pods it still tracks here.
      .watches<Job>(
        JOB,
        (j) =>
          this.pods
            .byIndex(CONTROLLER_UID_INDEX, j.metadata.uid ?? "")
            .filter(withFinalizer)
            .map((p) => ({ namespace: p.metadata.namespace, name: p.metadata.name ?? "" })),
        { predicates: [{ create: done, update: (_, j) => done(j), generic: done }] },
      )
      .withOptions({ client, maxConcurrentReconciles: 1 })
      .complete((req, ctx) => this.syncOrphanPod(req, ctx));
  }

  private observe(p: Pod, old: Pod | undefined, deleted: boolean): void {
    const k = jobKeyOf(p);
    if (!k) return;
    const uid = p.metadata.uid ?? "";
    if (deleted || !hasTrackingFinalizer(p)) this.finalizerExpectations.observed(k, uid);
    if (deleted || (p.metadata.deletionTimestamp && !old?.metadata.deletionTimestamp)) {
      this.expectations.deletionObserved(k, uid);
    } else if (!old && !p.metadata.deletionTimestamp) {
      this.expectations.creationObserved(k);
    }
  }

  /** Removes the tracking finalizer from a Pod no unfinished Job of ours controls. */
  private async syncOrphanPod(req: Request, ctx: ReconcileContext): Promise<Result | undefined> {
    const pod = this.pods.get(req.name, req.namespace);
    if (!pod || !hasTrackingFinalizer(pod)) return undefined;
    const ref = pod.metadata.ownerReferences?.find((r) => r.controller === true);
    if (ref) {
      // Another kind's Pod: not ours to touch.
      if (ref.kind !== "Job" || ref.apiVersion !== "batch/v1") return undefined;
      const job = this.jobs.get(ref.name, pod.metadata.namespace);
      // An unfinished Job (even one being deleted) counts its own Pods.
      if (job && job.metadata.uid === ref.uid && (managedElsewhere(job) || !isJobFinished(job))) {
        return undefined;
      }
    }
    try {
      await ctx.client.patch(
        POD,
        req.name,
        req.namespace,
        { metadata: { "$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER] } },
        { type: "strategic" },
      );
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    return undefined;
  }

  private async reconcile(req: Request, ctx: ReconcileContext): Promise<Result | undefined> {
    const ns = req.namespace ?? "";
    const key = `${ns}/${req.name}`;
    let cached: Job;
    try {
      cached = await ctx.reader.get<Job>(JOB, req.name, ns);
    } catch (e) {
      if (!isNotFound(e)) throw e;
      this.expectations.delete(key);
      this.finalizerExpectations.delete(key);
      this.backoff.remove(key);
      return undefined;
    }
    if (managedElsewhere(cached)) return undefined;
    if (isJobFinished(cached)) {
      this.backoff.remove(key);
      return undefined;
    }
    const mode = cached.spec?.completionMode;
    if (mode !== undefined && mode !== "NonIndexed" && mode !== "Indexed") {
      this.recorder.warning(
        cached,
        "UnknownCompletionMode",
        "Skipped Job sync because completion mode is unknown",
      );
      return undefined;
    }
    let selector: LabelSelector;
    try {
      selector = selectorOf(cached.spec?.selector);
    } catch (e) {
      throw new TerminalError(`invalid selector: ${message(e)}`, { reason: "InvalidSelector" });
    }
    const job: Job = { ...deepClone(cached), apiVersion: "batch/v1", kind: "Job" };
    job.status ??= {};
    const status = job.status;
    status.uncountedTerminatedPods ??= {};
    const now = this.now();

    // Read before claiming: a Pod seen after this must not satisfy stale counts.
    const satisfied = this.expectations.satisfied(key);
    const { claimed } = await claimObjects<Pod>({
      owner: job,
      type: POD,
      owned: this.pods.byIndex(CONTROLLER_UID_INDEX, job.metadata.uid ?? ""),
      orphans: this.pods.byIndex(ORPHAN_INDEX, ns),
      matches: (p) => matchesLabels(selector, p.metadata.labels),
      client: ctx.client,
      adoptFinalizers: [JOB_TRACKING_FINALIZER],
    });
    const pods = claimed;
    const activePods = pods.filter(isPodActive);
    const s: JobSync = {
      key,
      job,
      pods,
      activePods,
      ready: activePods.filter(isPodReady).length,
      terminating: pods.filter(isPodTerminating).length,
      succeeded: 0,
      failed: 0,
      prevSucceededIndexes: [],
      succeededIndexes: [],
      expectedRmFinalizers: this.finalizerExpectations.get(key),
      now,
      requeueAfterMs: undefined,
    };
    let active = activePods.length;
    const uncounted = status.uncountedTerminatedPods;
    const { succeeded: newSucceeded, failed: newFailed } = newlyFinished(s, uncounted);
    s.succeeded =
      (status.succeeded ?? 0) + newSucceeded.length + (uncounted.succeeded?.length ?? 0);
    s.failed = (status.failed ?? 0) + newFailed.length + (uncounted.failed?.length ?? 0);
    const suspended = job.spec?.suspend === true;
    if (!status.startTime && !suspended) status.startTime = timestamp(now);
    const backoffRecord = this.backoff.next(key, newSucceeded, newFailed);

    let finished = findCondition(status, "SuccessCriteriaMet");
    if (finished?.status !== "True") finished = undefined;
    if (!finished) {
      const target = findCondition(status, "FailureTarget");
      const deadline = job.spec?.activeDeadlineSeconds;
      if (target?.status === "True") {
        finished = newCondition("Failed", "True", target.reason ?? "", target.message ?? "", now);
      } else if (s.failed > (job.spec?.backoffLimit ?? 6) || pastBackoffLimitOnFailure(job, pods)) {
        finished = newCondition(
          "FailureTarget",
          "True",
          Reason.BackoffLimitExceeded,
          Message.BackoffLimitExceeded,
          now,
        );
      } else if (deadline !== undefined && status.startTime && !suspended) {
        const left = Date.parse(status.startTime) + deadline * 1000 - now;
        if (left <= 0) {
          finished = newCondition(
            "FailureTarget",
            "True",
            Reason.DeadlineExceeded,
            Message.DeadlineExceeded,
            now,
          );
        } else {
          s.requeueAfterMs = left;
        }
      }
    }
    if (isIndexed(job)) {
      const completions = job.spec?.completions ?? 0;
      s.prevSucceededIndexes = parseIndexes(status.completedIndexes, completions);
      const fresh = pods
        .filter((p) => p.status?.phase === "Succeeded" && hasTrackingFinalizer(p))
        .map(completionIndex)
        .filter((ix) => ix >= 0 && ix < completions);
      s.succeededIndexes = withIndexes(
        s.prevSucceededIndexes,
        [...new Set(fresh)].sort((a, b) => a - b),
      );
      s.succeeded = countIndexes(s.succeededIndexes);
    }

    let suspendChanged = false;
    let manageError: unknown;
    if (finished) {
      const { deleted, deletedReady, error } = await this.deleteActivePods(job, activePods, ctx);
      // Not finished while Pods remain or creations may be unseen.
      if (deleted !== active || !satisfied) finished = undefined;
      active -= deleted;
      s.terminating += deleted;
      s.ready -= deletedReady;
      manageError = error;
    } else {
      let managed = false;
      if (satisfied && !job.metadata.deletionTimestamp) {
        const r = await manageJob(s, backoffRecord, {
          client: ctx.client,
          recorder: this.recorder,
          expectations: this.expectations,
        });
        active = r.active;
        manageError = r.error;
        managed = true;
      }
      const completions = job.spec?.completions;
      const complete =
        completions === undefined || completions === null
          ? s.succeeded > 0 && active === 0
          : s.succeeded >= completions && active === 0;
      if (complete) {
        finished = newCondition(
          "SuccessCriteriaMet",
          "True",
          Reason.CompletionsReached,
          Message.CompletionsReached,
          now,
        );
      } else if (managed) {
        if (suspended) {
          suspendChanged = ensureCondition(
            status,
            "Suspended",
            "True",
            Reason.Suspended,
            Message.Suspended,
            now,
          );
          if (suspendChanged) this.recorder.normal(job, "Suspended", Message.Suspended);
        } else {
          suspendChanged = ensureCondition(
            status,
            "Suspended",
            "False",
            Reason.Resumed,
            Message.Resumed,
            now,
          );
          if (suspendChanged) {
            this.recorder.normal(job, "Resumed", Message.Resumed);
            // activeDeadlineSeconds counts from the resumption.
            status.startTime = timestamp(now);
          }
        }
      }
    }

    const needsWrite =
      suspendChanged ||
      active !== (cached.status?.active ?? 0) ||
      s.ready !== cached.status?.ready ||
      s.terminating !== cached.status?.terminating ||
      status.startTime !== cached.status?.startTime;
    status.active = active;
    status.ready = s.ready;
    status.terminating = s.terminating;
    s.finished = finished;
    await trackStatus(s, needsWrite, {
      client: ctx.client,
      recorder: this.recorder,
      finalizerExpectations: this.finalizerExpectations,
      onWritten: () => this.backoff.update(key, backoffRecord),
    });
    if (manageError) throw manageError;
    return s.requeueAfterMs === undefined ? undefined : { requeueAfter: s.requeueAfterMs };
  }

  /** Deletes a failing Job's active Pods, keeping their finalizers (they are counted failed). */
  private async deleteActivePods(
    job: Job,
    pods: readonly Pod[],
    ctx: ReconcileContext,
  ): Promise<{ deleted: number; deletedReady: number; error: unknown }> {
    let deleted = 0;
    let deletedReady = 0;
    let error: unknown;
    await Promise.all(
      pods.map(async (p) => {
        try {
          await ctx.client.delete(POD, p.metadata.name ?? "", p.metadata.namespace);
          this.recorder.normal(job, "SuccessfulDelete", `Deleted pod: ${p.metadata.name}`);
        } catch (e) {
          if (!isNotFound(e)) {
            this.recorder.warning(job, "FailedDelete", `Error deleting: ${message(e)}`);
            error ??= e;
            return;
          }
        }
        deleted++;
        if (isPodReady(p)) deletedReady++;
      }),
    );
    return { deleted, deletedReady, error };
  }
}
