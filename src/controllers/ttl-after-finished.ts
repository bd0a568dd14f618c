/**
 * The TTL-after-finished controller (`ttl-after-finished`), as Kubernetes'
 * ttlafterfinished controller: a Job with `spec.ttlSecondsAfterFinished` is
 * deleted that many seconds after it finished (the time its Complete or
 * Failed condition turned True), with propagationPolicy Foreground (as
 * Kubernetes deletes it: the Job goes after its Pods) and a UID precondition.
 * Before deleting, it reads the Job again from the API (not the cache): a TTL
 * changed meanwhile is honoured. A Job that finished "in the future" (clock
 * skew) waits.
 */
import type { Job } from "@setpoint/api";
import {
  type Client,
  isNotFound,
  type Manager,
  type ReconcileContext,
  type Request,
  type Result,
} from "@setpoint/runtime";
import type { BuiltinController } from "./builtin-controller.ts";
import { jobFinishedAt } from "./job/index.ts";

/** The controller's name (what `--disable` takes). */
export const TTL_AFTER_FINISHED_CONTROLLER = "ttl-after-finished";
/** Concurrent reconciles (Kubernetes' --concurrent-ttl-after-finished-syncs default). */
export const DEFAULT_TTL_AFTER_FINISHED_WORKERS = 5;

const JOB = { apiVersion: "batch/v1", kind: "Job" } as const;

export interface TtlAfterFinishedOptions {
  workers?: number;
  /** The clock (epoch ms). */
  now?: () => number;
}

/** Milliseconds until the Job's TTL runs out (<= 0: expired); undefined when it has none to run. */
export function ttlRemainingMs(job: Job, now: number): number | undefined {
  const ttl = job.spec?.ttlSecondsAfterFinished;
  if (ttl === undefined || ttl === null || job.metadata.deletionTimestamp) return undefined;
  const finishedAt = jobFinishedAt(job);
  if (finishedAt === undefined) return undefined;
  return finishedAt + ttl * 1000 - now;
}

export class TtlAfterFinishedController implements BuiltinController {
  readonly name = TTL_AFTER_FINISHED_CONTROLLER;
  private readonly now: () => number;

  constructor(private readonly opts: TtlAfterFinishedOptions = {}) {
    this.now = opts.now ?? Date.now;
  }

  setup(mgr: Manager, client: Client = mgr.client): void {
    mgr
      .controller(TTL_AFTER_FINISHED_CONTROLLER)
      .for<Job>(JOB)
      .withOptions({
        client,
        maxConcurrentReconciles: this.opts.workers ?? DEFAULT_TTL_AFTER_FINISHED_WORKERS,
      })
      .complete((req, ctx) => this.reconcile(req, ctx));
  }

  private async reconcile(req: Request, ctx: ReconcileContext): Promise<Result | undefined> {
    let job: Job;
    try {
      job = await ctx.reader.get<Job>(JOB, req.name, req.namespace);
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
    const left = ttlRemainingMs(job, this.now());
    if (left === undefined) return undefined;
    if (left > 0) return { requeueAfter: left };
    // The cached Job may be stale: check the TTL on a fresh read.
    let fresh: Job;
    try {
      fresh = await ctx.client.get<Job>(JOB, req.name, req.namespace);
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
    const freshLeft = ttlRemainingMs(fresh, this.now());
    if (freshLeft === undefined) return undefined;
    if (freshLeft > 0) return { requeueAfter: freshLeft };
    try {
      await ctx.client.delete(JOB, req.name, req.namespace, {
        propagationPolicy: "Foreground",
        preconditions: { uid: fresh.metadata.uid },
      });
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    return undefined;
  }
}
