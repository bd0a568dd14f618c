/**
 * core/v1 Pod: spec and template defaults, DefaultTolerationSeconds, status
 * Pending with its QoS class on create, Kubernetes' graceful deletion, the
 * columns of `kubectl get pods`, and the field selectors the scheduler, the
 * agent and kubectl use.
 */

import { type KubeObject, nowTimestamp } from "@setpoint/api";
import type { DeleteDecision } from "../../types.ts";
import { field, fieldObject, fieldString } from "../build.ts";
import { podBindingSubresource } from "./binding.ts";
import { AGE_COLUMN, NONE } from "./columns.ts";
import { workloadDefinition } from "./define.ts";
import { podEvictionSubresource } from "./eviction.ts";
import {
  podAttachSubresource,
  podExecSubresource,
  podPortForwardSubresource,
} from "./pod-connect.ts";
import { defaultNewPodSpec, defaultPodSpec, qosClass } from "./pod-defaults.ts";
import { podLogSubresource } from "./pod-log.ts";
import { validatePod } from "./validation.ts";

type Obj = Record<string, unknown>;

/** The grace period Kubernetes gives a Pod that names none. */
export const DEFAULT_TERMINATION_GRACE_SECONDS = 30;

function statuses(obj: KubeObject, list = "containerStatuses"): Obj[] {
  const v = field(obj, "status", list);
  return Array.isArray(v) ? (v as Obj[]) : [];
}

function podReady(obj: KubeObject): string {
  const containers = field(obj, "spec", "containers");
  const total = Array.isArray(containers) ? containers.length : 0;
  const ready = statuses(obj).filter((s) => s.ready === true).length;
  return `${ready}/${total}`;
}

function restarts(obj: KubeObject): number {
  return statuses(obj).reduce(
    (n, s) => n + (typeof s.restartCount === "number" ? s.restartCount : 0),
    0,
  );
}

function stateReason(s: Obj): string | undefined {
  const state = (s.state ?? {}) as Obj;
  const waiting = state.waiting as Obj | undefined;
  if (waiting && typeof waiting.reason === "string" && waiting.reason) return waiting.reason;
  const terminated = state.terminated as Obj | undefined;
  if (terminated) {
    if (typeof terminated.reason === "string" && terminated.reason) return terminated.reason;
    if (typeof terminated.signal === "number" && terminated.signal !== 0) {
      return `Signal:${terminated.signal}`;
    }
    return `ExitCode:${terminated.exitCode ?? 0}`;
  }
  return undefined;
}

/** The STATUS column: kubectl's reading of phase, reasons and container states. */
export function podStatusCell(obj: KubeObject): string {
  let reason = fieldString(obj, "status", "reason") || fieldString(obj, "status", "phase");
  const init = statuses(obj, "initContainerStatuses");
  const initSpec = field(obj, "spec", "initContainers");
  const initCount = Array.isArray(initSpec) ? initSpec.length : 0;
  let initializing = false;
  for (let i = 0; i < init.length; i++) {
    const s = init[i];
    const state = (s.state ?? {}) as Obj;
    const terminated = state.terminated as Obj | undefined;
    if (terminated && terminated.exitCode === 0) continue;
    initializing = true;
    const waiting = state.waiting as Obj | undefined;
    if (terminated) reason = `Init:${stateReason(s)}`;
    else if (waiting?.reason && waiting.reason !== "PodInitializing") {
      reason = `Init:${waiting.reason}`;
    } else reason = `Init:${i}/${initCount}`;
    break;
  }
  if (!initializing) {
    let hasRunning = false;
    const cs = statuses(obj);
    for (let i = cs.length - 1; i >= 0; i--) {
      const s = cs[i];
      const r = stateReason(s);
      const state = (s.state ?? {}) as Obj;
      if (r) reason = r;
      else if (state.running && s.ready === true) hasRunning = true;
    }
    if (reason === "Completed" && hasRunning) {
      const ready = (field(obj, "status", "conditions") as Obj[] | undefined)?.some(
        (c) => c.type === "Ready" && c.status === "True",
      );
      reason = ready ? "Running" : "NotReady";
    }
  }
  if (obj.metadata.deletionTimestamp) {
    reason = fieldString(obj, "status", "reason") === "NodeLost" ? "Unknown" : "Terminating";
  }
  return reason;
}

function readinessGates(obj: KubeObject): string {
  const gates = field(obj, "spec", "readinessGates");
  if (!Array.isArray(gates) || gates.length === 0) return NONE;
  const conditions = (field(obj, "status", "conditions") as Obj[] | undefined) ?? [];
  const ready = gates.filter((g) =>
    conditions.some((c) => c.type === (g as Obj).conditionType && c.status === "True"),
  ).length;
  return `${ready}/${gates.length}`;
}

