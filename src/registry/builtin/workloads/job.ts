/**
 * batch/v1 Job: defaults (parallelism, completions, backoffLimit 6,
 * completionMode NonIndexed, suspend false, podReplacementPolicy), the generated
 * selector and pod labels naming the Job's UID, the status subresource, and the
 * columns of `kubectl get jobs`.
 */
import type { KubeObject } from "@setpoint/api";
import { field, fieldObject } from "../build.ts";
import { templateWideColumns } from "./apps.ts";
import { AGE_COLUMN, count, humanDuration } from "./columns.ts";
import { workloadDefinition } from "./define.ts";
import { defaultTemplate } from "./pod-defaults.ts";
import { validateJob } from "./validation.ts";

type Obj = Record<string, unknown>;

export const JOB_CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid";
export const JOB_NAME_LABEL = "batch.kubernetes.io/job-name";
const LEGACY_CONTROLLER_UID_LABEL = "controller-uid";
const LEGACY_JOB_NAME_LABEL = "job-name";

function setIfAbsent(o: Obj, key: string, value: unknown): void {
  if (o[key] === undefined) o[key] = value;
}

function defaultJob(obj: KubeObject): void {
  const spec = fieldObject(obj, "spec");
  if (!spec) return;
  if (spec.completions === undefined && spec.parallelism === undefined) {
    spec.completions = 1;
    spec.parallelism = 1;
  }
  setIfAbsent(spec, "parallelism", 1);
  setIfAbsent(spec, "backoffLimit", 6);
  setIfAbsent(spec, "completionMode", "NonIndexed");
  setIfAbsent(spec, "suspend", false);
  setIfAbsent(
    spec,
    "podReplacementPolicy",
    spec.podFailurePolicy ? "Failed" : "TerminatingOrFailed",
  );
  defaultTemplate(obj);
  const templateLabels = field(obj, "spec", "template", "metadata", "labels");
  if (!obj.metadata.labels && templateLabels && typeof templateLabels === "object") {
    obj.metadata.labels = { ...(templateLabels as Record<string, string>) };
  }
}

/**
 * Kubernetes' generated selector (unless spec.manualSelector): the Job's UID as
 * selector, and the UID and name labels on its pod template.
 */
function prepareJobCreate(obj: KubeObject): void {
  obj.status = {};
  const spec = fieldObject(obj, "spec");
  if (!spec || spec.manualSelector === true) return;
  const uid = obj.metadata.uid ?? "";
  const name = obj.metadata.name ?? "";
  const template = (spec.template ?? {}) as Obj;
  spec.template = template;
  const meta = (template.metadata ?? {}) as Obj;
  template.metadata = meta;
  meta.labels = {
    ...((meta.labels as Record<string, string> | undefined) ?? {}),
    [JOB_CONTROLLER_UID_LABEL]: uid,
    [JOB_NAME_LABEL]: name,
    [LEGACY_CONTROLLER_UID_LABEL]: uid,
    [LEGACY_JOB_NAME_LABEL]: name,
  };
  spec.selector = { matchLabels: { [JOB_CONTROLLER_UID_LABEL]: uid } };
}

function conditionTrue(obj: KubeObject, type: string): boolean {
  const list = field(obj, "status", "conditions");
  return (
    Array.isArray(list) &&
    list.some((c) => (c as Obj).type === type && (c as Obj).status === "True")
  );
}

/** kubectl 1.32's STATUS of a Job. */
export function jobStatusCell(obj: KubeObject): string {
  if (conditionTrue(obj, "Failed")) return "Failed";
  if (conditionTrue(obj, "Complete")) return "Complete";
  if (obj.metadata.deletionTimestamp) return "Terminating";
  if (conditionTrue(obj, "FailureTarget")) return "FailureTarget";
  if (conditionTrue(obj, "SuccessCriteriaMet")) return "SuccessCriteriaMet";
  if (conditionTrue(obj, "Suspended")) return "Suspended";
  return "Running";
}

function completions(obj: KubeObject): string {
  const succeeded = count(obj, "status", "succeeded");
  const c = field(obj, "spec", "completions");
  if (typeof c === "number") return `${succeeded}/${c}`;
  const parallelism = count(obj, "spec", "parallelism");
  return parallelism > 1 ? `${succeeded}/1 of ${parallelism}` : `${succeeded}/1`;
}

function duration(obj: KubeObject): string {
  const start = field(obj, "status", "startTime");
  if (typeof start !== "string") return "";
  const end = field(obj, "status", "completionTime");
  const until = typeof end === "string" ? Date.parse(end) : Date.now();
  return humanDuration(until - Date.parse(start));
}

export const jobDefinition = workloadDefinition({
  group: "batch",
  kind: "Job",
  plural: "jobs",
  categories: ["all"],
  namespaced: true,
  status: true,
  generation: true,
  columns: [
    {
      name: "Status",
      type: "string",
      priority: 0,
      description: "The job's state.",
      value: jobStatusCell,
    },
    {
      name: "Completions",
      type: "string",
      priority: 0,
      description: "Succeeded pods of the desired completions.",
      value: completions,
    },
    {
      name: "Duration",
      type: "string",
      priority: 0,
      description: "How long the job ran.",
      value: duration,
    },
    AGE_COLUMN,
    ...templateWideColumns(),
  ],
  strategy: { default: defaultJob, prepareForCreate: prepareJobCreate, validate: validateJob },
});
