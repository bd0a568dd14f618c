/**
 * apps/v1 DaemonSet and StatefulSet, core/v1 ReplicationController, and batch/v1
 * CronJob: stored and served with Kubernetes' defaults, status (and scale, for
 * StatefulSet and ReplicationController) subresources, and the columns of
 * `kubectl get ds,sts,rc,cj`. No control loop acts on them yet; they are served
 * so that manifests and clients that name them (kubectl's default prune list
 * among them) work.
 */
import type { KubeObject } from "@setpoint/api";
import type { ScaleSubresource } from "../../types.ts";
import { field, fieldObject } from "../build.ts";
import { templateWideColumns } from "./apps.ts";
import {
  AGE_COLUMN,
  count,
  humanDuration,
  NONE,
  selectorCell,
  templateContainers,
} from "./columns.ts";
import { workloadDefinition } from "./define.ts";
import { defaultTemplate } from "./pod-defaults.ts";

type Obj = Record<string, unknown>;

function setIfAbsent(o: Obj, key: string, value: unknown): void {
  if (o[key] === undefined) o[key] = value;
}

function sub(o: Obj, key: string): Obj {
  const v = (o[key] ?? {}) as Obj;
  o[key] = v;
  return v;
}

function defaultDaemonSet(obj: KubeObject): void {
  const spec = fieldObject(obj, "spec");
  if (!spec) return;
  const strategy = sub(spec, "updateStrategy");
  setIfAbsent(strategy, "type", "RollingUpdate");
  if (strategy.type === "RollingUpdate") {
    const ru = sub(strategy, "rollingUpdate");
    setIfAbsent(ru, "maxUnavailable", 1);
    setIfAbsent(ru, "maxSurge", 0);
  }
  setIfAbsent(spec, "revisionHistoryLimit", 10);
  defaultTemplate(obj);
}

function defaultStatefulSet(obj: KubeObject): void {
  const spec = fieldObject(obj, "spec");
  if (!spec) return;
  setIfAbsent(spec, "replicas", 1);
  setIfAbsent(spec, "podManagementPolicy", "OrderedReady");
  const strategy = sub(spec, "updateStrategy");
  setIfAbsent(strategy, "type", "RollingUpdate");
  if (strategy.type === "RollingUpdate")
    setIfAbsent(sub(strategy, "rollingUpdate"), "partition", 0);
  setIfAbsent(spec, "revisionHistoryLimit", 10);
  const retention = sub(spec, "persistentVolumeClaimRetentionPolicy");
  setIfAbsent(retention, "whenDeleted", "Retain");
  setIfAbsent(retention, "whenScaled", "Retain");
  defaultTemplate(obj);
}

/** A ReplicationController's selector and labels default to its template's labels. */
function defaultReplicationController(obj: KubeObject): void {
  const spec = fieldObject(obj, "spec");
  if (!spec) return;
  setIfAbsent(spec, "replicas", 1);
  const labels = field(obj, "spec", "template", "metadata", "labels");
  if (labels && typeof labels === "object") {
    if (!spec.selector || Object.keys(spec.selector as Obj).length === 0) {
      spec.selector = { ...(labels as Obj) };
    }
    if (!obj.metadata.labels || Object.keys(obj.metadata.labels).length === 0) {
      obj.metadata.labels = { ...(labels as Record<string, string>) };
    }
  }
  defaultTemplate(obj);
}

function defaultCronJob(obj: KubeObject): void {
  const spec = fieldObject(obj, "spec");
  if (!spec) return;
  setIfAbsent(spec, "concurrencyPolicy", "Allow");
  setIfAbsent(spec, "suspend", false);
  setIfAbsent(spec, "successfulJobsHistoryLimit", 3);
  setIfAbsent(spec, "failedJobsHistoryLimit", 1);
  const jobTemplate = spec.jobTemplate;
  if (jobTemplate && typeof jobTemplate === "object") defaultTemplate(jobTemplate as Obj);
}

const statusReplicasScale = (
  labelSelector: ScaleSubresource["labelSelector"],
): ScaleSubresource => ({
  specReplicasPath: ".spec.replicas",
  statusReplicasPath: ".status.replicas",
  labelSelector,
});

export const daemonSetDefinition = workloadDefinition({
  group: "apps",
  kind: "DaemonSet",
  plural: "daemonsets",
  shortNames: ["ds"],
  categories: ["all"],
  namespaced: true,
  status: true,
  generation: true,
  columns: [
    {
      name: "Desired",
      type: "integer",
      priority: 0,
      description: "Nodes that should run the daemon Pod.",
      value: (o) => count(o, "status", "desiredNumberScheduled"),
    },
    {
      name: "Current",
      type: "integer",
      priority: 0,
      description: "Nodes running the daemon Pod.",
      value: (o) => count(o, "status", "currentNumberScheduled"),
    },
    {
      name: "Ready",
      type: "integer",
      priority: 0,
      description: "Nodes whose daemon Pod is ready.",
      value: (o) => count(o, "status", "numberReady"),
    },
    {
      name: "Up-to-date",
      type: "integer",
      priority: 0,
      description: "Nodes running the current template.",
      value: (o) => count(o, "status", "updatedNumberScheduled"),
    },
    {
      name: "Available",
      type: "integer",
      priority: 0,
      description: "Nodes whose daemon Pod is available.",
      value: (o) => count(o, "status", "numberAvailable"),
    },
    {
      name: "Node Selector",
      type: "string",
      priority: 0,
      description: "The template's node selector.",
      value: (o) => {
        const sel = field(o, "spec", "template", "spec", "nodeSelector");
        if (!sel || typeof sel !== "object") return NONE;
        const text = Object.entries(sel as Record<string, string>)
          .map(([k, v]) => `${k}=${v}`)
          .join(",");
        return text || NONE;
      },
    },
    AGE_COLUMN,
    ...templateWideColumns(),
  ],
  strategy: { default: defaultDaemonSet },
});