function isTerminal(obj: KubeObject): boolean {
  const phase = fieldString(obj, "status", "phase");
  return phase === "Succeeded" || phase === "Failed";
}

/**
 * Kubernetes' graceful deletion of Pods: a Pod on a node, still running, is
 * marked (deletionTimestamp now + grace, deletionGracePeriodSeconds) and stays
 * until its node removes it with grace 0; a later DELETE may only shorten the
 * grace. An unbound or finished Pod, or grace 0, follows the ordinary rules.
 */
export function decidePodDelete(
  obj: KubeObject,
  finalizers: string[],
  now: Date,
  gracePeriodSeconds?: number,
): DeleteDecision | undefined {
  const own = field(obj, "spec", "terminationGracePeriodSeconds");
  let grace =
    gracePeriodSeconds ?? (typeof own === "number" ? own : DEFAULT_TERMINATION_GRACE_SECONDS);
  if (!fieldString(obj, "spec", "nodeName") || isTerminal(obj)) grace = 0;
  if (grace <= 0) return undefined;
  const meta = obj.metadata;
  if (meta.deletionTimestamp) {
    const current = meta.deletionGracePeriodSeconds;
    if (typeof current === "number" && current <= grace) return { action: "noop" };
  }
  meta.deletionTimestamp = nowTimestamp(new Date(now.getTime() + grace * 1000));
  meta.deletionGracePeriodSeconds = grace;
  if (finalizers.length > 0) meta.finalizers = finalizers;
  else delete meta.finalizers;
  return { action: "update", obj };
}

function preparePodCreate(obj: KubeObject): void {
  const spec = fieldObject(obj, "spec");
  defaultPodSpec(spec);
  defaultNewPodSpec(spec);
  obj.status = { phase: "Pending", qosClass: qosClass(spec) };
}

export const podDefinition = workloadDefinition({
  group: "",
  kind: "Pod",
  plural: "pods",
  shortNames: ["po"],
  categories: ["all"],
  namespaced: true,
  status: true,
  generation: false,
  createSubresources: [podBindingSubresource, podEvictionSubresource],
  nodeStreamSubresources: [podLogSubresource],
  nodeConnectSubresources: [podExecSubresource, podAttachSubresource, podPortForwardSubresource],
  columns: [
    {
      name: "Ready",
      type: "string",
      priority: 0,
      description: "Ready containers of all.",
      value: podReady,
    },
    {
      name: "Status",
      type: "string",
      priority: 0,
      description: "The pod's state as kubectl reads it.",
      value: podStatusCell,
    },
    {
      name: "Restarts",
      type: "string",
      priority: 0,
      description: "Container restarts.",
      value: (o) => String(restarts(o)),
    },
    AGE_COLUMN,
    {
      name: "IP",
      type: "string",
      priority: 1,
      description: "The pod's IP address.",
      value: (o) => fieldString(o, "status", "podIP") || NONE,
    },
    {
      name: "Node",
      type: "string",
      priority: 1,
      description: "The node the pod is bound to.",
      value: (o) => fieldString(o, "spec", "nodeName") || NONE,
    },
    {
      name: "Nominated Node",
      type: "string",
      priority: 1,
      description: "The node nominated by preemption.",
      value: (o) => fieldString(o, "status", "nominatedNodeName") || NONE,
    },
    {
      name: "Readiness Gates",
      type: "string",
      priority: 1,
      description: "Readiness gates met of all.",
      value: readinessGates,
    },
  ],
  strategy: {
    prepareForCreate: preparePodCreate,
    default: (obj) => defaultPodSpec(fieldObject(obj, "spec")),
    decideDelete: decidePodDelete,
    validate: validatePod,
    // A new Pod is bound (pods/binding) moments later, as a rule.
    updatedOnCreate: true,
    selectableFields: {
      "spec.nodeName": (o) => fieldString(o, "spec", "nodeName"),
      "spec.restartPolicy": (o) => fieldString(o, "spec", "restartPolicy"),
      "spec.schedulerName": (o) => fieldString(o, "spec", "schedulerName"),
      "spec.serviceAccountName": (o) => fieldString(o, "spec", "serviceAccountName"),
      "spec.hostNetwork": (o) => String(field(o, "spec", "hostNetwork") === true),
      "status.phase": (o) => fieldString(o, "status", "phase"),
      "status.podIP": (o) => fieldString(o, "status", "podIP"),
      "status.nominatedNodeName": (o) => fieldString(o, "status", "nominatedNodeName"),
    },
  },
});
