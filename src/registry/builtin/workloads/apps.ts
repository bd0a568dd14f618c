/**
 * apps/v1 Deployment, ReplicaSet and ControllerRevision: defaults (replicas 1, a
 * Deployment's rolling update of 25% surge and 25% unavailable, history 10,
 * progress deadline 600 s, and the pod template's), status and scale
 * subresources, and the columns of `kubectl get deploy,rs`.
 */
import { formatLabelSelector, type KubeObject, labelSelectorFromMetav1 } from "@setpoint/api";
import type { PrinterColumn, ScaleSubresource } from "../../types.ts";
import { field, fieldObject } from "../build.ts";
import { AGE_COLUMN, count, NONE, selectorCell, templateContainers } from "./columns.ts";
import { workloadDefinition } from "./define.ts";
import { defaultTemplate } from "./pod-defaults.ts";
import { validateDeployment, validateReplicaSet } from "./validation.ts";

type Obj = Record<string, unknown>;

function setIfAbsent(o: Obj, key: string, value: unknown): void {
  if (o[key] === undefined) o[key] = value;
}

function defaultDeployment(obj: KubeObject): void {
  const spec = fieldObject(obj, "spec");
  if (!spec) return;
  setIfAbsent(spec, "replicas", 1);
  const strategy = (spec.strategy ?? {}) as Obj;
  spec.strategy = strategy;
  setIfAbsent(strategy, "type", "RollingUpdate");
  if (strategy.type === "RollingUpdate") {
    const ru = (strategy.rollingUpdate ?? {}) as Obj;
    strategy.rollingUpdate = ru;
    setIfAbsent(ru, "maxUnavailable", "25%");
    setIfAbsent(ru, "maxSurge", "25%");
  }
  setIfAbsent(spec, "revisionHistoryLimit", 10);
  setIfAbsent(spec, "progressDeadlineSeconds", 600);
  defaultTemplate(obj);
}

function defaultReplicaSet(obj: KubeObject): void {
  const spec = fieldObject(obj, "spec");
  if (!spec) return;
  setIfAbsent(spec, "replicas", 1);
  defaultTemplate(obj);
}

/** The scale of a Deployment or ReplicaSet: spec.replicas, status.replicas, spec.selector. */
const replicasScale: ScaleSubresource = {
  specReplicasPath: ".spec.replicas",
  statusReplicasPath: ".status.replicas",
  labelSelector: (obj) => {
    const sel = field(obj, "spec", "selector");
    if (typeof sel !== "object" || sel === null) return undefined;
    try {
      return formatLabelSelector(labelSelectorFromMetav1(sel as never));
    } catch {
      return undefined;
    }
  },
};

/** CONTAINERS, IMAGES and SELECTOR, the wide columns of controllers of pods. */
export function templateWideColumns(): PrinterColumn[] {
  return [
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
      value: (o) => selectorCell(field(o, "spec", "selector")),
    },
  ];
}

export const deploymentDefinition = workloadDefinition({
  group: "apps",
  kind: "Deployment",
  plural: "deployments",
  shortNames: ["deploy"],
  categories: ["all"],
  namespaced: true,
  status: true,
  generation: true,
  scale: replicasScale,
  columns: [
    {
      name: "Ready",
      type: "string",
      priority: 0,
      description: "Ready replicas of the desired.",
      value: (o) => `${count(o, "status", "readyReplicas")}/${count(o, "spec", "replicas")}`,
    },
    {
      name: "Up-to-date",
      type: "integer",
      priority: 0,
      description: "Replicas of the current template.",
      value: (o) => count(o, "status", "updatedReplicas"),
    },
    {
      name: "Available",
      type: "integer",
      priority: 0,
      description: "Available replicas.",
      value: (o) => count(o, "status", "availableReplicas"),
    },
    AGE_COLUMN,
    ...templateWideColumns(),
  ],
  strategy: { default: defaultDeployment, validate: validateDeployment },
});

export const replicaSetDefinition = workloadDefinition({
  group: "apps",
  kind: "ReplicaSet",
  plural: "replicasets",
  shortNames: ["rs"],
  categories: ["all"],
  namespaced: true,
  status: true,
  generation: true,
  scale: replicasScale,
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
    ...templateWideColumns(),
  ],
  strategy: { default: defaultReplicaSet, validate: validateReplicaSet },
});

export const controllerRevisionDefinition = workloadDefinition({
  group: "apps",
  kind: "ControllerRevision",
  plural: "controllerrevisions",
  namespaced: true,
  status: false,
  generation: false,
  columns: [
    {
      name: "Controller",
      type: "string",
      priority: 0,
      description: "The controller that owns the revision.",
      value: (o) => {
        const ref = o.metadata.ownerReferences?.find((r) => r.controller);
        if (!ref) return NONE;
        const group = ref.apiVersion.includes("/") ? ref.apiVersion.split("/")[0] : "";
        return `${ref.kind.toLowerCase()}${group ? `.${group}` : ""}/${ref.name}`;
      },
    },
    {
      name: "Revision",
      type: "integer",
      priority: 0,
      description: "The revision number.",
      value: (o) => count(o, "revision"),
    },
  ],
});