export const statefulSetDefinition = workloadDefinition({
  group: "apps",
  kind: "StatefulSet",
  plural: "statefulsets",
  shortNames: ["sts"],
  categories: ["all"],
  namespaced: true,
  status: true,
  generation: true,
  scale: statusReplicasScale((obj) => {
    const s = selectorCell(field(obj, "spec", "selector"));
    return s === NONE ? undefined : s;
  }),
  columns: [
    {
      name: "Ready",
      type: "string",
      priority: 0,
      description: "Ready replicas of the desired.",
      value: (o) => `${count(o, "status", "readyReplicas")}/${count(o, "spec", "replicas")}`,
    },
    AGE_COLUMN,
    {
      name: "Containers",
      type: "string",
      priority: 1,
      description: "Names of the template's containers.",
      value: (o) =>
        templateContainers(o, "spec", "template", "spec")
          .map((c) => c.name)
          .join(",") || NONE,
    },
    {
      name: "Images",
      type: "string",
      priority: 1,
      description: "Images of the template's containers.",
      value: (o) =>
        templateContainers(o, "spec", "template", "spec")
          .map((c) => c.image)
          .join(",") || NONE,
    },
  ],
  strategy: { default: defaultStatefulSet },
});

export const replicationControllerDefinition = workloadDefinition({
  group: "",
  kind: "ReplicationController",
  plural: "replicationcontrollers",
  shortNames: ["rc"],
  categories: ["all"],
  namespaced: true,
  status: true,
  generation: true,
  scale: statusReplicasScale((obj) => {
    const sel = field(obj, "spec", "selector");
    if (!sel || typeof sel !== "object") return undefined;
    return Object.entries(sel as Record<string, string>)
      .map(([k, v]) => `${k}=${v}`)
      .join(",");
  }),
  columns: [
    {
      name: "Desired",
      type: "integer",
      priority: 0,
      description: "Desired replicas.",
      value: (o) => count(o, "spec", "replicas"),
    },
    {
      name: "Current",
      type: "integer",
      priority: 0,
      description: "Replicas that exist.",
      value: (o) => count(o, "status", "replicas"),
    },
    {
      name: "Ready",
      type: "integer",
      priority: 0,
      description: "Ready replicas.",
      value: (o) => count(o, "status", "readyReplicas"),
    },
    AGE_COLUMN,
    {
      name: "Containers",
      type: "string",
      priority: 1,
      description: "Names of the template's containers.",
      value: (o) =>
        templateContainers(o, "spec", "template", "spec")
          .map((c) => c.name)
          .join(",") || NONE,
    },
    {
      name: "Images",
      type: "string",
      priority: 1,
      description: "Images of the template's containers.",
      value: (o) =>
        templateContainers(o, "spec", "template", "spec")
          .map((c) => c.image)
          .join(",") || NONE,
    },
    {
      name: "Selector",
      type: "string",
      priority: 1,
      description: "The label selector of the pods.",
      value: (o) => {
        const sel = field(o, "spec", "selector");
        if (!sel || typeof sel !== "object") return NONE;
        return (
          Object.entries(sel as Record<string, string>)
            .map(([k, v]) => `${k}=${v}`)
            .join(",") || NONE
        );
      },
    },
  ],
  strategy: { default: defaultReplicationController },
});

export const cronJobDefinition = workloadDefinition({
  group: "batch",
  kind: "CronJob",
  plural: "cronjobs",
  shortNames: ["cj"],
  categories: ["all"],
  namespaced: true,
  status: true,
  generation: true,
  columns: [
    {
      name: "Schedule",
      type: "string",
      priority: 0,
      description: "The cron schedule.",
      value: (o) => String(field(o, "spec", "schedule") ?? ""),
    },
    {
      name: "Timezone",
      type: "string",
      priority: 0,
      description: "The time zone of the schedule.",
      value: (o) => String(field(o, "spec", "timeZone") ?? NONE),
    },
    {
      name: "Suspend",
      type: "string",
      priority: 0,
      description: "Whether new Jobs are suspended.",
      value: (o) => {
        const v = field(o, "spec", "suspend");
        return v === undefined ? "<unset>" : v === true ? "True" : "False";
      },
    },
    {
      name: "Active",
      type: "integer",
      priority: 0,
      description: "Jobs running.",
      value: (o) => {
        const a = field(o, "status", "active");
        return Array.isArray(a) ? a.length : 0;
      },
    },
    {
      name: "Last Schedule",
      type: "string",
      priority: 0,
      description: "Time since the last Job was scheduled.",
      value: (o) => {
        const t = field(o, "status", "lastScheduleTime");
        return typeof t === "string" ? humanDuration(Date.now() - Date.parse(t)) : NONE;
      },
    },
    AGE_COLUMN,
    {
      name: "Containers",
      type: "string",
      priority: 1,
      description: "Names of the Job template's containers.",
      value: (o) =>
        templateContainers(o, "spec", "jobTemplate", "spec", "template", "spec")
          .map((c) => c.name)
          .join(",") || NONE,
    },
    {
      name: "Images",
      type: "string",
      priority: 1,
      description: "Images of the Job template's containers.",
      value: (o) =>
        templateContainers(o, "spec", "jobTemplate", "spec", "template", "spec")
          .map((c) => c.image)
          .join(",") || NONE,
    },
    {
      name: "Selector",
      type: "string",
      priority: 1,
      description: "The Job template's selector.",
      value: (o) => selectorCell(field(o, "spec", "jobTemplate", "spec", "selector")),
    },
  ],
  strategy: { default: defaultCronJob },
});
