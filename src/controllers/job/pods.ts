/**
 * What the Job controller reads from and writes to Pods: the tracking
 * finalizer, whether a Pod counts as failed or terminating, the Pod made from
 * a Job's template (with, for an Indexed Job, its completion index as
 * annotation, label, environment variable and hostname), and which active
 * Pods to remove first.
 */
import type { Container, Job, Pod } from "@setpoint/api";
import { deepClone } from "@setpoint/api";
import { isPodActive, podFromTemplate, sortPodsForDeletion } from "../replicaset/index.ts";
import { COMPLETION_INDEX_ANNOTATION, COMPLETION_INDEX_ENV, completionIndex } from "./indexes.ts";

/** The finalizer that keeps a finished Pod until the Job has counted it. */
export const JOB_TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking";
/** Kubernetes' names.MaxGeneratedNameLength: a generateName is cut to this. */
const MAX_GENERATED_NAME_LENGTH = 58;

export function hasTrackingFinalizer(p: Pod): boolean {
  return p.metadata.finalizers?.includes(JOB_TRACKING_FINALIZER) ?? false;
}

export function isIndexed(job: Job): boolean {
  return job.spec?.completionMode === "Indexed";
}

/** Whether only Failed Pods are replaced (podReplacementPolicy Failed, or a pod failure policy). */
export function onlyReplaceFailed(job: Job): boolean {
  return job.spec?.podReplacementPolicy === "Failed" || job.spec?.podFailurePolicy !== undefined;
}

/**
 * Whether a Pod counts as failed: phase Failed, or (unless only Failed Pods
 * are replaced) being deleted without having succeeded.
 */
export function isPodFailed(p: Pod, job: Job): boolean {
  if (p.status?.phase === "Failed") return true;
  if (onlyReplaceFailed(job)) return false;
  return p.metadata.deletionTimestamp !== undefined && p.status?.phase !== "Succeeded";
}

function isTerminal(p: Pod): boolean {
  return p.status?.phase === "Succeeded" || p.status?.phase === "Failed";
}

/** Being deleted and not yet terminal. */
export function isPodTerminating(p: Pod): boolean {
  return p.metadata.deletionTimestamp !== undefined && !isTerminal(p);
}

export { isPodActive };

function withIndexEnv(c: Container): void {
  c.env ??= [];
  if (c.env.some((e) => e.name === COMPLETION_INDEX_ENV)) return;
  c.env.push({
    name: COMPLETION_INDEX_ENV,
    valueFrom: { fieldRef: { fieldPath: `metadata.labels['${COMPLETION_INDEX_ANNOTATION}']` } },
  });
}

/** The Pod's generateName: `<job>-`, or `<job>-<index>-` for an Indexed Job, cut to fit. */
export function podGenerateName(jobName: string, index: number): string {
  if (index < 0) return `${jobName}-`;
  const suffix = `-${index}-`;
  const prefix = jobName + suffix;
  return prefix.length > MAX_GENERATED_NAME_LENGTH
    ? prefix.slice(0, MAX_GENERATED_NAME_LENGTH - suffix.length) + suffix
    : prefix;
}

/**
 * The Pod a Job creates: its template with the tracking finalizer, controlled
 * by the Job; with `index` >= 0, the completion index as annotation, label and
 * JOB_COMPLETION_INDEX in every container, and hostname `<job>-<index>`.
 */
export function jobPod(job: Job, index: number): Pod {
  const name = job.metadata.name ?? "";
  const pod = podFromTemplate(
    job.spec?.template,
    { ...job, apiVersion: "batch/v1", kind: "Job" },
    podGenerateName(name, index),
  );
  const finalizers = pod.metadata.finalizers ?? [];
  if (!finalizers.includes(JOB_TRACKING_FINALIZER)) {
    pod.metadata.finalizers = [...finalizers, JOB_TRACKING_FINALIZER];
  }
  if (index >= 0) {
    const spec = deepClone(pod.spec ?? { containers: [] });
    for (const c of spec.initContainers ?? []) withIndexEnv(c);
    for (const c of spec.containers) withIndexEnv(c);
    spec.hostname = `${name}-${index}`;
    pod.spec = spec;
    pod.metadata.annotations = {
      ...pod.metadata.annotations,
      [COMPLETION_INDEX_ANNOTATION]: String(index),
    };
    pod.metadata.labels = { ...pod.metadata.labels, [COMPLETION_INDEX_ANNOTATION]: String(index) };
  }
  return pod;
}

/**
 * The active Pods to remove, at least `atLeast`: for an Indexed Job first
 * those without a valid index, with an index >= completions, or repeating an
 * index (all but the most useful of each); then the least useful.
 */
export function activePodsForRemoval(job: Job, active: readonly Pod[], atLeast: number): Pod[] {
  const rm: Pod[] = [];
  let left: Pod[] = [...active];
  if (isIndexed(job)) {
    const completions = job.spec?.completions ?? 0;
    const byIndex = new Map<number, Pod[]>();
    left = [];
    for (const p of active) {
      const ix = completionIndex(p);
      if (ix < 0 || ix >= completions) {
        rm.push(p);
        continue;
      }
      const same = byIndex.get(ix) ?? [];
      same.push(p);
      byIndex.set(ix, same);
    }
    for (const ix of [...byIndex.keys()].sort((a, b) => a - b)) {
      const same = sortPodsForDeletion(byIndex.get(ix) as Pod[]);
      rm.push(...same.slice(0, -1));
      left.push(same.at(-1) as Pod);
    }
  }
  if (rm.length < atLeast) rm.push(...sortPodsForDeletion(left).slice(0, atLeast - rm.length));
  return rm;
}
